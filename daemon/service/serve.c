// SPDX-License-Identifier: BSD-2-Clause
/*
 * The event service (mercuryd serve; its command line is daemon/cli/serve_cmd.c). Frameworks
 * (through libmercury) send training-step events over a SOCK_SEQPACKET Unix socket; sockets arrive
 * as SCM_RIGHTS, are checked, used for one map update and closed at once (a kept fd would hold the
 * connection open after the application closed it). Bad frames are answered with their own error
 * and the service keeps serving. SIGTERM/SIGINT end it cleanly; the data path stays attached
 * (pins).
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <systemd/sd-daemon.h>

#include "log.h"
#include "event_service.h"
#include "loader/iface_pins.h"
#include "map_sync.h"
#include "metrics.h"
#include "loader/pins.h"
#include "loader/share_sync.h"
#include "serve.h"

#define SERVE_MAX_CLIENTS 256

struct client {
	int fd;
	struct ucred cred;
	uint64_t id;
	uint64_t jobs_mask; /* bit i: declared the i-th job of service.job_ids */
};

struct service {
	const char *pin_root;
	struct event_state ev;
	struct client clients[SERVE_MAX_CLIENTS];
	int listen_fd, epoll_fd, signal_fd;
	gid_t group;
	bool have_group;
	bool bound; /* the socket file is ours to remove at exit */
	uint64_t next_id;
	struct pinned_map maps[GM_COUNT]; /* the shared maps, by enum global_map */
	char maps_note[256];		  /* last problem logged, to log each once */
	struct service_metrics metrics;
	uint32_t share_weight[MERCURY_SHARE_SLOTS]; /* what the share classes were set for */
	bool share_synced;			    /* ... at least once */
	const char *metrics_dir;		    /* --metrics-textfile */
	int metrics_fd;				    /* timerfd of the periodic write; -1 without */
};

/* Before each frame that touches a map (a socket's tags or stats, a job's state): the maps
 * written are the pinned ones the classifier reads. One stat() when nothing changed: the
 * shared maps are pinned and unpinned together (pins_global_maps,
 * fastpath_release_unused), so the others are looked at when the tag map's pin moved or
 * failed. Maps switched for new ones get the current job state. */
static void sync_maps(struct service *s)
{
	uint32_t jobs_id = s->maps[GM_JOBS].id;
	ino_t tags_ino = s->maps[GM_SOCK_TAGS].ino;
	char note[256];
	int r = 0;

	for (int i = 0; i < GM_COUNT && r == 0; i++) {
		if (i == 1 && !s->ev.maps_error && s->maps[GM_SOCK_TAGS].ino == tags_ino)
			break;
		r = pinned_map_sync(s->pin_root, &s->maps[i], note, sizeof(note));
		if (note[0] && strcmp(note, s->maps_note))
			log_error("%s%s", note,
				  r ? "; requests that touch it fail until fixed" : "");
		snprintf(s->maps_note, sizeof(s->maps_note), "%s", r ? note : "");
	}
	s->ev.tags_fd = s->maps[GM_SOCK_TAGS].fd;
	s->ev.stats_fd = s->maps[GM_SOCK_STATS].fd;
	s->ev.jobs_fd = s->maps[GM_JOBS].fd;
	s->ev.job_ids_fd = s->maps[GM_JOB_IDS].fd;
	s->ev.maps_error = r ? -ESTALE : 0;
	if (!r && s->maps[GM_JOBS].id != jobs_id)
		event_publish_all(&s->ev);
}

/* Job events write the job state, tags and stats a socket's storage; REGISTER reads only
 * the socket. A frame too short to say is rejected by the decoder without touching a map. */
static bool frame_touches_maps(const void *frame, size_t n)
{
	struct mw_hdr h;

	if (n < sizeof(h))
		return false;
	memcpy(&h, frame, sizeof(h));
	return h.type != MW_REGISTER;
}

/* Root, or the group among the peer's groups as they were at connect() (SO_PEERGROUPS: the
 * process's real supplementary groups, not the user database's). */
static bool peer_allowed(const struct service *s, int fd, const struct ucred *cr)
{
	gid_t stack_groups[256], *groups = stack_groups;
	socklen_t len = sizeof(stack_groups);
	bool ok = false;
	int r;

	if (cr->uid == 0 || (s->have_group && cr->gid == s->group))
		return true;
	if (!s->have_group)
		return false;
	r = getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len);
	if (r && errno == ERANGE) { /* len now says how much is needed */
		groups = malloc(len);
		r = groups ? getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) : -1;
	}
	for (size_t i = 0; r == 0 && !ok && i < len / sizeof(gid_t); i++)
		ok = groups[i] == s->group;
	if (groups != stack_groups)
		free(groups);
	return ok;
}

/* Job policy share: when a job in a share slot came, went or changed weight, every such
 * interface's per-job classes get the new assured rates. */
static void sync_shares(struct service *s)
{
	uint32_t w[MERCURY_SHARE_SLOTS];
	struct timespec t0, t1;
	char err[384];
	double ms;
	int r;

	event_share_weights(&s->ev, w);
	if (s->share_synced && memcmp(w, s->share_weight, sizeof(w)) == 0)
		return;
	memcpy(s->share_weight, w, sizeof(w));
	s->share_synced = true;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = share_sync_all(s->pin_root, w, err, sizeof(err));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (r < 0)
		log_error("job policy share: cannot set the job classes' rates: %s", err);
	else if (r > 0)
		log_info("job policy share: weights %u %u %u %u on %d interface(s) in %.1f ms",
			 w[0], w[1], w[2], w[3], r, ms);
}

static void drop_client(struct service *s, struct client *c)
{
	event_client_gone(&s->ev, c->jobs_mask);
	sync_shares(s);
	epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
}

static void accept_client(struct service *s)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct client *c = NULL;

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || !peer_allowed(s, fd, &cr)) {
		log_error("refused client pid %d uid %d: not root or in group mercury", (int)cr.pid,
			  (int)cr.uid);
		close(fd);
		return;
	}
	for (int i = 0; i < SERVE_MAX_CLIENTS && !c; i++)
		if (s->clients[i].fd < 0)
			c = &s->clients[i];
	if (!c) {
		log_error("refused client pid %d: %d clients already", (int)cr.pid,
			  SERVE_MAX_CLIENTS);
		close(fd);
		return;
	}
	*c = (struct client){.fd = fd, .cred = cr, .id = ++s->next_id};
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		c->fd = -1;
	}
}

/* One frame from a client: receive, handle, reply, close any fd that came with it. */
static void client_readable(struct service *s, struct client *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	uint8_t frame[MW_MAX_FRAME + 1];
	struct iovec iov = {.iov_base = frame, .iov_len = sizeof(frame)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf)};
	int fds[4], nfds = 0;
	struct mw_reply reply;
	ssize_t n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		drop_client(s, c);
		return;
	}
	if (n < 0)
		return;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		for (int i = 0; i < k && nfds < 4; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (frame_touches_maps(frame, (size_t)n))
		sync_maps(s);
	event_handle(&s->ev, c->id, &c->cred, &c->jobs_mask, frame, (size_t)n,
		     (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0, fds, nfds, &reply);
	sync_shares(s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	service_metrics_observe(&s->metrics, reply.status,
				(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (int i = 0; i < nfds; i++)
		close(fds[i]); /* never keep a client's socket */
	if (send(c->fd, &reply, sizeof(reply), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		drop_client(s, c);
}

/* The service's figures as of now, then the whole textfile. */
static void write_metrics(struct service *s)
{
	struct service_metrics *m = &s->metrics;
	char err[512];
	uint64_t expirations;

	if (s->metrics_fd >= 0 && read(s->metrics_fd, &expirations, sizeof(expirations)) < 0 &&
	    errno != EAGAIN)
		return;
	m->clients = 0;
	for (int i = 0; i < SERVE_MAX_CLIENTS; i++)
		m->clients += s->clients[i].fd >= 0;
	m->jobs = 0;
	for (unsigned i = 0; i < s->ev.policy.njobs && i < 64; i++) {
		const struct policy_job *j = &s->ev.policy.jobs[i];

		m->job[m->jobs].uid = s->ev.slots[j->job].uid;
		m->job[m->jobs].job = s->ev.slots[j->job].job;
		m->job[m->jobs].open = j->win.has_open;
		m->job[m->jobs].oldest_open = j->win.oldest_open;
		m->jobs++;
	}
	if (metrics_write_textfile(s->metrics_dir, s->pin_root, m, err, sizeof(err)))
		log_error("metrics: %s", err);
}

/* A live daemon answers connect(); a stale socket file of a killed one refuses it. */
static bool someone_listens(const struct sockaddr_un *addr)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return false;
	live = connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) == 0;
	close(fd);
	return live;
}

/* The socket path fits a sockaddr_un and its directory exists (made if missing). 0, or a
 * negative errno with err set. */
static int socket_dir_ready(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX], *slash;

	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int open_listener(struct service *s, const char *path, const char *group, char *err,
			 size_t errlen)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct group *gr;
	int r;

	/* The socket's directory is made ready by serve() before the maps are opened. */
	gr = getgrnam(group);
	if (gr) {
		s->group = gr->gr_gid;
		s->have_group = true;
	} else {
		log_warn("group '%s' does not exist (make deps creates it): only root can connect",
			 group);
	}
	strcpy(addr.sun_path, path);
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0)
		return -errno;
	if (someone_listens(&addr)) {
		snprintf(err, errlen,
			 "another mercuryd serve is listening on %s; stop it first, or give "
			 "--socket another path",
			 path);
		return -EADDRINUSE;
	}
	unlink(path); /* a stale socket of a killed daemon */
	s->bound = bind(s->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
	if (!s->bound || (s->have_group && chown(path, 0, s->group)) || chmod(path, 0660) ||
	    listen(s->listen_fd, SOMAXCONN)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(-r));
		return r;
	}
	return 0;
}

static int serve_loop(struct service *s)
{
	struct epoll_event evs[32];

	for (;;) {
		int n = epoll_wait(s->epoll_fd, evs, 32, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int i = 0; i < n; i++) {
			if (evs[i].data.ptr == &s->listen_fd) {
				accept_client(s);
			} else if (evs[i].data.ptr == &s->metrics_fd) {
				write_metrics(s);
			} else if (evs[i].data.ptr == &s->signal_fd) {
				struct signalfd_siginfo si;

				if (read(s->signal_fd, &si, sizeof(si)) == sizeof(si))
					log_info("signal %u, exiting", si.ssi_signo);
				return 0;
			} else {
				client_readable(s, evs[i].data.ptr);
			}
		}
	}
}

/* The shared maps, reused from their pins or created, and the job state an earlier daemon
 * left in them. 0, or -1 with err set (nothing left open). */
static int open_maps(struct service *s, char *err, size_t errlen)
{
	int fds[GM_COUNT], lock, r;

	/* Under the pin lock: a detach of the last interface removes the pins and the root. */
	if ((lock = pins_prepare_lock(s->pin_root, err, errlen)) < 0)
		return -1;
	r = pins_global_maps(s->pin_root, fds, err, errlen);
	close(lock);
	if (r)
		return -1;
	for (int i = 0; i < GM_COUNT; i++) {
		s->maps[i] = (struct pinned_map){.name = global_maps[i].name,
						 .type = global_maps[i].type,
						 .value_size = global_maps[i].value_size,
						 .fd = -1};
		if ((r = pinned_map_track(s->pin_root, &s->maps[i], fds[i]))) {
			snprintf(err, errlen, "cannot inspect the shared maps: %s", strerror(-r));
			pins_close_globals(fds);
			for (int j = 0; j <= i; j++)
				s->maps[j].fd = -1; /* closed just above */
			return -1;
		}
	}
	s->ev.tags_fd = fds[GM_SOCK_TAGS];
	s->ev.stats_fd = fds[GM_SOCK_STATS];
	s->ev.jobs_fd = fds[GM_JOBS];
	s->ev.job_ids_fd = fds[GM_JOB_IDS];
	policy_init(&s->ev.policy, 8);
	if ((r = event_adopt_jobs(&s->ev)) > 0)
		log_info("%d job(s) of an earlier daemon kept until their clients declare them "
			 "again",
			 r);
	return 0;
}

/* SIGTERM/SIGINT as a signalfd, the epoll set, the listener and the metrics timer. 0, or -1
 * (err set when there is more to say than that it failed). */
static int start(struct service *s, const struct serve_config *cfg, char *err, size_t errlen)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->signal_fd < 0 || s->epoll_fd < 0 ||
	    open_listener(s, cfg->socket_path, cfg->group, err, errlen))
		return -1;
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &s->listen_fd};
	struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &s->signal_fd};
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &lev);
	epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->signal_fd, &sev);
	if (s->metrics_dir) {
		struct itimerspec its = {.it_interval.tv_sec = cfg->metrics_interval_s,
					 .it_value.tv_nsec = 1};
		struct epoll_event mev = {.events = EPOLLIN, .data.ptr = &s->metrics_fd};

		s->metrics_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (s->metrics_fd < 0 || timerfd_settime(s->metrics_fd, 0, &its, NULL) ||
		    epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->metrics_fd, &mev)) {
			snprintf(err, errlen, "cannot start the metrics timer: %s",
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void stop(struct service *s, const char *path)
{
	for (int i = 0; i < SERVE_MAX_CLIENTS; i++)
		if (s->clients[i].fd >= 0)
			close(s->clients[i].fd);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->bound)
		unlink(path);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	if (s->signal_fd >= 0)
		close(s->signal_fd);
	if (s->metrics_fd >= 0)
		close(s->metrics_fd);
	for (int i = 0; i < GM_COUNT; i++)
		if (s->maps[i].fd >= 0)
			close(s->maps[i].fd);
}

int serve_run(const struct serve_config *cfg, char *err, size_t errlen)
{
	static struct service s; /* large: keep it off the stack */
	int r;

	err[0] = '\0';
	memset(&s, 0, sizeof(s));
	s.pin_root = cfg->pin_root;
	s.metrics_dir = cfg->metrics_dir;
	s.listen_fd = s.epoll_fd = s.signal_fd = s.metrics_fd = -1;
	for (int i = 0; i < SERVE_MAX_CLIENTS; i++)
		s.clients[i].fd = -1;
	for (int i = 0; i < GM_COUNT; i++)
		s.maps[i].fd = -1;
	/* The socket's directory first: a path that cannot be served leaves no pins behind. The
	 * listener itself comes after the maps, so that a client never finds the socket before
	 * the daemon can answer it. */
	if (socket_dir_ready(cfg->socket_path, err, errlen) || open_maps(&s, err, errlen) ||
	    start(&s, cfg, err, errlen)) {
		stop(&s, cfg->socket_path);
		return -1;
	}
	sync_shares(&s);
	log_info("serving events on %s (job state in %s/jobs; each interface's classifier lays "
		 "levels out for its own bands)",
		 cfg->socket_path, cfg->pin_root);
	sd_notify(0, "READY=1");
	r = serve_loop(&s);
	sd_notify(0, "STOPPING=1");
	if (s.metrics_dir)
		write_metrics(&s); /* the last figures, not the ones of up to an interval ago */
	stop(&s, cfg->socket_path);
	return r ? -1 : 0;
}
