// SPDX-License-Identifier: BSD-2-Clause
/* libmercury: framing, fd passing and one request at a time per client. */
#include <endian.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "iter_window.h"
#include "mercury.h"
#include "mercury_abi.h"
#include "mercury_wire.h"

#define API __attribute__((visibility("default")))

#define MAX_JOBS	     64 /* the daemon's own limit */
#define DEFAULT_RECONNECT_MS 3000
#define RECONNECT_POLL_MS    20
/* While the daemon is gone: how often the client's reconnect thread looks for it. */
#define RETRY_MS 100
/* A daemon that does not answer a request within this long is taken for gone (a stopped or
 * wedged mercuryd must not hold the caller, and every thread queued behind it, forever). */
#define REPLY_TIMEOUT_MS 2000
/* A daemon that accepted a reconnect answers the replay within this long or is not used. */
#define REPLAY_TIMEOUT_MS   250
#define FASTPATH_RECHECK_NS 1000000000ll /* after ENOPROTOOPT: look again in a second */

/* What this client told the daemon, replayed to a restarted one before the next call. */
struct job_record {
	uint32_t job, n_layers, weight;
	struct iter_window win;
};

/*
 * Locks: `lock` owns the connection (fd, seq: one round trip at a time); `state` owns the
 * record of jobs and the down state, and is only ever held for a few instructions, so a
 * call that finds the daemon gone never waits behind a round trip or a reconnect.
 *
 * A daemon found gone is remembered (down): calls fail at once with down_err, iteration
 * events are still recorded, and the client's reconnect thread looks for a daemon every
 * RETRY_MS, replays the record to it and only then clears down. The data path (tags,
 * iteration events) never waits for a daemon; the other calls wait for one until
 * reconnect_ms after the loss.
 */
struct mercury_client {
	int fd; /* -1 while no daemon is connected */
	uint32_t seq;
	pthread_mutex_t lock;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int reconnect_ms;
	pthread_mutex_t state;
	pthread_cond_t wake; /* the reconnect thread: down set, or stop */
	pthread_t reconnector;
	bool reconnector_running;    /* false in a forked child until its first call */
	struct mercury_client *next; /* the list of clients, for fork() */
	bool stop;
	bool down;	      /* also read without `state` (atomic, relaxed) */
	int down_err;	      /* what calls return while down */
	long long down_since; /* ns, CLOCK_MONOTONIC */
	uint64_t gen;	      /* bumped by every change to the record */
	struct job_record jobs[MAX_JOBS];
	unsigned njobs;
	/* The tag fast path: enabled by the user (MERCURY_FASTPATH=0 or mercury_use_fastpath
	 * turn it off), and until when it is known to be absent for this process (ns,
	 * CLOCK_MONOTONIC_COARSE; 0: try it). Read without the lock: a stale value costs one
	 * extra try or one extra round trip. */
	int fast_enabled;
	long long fast_absent_until;
	uint64_t tags_fast, tags_service; /* successful tags by path (atomic, relaxed) */
};

_Static_assert(MERCURY_MAX_BATCH == MW_MAX_BATCH, "batch limits differ");

/* Never blocks: -EAGAIN when the listener's backlog is full (a busy daemon, or a socket file
 * nobody serves). */
static int connect_unix_once(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd, r;

	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		r = -errno;
		close(fd);
		return r;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* Retries a full backlog until wait_ms has passed, then calls it -ECONNREFUSED. */
static int connect_unix(const char *path, int wait_ms)
{
	struct timespec ts = {.tv_nsec = 1000000L};
	int fd;

	for (int waited = 0;; waited++) {
		fd = connect_unix_once(path);
		if (fd != -EAGAIN)
			return fd;
		if (waited >= wait_ms)
			return -ECONNREFUSED;
		nanosleep(&ts, NULL);
	}
}

static void *reconnector(void *arg);

static void init_wake(struct mercury_client *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_condattr_destroy(&ca);
}

/* The reconnect thread, unless it runs already (c->state held). */
static int start_reconnector(struct mercury_client *c)
{
	int r;

	if (c->reconnector_running)
		return 0;
	r = -pthread_create(&c->reconnector, NULL, reconnector, c);
	if (r == 0) {
		pthread_setname_np(c->reconnector, "mercury-reconn");
		c->reconnector_running = true;
	}
	return r;
}

/*
 * fork(): a child must neither share its parent's connection (their replies would
 * interleave) nor wait on a lock that a thread of the parent held at the fork. So every client
 * is on a list whose locks are taken around fork() (in the order the calls take them: lock,
 * then state) and released on both sides; in the child each client drops the inherited
 * connection and counts as down, and its reconnect thread (threads do not survive a fork)
 * starts at the child's first call: a child that never calls (a data-loader worker) never
 * connects, one that does gets its own connection and replays the jobs to it.
 */
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mercury_client *clients;
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&clients_lock);
	for (struct mercury_client *c = clients; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		pthread_mutex_lock(&c->state);
	}
}

static void fork_parent(void)
{
	for (struct mercury_client *c = clients; c; c = c->next) {
		pthread_mutex_unlock(&c->state);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&clients_lock);
}

static long long now_ns(void);

static void fork_child(void)
{
	for (struct mercury_client *c = clients; c; c = c->next) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		c->reconnector_running = false;
		if (!c->down)
			c->down_since = now_ns();
		c->down = true;
		c->down_err = -ECONNREFUSED;
		init_wake(c); /* the parent's reconnect thread may have been waiting on it */
		pthread_mutex_unlock(&c->state);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&clients_lock);
}

static void register_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void set_timeouts(int fd, int ms)
{
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

API int mercury_connect(const char *path, struct mercury_client **out)
{
	struct mercury_client *c;
	const char *env = getenv("MERCURY_RECONNECT_MS");

	if (!out)
		return -EINVAL;
	if (!path)
		path = getenv("MERCURY_SOCKET");
	if (!path)
		path = MERCURY_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(c->path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	strcpy(c->path, path);
	c->reconnect_ms = env ? atoi(env) : DEFAULT_RECONNECT_MS;
	env = getenv("MERCURY_FASTPATH");
	c->fast_enabled = !env || strcmp(env, "0") != 0;
	c->fd = connect_unix(path, c->reconnect_ms);
	if (c->fd < 0) {
		int r = c->fd;

		free(c);
		return r;
	}
	set_timeouts(c->fd, REPLY_TIMEOUT_MS);
	int r;

	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->state, NULL);
	init_wake(c);
	pthread_once(&fork_handlers_once, register_fork_handlers);
	pthread_mutex_lock(&clients_lock);
	r = start_reconnector(c);
	if (r == 0) {
		c->next = clients;
		clients = c;
	}
	pthread_mutex_unlock(&clients_lock);
	if (r) {
		close(c->fd);
		pthread_cond_destroy(&c->wake);
		pthread_mutex_destroy(&c->state);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return r;
	}
	*out = c;
	return 0;
}

API void mercury_disconnect(struct mercury_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&clients_lock);
	for (struct mercury_client **p = &clients; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&clients_lock);
	pthread_mutex_lock(&c->state);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	bool running = c->reconnector_running;
	pthread_mutex_unlock(&c->state);
	if (running)
		pthread_join(c->reconnector, NULL);
	if (c->fd >= 0)
		close(c->fd);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->state);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

API void mercury_set_reconnect_timeout(struct mercury_client *c, int ms)
{
	if (c)
		c->reconnect_ms = ms < 0 ? 0 : ms;
}

static void hdr_init(struct mw_hdr *h, uint16_t type, size_t len)
{
	h->len = htole32((uint32_t)len);
	h->version = htole16(MW_VERSION);
	h->type = htole16(type);
	h->reserved = 0;
}

/* The daemon is gone: the socket was closed under us. */
static bool daemon_gone(int r)
{
	return r == -EPIPE || r == -ECONNRESET || r == -ENOTCONN || r == -ECONNREFUSED;
}

/* One round trip on c->fd (c->lock held): the frame (with sock_fd as SCM_RIGHTS if >= 0)
 * and its reply. Returns 0 with the daemon's answer in *status, or a transport error (the
 * daemon's own answers are never taken for a lost connection). */
static int transport(struct mercury_client *c, void *frame, size_t len, int sock_fd,
		     struct mw_reply *reply, int *status)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = frame, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct mw_hdr *h = frame;
	ssize_t n;

	if (c->fd < 0)
		return -ENOTCONN;
	if (sock_fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &sock_fd, sizeof(int));
	}
	h->seq = htole32(++c->seq);
	do
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	do
		n = recv(c->fd, reply, sizeof(*reply), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET; /* the daemon went away */
	if ((size_t)n != sizeof(*reply) || le32toh(reply->h.seq) != c->seq)
		return -EPROTO;
	*status = (int32_t)le32toh((uint32_t)reply->status);
	return 0;
}

/* transport() folded into one result: the daemon's status, or the transport error. */
static int round_trip(struct mercury_client *c, void *frame, size_t len, int sock_fd,
		      struct mw_reply *reply, bool *lost)
{
	int status = 0, r = transport(c, frame, len, sock_fd, reply, &status);

	*lost = daemon_gone(r) || r == -EAGAIN;
	return r ? r : status;
}

static void hdr_init(struct mw_hdr *h, uint16_t type, size_t len);

/* Tells a new daemon what the old one knew from this client: its jobs and open iterations
 * (a copy of the record, taken under `state`). */
static int replay(struct mercury_client *c, const struct job_record *jobs, unsigned njobs,
		  bool *lost)
{
	struct mw_reply reply;

	for (unsigned i = 0; i < njobs; i++) {
		const struct job_record *j = &jobs[i];
		struct mw_job_declare d = {.job = htole32(j->job),
					   .n_layers = htole32(j->n_layers),
					   .weight = htole32(j->weight)};
		struct mw_iter it = {.job = htole32(j->job)};
		int r;

		hdr_init(&d.h, MW_JOB_DECLARE, sizeof(d));
		if ((r = round_trip(c, &d, sizeof(d), -1, &reply, lost)))
			return r;
		if (!j->win.has_open)
			continue;
		hdr_init(&it.h, MW_ITER_BEGIN, sizeof(it));
		it.iteration = htole64(j->win.oldest_open);
		if ((r = round_trip(c, &it, sizeof(it), -1, &reply, lost)))
			return r;
		for (unsigned d = 1; d < 64; d++) { /* iterations ended ahead of the oldest */
			if (!(j->win.ended_mask & (1ull << d)))
				continue;
			hdr_init(&it.h, MW_ITER_END, sizeof(it));
			it.iteration = htole64(j->win.oldest_open + d);
			if ((r = round_trip(c, &it, sizeof(it), -1, &reply, lost)))
				return r;
		}
	}
	return 0;
}

/* The daemon is gone with err as the reason (c->state held). */
static void mark_down(struct mercury_client *c, int err)
{
	if (!c->down) {
		c->down_since = now_ns();
		__atomic_store_n(&c->down, true, __ATOMIC_RELEASE);
		pthread_cond_signal(&c->wake);
	}
	c->down_err = err;
}

/*
 * One try (c->lock held): connect without waiting, replay the record, and, if the record did
 * not change meanwhile (else replay again), clear down. A socket file with nobody serving it
 * (a listener that does not accept or answer) counts as no daemon. The error when none came
 * names the daemon (mercury_strerror); down is set then.
 */
static int reconnect_once(struct mercury_client *c)
{
	struct job_record jobs[MAX_JOBS];
	unsigned njobs;
	uint64_t gen;
	bool lost = false;
	int r;

	if (c->fd >= 0)
		close(c->fd);
	c->fd = connect_unix(c->path, 0);
	if (c->fd < 0) {
		r = c->fd == -ENOENT ? -ENOENT : -ECONNREFUSED; /* -EAGAIN: nobody accepts */
		goto down;
	}
	set_timeouts(c->fd, REPLAY_TIMEOUT_MS);
	for (int tries = 0; tries < 8; tries++) {
		pthread_mutex_lock(&c->state);
		njobs = c->njobs;
		memcpy(jobs, c->jobs, njobs * sizeof(jobs[0]));
		gen = c->gen;
		pthread_mutex_unlock(&c->state);
		r = replay(c, jobs, njobs, &lost);
		if (r)
			break;
		pthread_mutex_lock(&c->state);
		if (c->gen == gen) {
			__atomic_store_n(&c->down, false, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&c->state);
			set_timeouts(c->fd, REPLY_TIMEOUT_MS);
			return 0;
		}
		pthread_mutex_unlock(&c->state); /* events recorded meanwhile: tell them too */
	}
	close(c->fd);
	c->fd = -1;
	if (r == 0 || lost)
		r = -ECONNREFUSED; /* else the new daemon refused the replay: say why */
down:
	pthread_mutex_lock(&c->state);
	mark_down(c, r);
	pthread_mutex_unlock(&c->state);
	return r;
}

/* While the daemon is gone, a try every RETRY_MS, off the callers' path. */
static void *reconnector(void *arg)
{
	struct mercury_client *c = arg;

	pthread_mutex_lock(&c->state);
	while (!c->stop) {
		struct timespec ts;

		if (!c->down) {
			pthread_cond_wait(&c->wake, &c->state);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += RETRY_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!c->stop && pthread_cond_timedwait(&c->wake, &c->state, &ts) != ETIMEDOUT)
			;
		if (c->stop || !c->down)
			continue;
		pthread_mutex_unlock(&c->state);
		pthread_mutex_lock(&c->lock);
		if (__atomic_load_n(&c->down, __ATOMIC_ACQUIRE))
			reconnect_once(c);
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_lock(&c->state);
	}
	pthread_mutex_unlock(&c->state);
	return NULL;
}

/* The record of job (NULL: none; create: a free one, NULL when full). c->state held. */
static struct job_record *job_record(struct mercury_client *c, uint32_t job, bool create)
{
	for (unsigned i = 0; i < c->njobs; i++)
		if (c->jobs[i].job == job)
			return &c->jobs[i];
	if (!create || c->njobs >= MAX_JOBS)
		return NULL;
	c->jobs[c->njobs] = (struct job_record){.job = job};
	return &c->jobs[c->njobs++];
}

static bool iteration_frame(const void *frame)
{
	uint16_t type = le16toh(((const struct mw_hdr *)frame)->type);

	return type == MW_ITER_BEGIN || type == MW_ITER_END;
}

/* What a frame changes in this client's record of its jobs (c->state held): a successful
 * one, or an iteration event while the daemon is gone (the next daemon hears of it). */
static void record(struct mercury_client *c, const void *frame)
{
	const struct mw_hdr *h = frame;
	struct job_record *j;

	switch (le16toh(h->type)) {
	case MW_JOB_DECLARE: {
		const struct mw_job_declare *d = frame;

		j = job_record(c, le32toh(d->job), true);
		if (j) {
			j->n_layers = le32toh(d->n_layers);
			j->weight = le32toh(d->weight);
		}
		break;
	}
	case MW_ITER_BEGIN:
	case MW_ITER_END: {
		const struct mw_iter *it = frame;

		j = job_record(c, le32toh(it->job), false);
		if (j && le16toh(h->type) == MW_ITER_BEGIN)
			iter_window_begin(&j->win, le64toh(it->iteration));
		else if (j)
			iter_window_end(&j->win, le64toh(it->iteration));
		break;
	}
	}
	c->gen++;
}

/*
 * One request, or none while the daemon is known gone (*down set: down_err, at once; an
 * iteration event is recorded for the next daemon). A call that finds the daemon gone tries
 * once to reconnect at once (a restarted daemon is usually listening already) and sends the
 * request again; what succeeded is recorded while c->lock is held, so a replay never misses
 * it.
 */
static int request_once(struct mercury_client *c, void *frame, size_t len, int sock_fd,
			struct mw_reply *reply, bool *down)
{
	bool lost = false;
	int r;

	*down = false;
	if (__atomic_load_n(&c->down, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&c->state);
		start_reconnector(c); /* a forked child's first call; else it runs already */
		if (c->down) {
			if (iteration_frame(frame))
				record(c, frame);
			r = c->down_err;
			pthread_mutex_unlock(&c->state);
			*down = true;
			return r;
		}
		pthread_mutex_unlock(&c->state);
	}
	pthread_mutex_lock(&c->lock);
	if (c->fd < 0) { /* gone while this call waited for the lock */
		pthread_mutex_unlock(&c->lock);
		return request_once(c, frame, len, sock_fd, reply, down);
	}
	r = round_trip(c, frame, len, sock_fd, reply, &lost);
	if (lost) {
		r = reconnect_once(c);
		if (r == 0) {
			r = round_trip(c, frame, len, sock_fd, reply, &lost);
			if (lost) {
				close(c->fd);
				c->fd = -1;
				r = -ECONNREFUSED;
				pthread_mutex_lock(&c->state);
				mark_down(c, r);
				pthread_mutex_unlock(&c->state);
			}
		}
		*down = __atomic_load_n(&c->down, __ATOMIC_ACQUIRE);
	}
	if (r == 0 || (*down && iteration_frame(frame))) {
		pthread_mutex_lock(&c->state);
		record(c, frame);
		pthread_mutex_unlock(&c->state);
	}
	pthread_mutex_unlock(&c->lock);
	return r;
}

/*
 * A request and its reply. The data path (tags, iteration events: wait false) never waits
 * for a daemon; other calls made within reconnect_ms of the loss wait for one until then.
 */
static int request(struct mercury_client *c, void *frame, size_t len, int sock_fd,
		   struct mw_reply *reply, bool wait)
{
	struct timespec ts = {.tv_nsec = RECONNECT_POLL_MS * 1000000L};
	bool down;
	int r;

	if (!c)
		return -EINVAL;
	for (;;) {
		r = request_once(c, frame, len, sock_fd, reply, &down);
		if (!down || !wait)
			return r;
		pthread_mutex_lock(&c->state);
		bool late = now_ns() >= c->down_since + c->reconnect_ms * 1000000ll;
		pthread_mutex_unlock(&c->state);
		if (late)
			return r;
		nanosleep(&ts, NULL);
	}
}

API int mercury_daemon_connected(struct mercury_client *c)
{
	return c && !__atomic_load_n(&c->down, __ATOMIC_ACQUIRE);
}

API int mercury_job_declare(struct mercury_client *c, uint32_t job, uint32_t n_layers,
			    uint32_t weight)
{
	struct mw_job_declare f = {
	    .job = htole32(job), .n_layers = htole32(n_layers), .weight = htole32(weight)};
	struct mw_reply reply;

	hdr_init(&f.h, MW_JOB_DECLARE, sizeof(f));
	return request(c, &f, sizeof(f), -1, &reply, true);
}

static int iteration_event(struct mercury_client *c, uint16_t type, uint32_t job,
			   uint64_t iteration)
{
	struct mw_iter f = {.job = htole32(job), .iteration = htole64(iteration)};
	struct mw_reply reply;

	hdr_init(&f.h, type, sizeof(f));
	return request(c, &f, sizeof(f), -1, &reply, false);
}

API int mercury_iteration_begin(struct mercury_client *c, uint32_t job, uint64_t iteration)
{
	return iteration_event(c, MW_ITER_BEGIN, job, iteration);
}

API int mercury_iteration_end(struct mercury_client *c, uint32_t job, uint64_t iteration)
{
	return iteration_event(c, MW_ITER_END, job, iteration);
}

API int mercury_register_socket(struct mercury_client *c, int fd)
{
	struct mw_register f;
	struct mw_reply reply;

	if (fd < 0)
		return -EBADF;
	hdr_init(&f.h, MW_REGISTER, sizeof(f));
	return request(c, &f, sizeof(f), fd, &reply, true);
}

static long long now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

_Static_assert(MERCURY_OFFSET_NEXT == MW_OFFSET_NEXT, "the fast path's 'next' is the wire's");

/*
 * One setsockopt() on the caller's own socket when mercuryd attached the fast path to this
 * process's cgroup (bpf/tag_fastpath.bpf.c). -ENOPROTOOPT: not attached (or disabled, or a
 * batch too large for it): use the service. -EOPNOTSUPP: not attached and the socket's own
 * family refuses foreign option levels (AF_UNIX): the service says what is wrong with it.
 */
static int fast_tag(struct mercury_client *c, int fd, uint32_t job, uint64_t offset,
		    const struct mercury_tensor *t, unsigned n)
{
	struct mercury_fast_tag ft;
	long long until = __atomic_load_n(&c->fast_absent_until, __ATOMIC_RELAXED);

	if (!c->fast_enabled || n > MERCURY_FAST_BATCH || (until && now_coarse_ns() < until))
		return -ENOPROTOOPT;
	ft.job = job;
	ft.count = n;
	ft.offset = offset;
	for (unsigned i = 0; i < n; i++)
		ft.t[i] = (struct mercury_fast_tensor){.len = t[i].len,
						       .layer = t[i].layer,
						       .dir = t[i].dir,
						       .iteration = t[i].iteration};
	if (setsockopt(fd, MERCURY_SOL, MERCURY_SO_TAG, &ft, MERCURY_FAST_TAG_SIZE(n)) == 0) {
		if (until)
			__atomic_store_n(&c->fast_absent_until, 0, __ATOMIC_RELAXED);
		return 0;
	}
	if (errno == ENOPROTOOPT)
		__atomic_store_n(&c->fast_absent_until, now_coarse_ns() + FASTPATH_RECHECK_NS,
				 __ATOMIC_RELAXED);
	return -errno;
}

static int tag(struct mercury_client *c, int fd, uint32_t job, uint64_t offset,
	       const struct mercury_tensor *t, unsigned n)
{
	struct {
		struct mw_tag tag;
		struct mw_tensor t[MW_MAX_BATCH];
	} f;
	struct mw_reply reply;
	size_t len = sizeof(struct mw_tag) + n * sizeof(struct mw_tensor);

	int r;

	if (fd < 0)
		return -EBADF;
	if (!t || n == 0 || n > MW_MAX_BATCH)
		return -EINVAL;
	r = fast_tag(c, fd, job, offset, t, n);
	if (r == 0)
		__atomic_fetch_add(&c->tags_fast, 1, __ATOMIC_RELAXED);
	if (r != -ENOPROTOOPT && r != -EOPNOTSUPP)
		return r;
	memset(&f.tag, 0, sizeof(f.tag));
	f.tag.job = htole32(job);
	f.tag.count = htole32(n);
	f.tag.offset = htole64(offset);
	for (unsigned i = 0; i < n; i++)
		f.t[i] = (struct mw_tensor){.len = htole64(t[i].len),
					    .layer = htole32(t[i].layer),
					    .dir = htole32(t[i].dir),
					    .iteration = htole64(t[i].iteration)};
	hdr_init(&f.tag.h, MW_TAG, len);
	r = request(c, &f, len, fd, &reply, false);
	if (r == 0)
		__atomic_fetch_add(&c->tags_service, 1, __ATOMIC_RELAXED);
	return r;
}

API void mercury_use_fastpath(struct mercury_client *c, int on)
{
	c->fast_enabled = on;
	__atomic_store_n(&c->fast_absent_until, 0, __ATOMIC_RELAXED);
}

API void mercury_tag_counts(struct mercury_client *c, uint64_t *fastpath, uint64_t *service)
{
	if (fastpath)
		*fastpath = __atomic_load_n(&c->tags_fast, __ATOMIC_RELAXED);
	if (service)
		*service = __atomic_load_n(&c->tags_service, __ATOMIC_RELAXED);
}

API int mercury_fastpath_active(struct mercury_client *c)
{
	long long until = __atomic_load_n(&c->fast_absent_until, __ATOMIC_RELAXED);

	return c->fast_enabled && (!until || now_coarse_ns() >= until);
}

API int mercury_tag_batch(struct mercury_client *c, int fd, uint32_t job,
			  const struct mercury_tensor *t, unsigned n)
{
	return tag(c, fd, job, MW_OFFSET_NEXT, t, n);
}

API int mercury_tag_next(struct mercury_client *c, int fd, uint32_t job, uint32_t layer,
			 enum mercury_dir dir, uint64_t iteration, uint64_t len)
{
	struct mercury_tensor t = {.len = len, .layer = layer, .dir = dir, .iteration = iteration};

	return tag(c, fd, job, MW_OFFSET_NEXT, &t, 1);
}

API int mercury_tag_range(struct mercury_client *c, int fd, uint32_t job, uint32_t layer,
			  enum mercury_dir dir, uint64_t iteration, uint64_t offset, uint64_t len)
{
	struct mercury_tensor t = {.len = len, .layer = layer, .dir = dir, .iteration = iteration};

	if (offset == MW_OFFSET_NEXT)
		return -EINVAL;
	return tag(c, fd, job, offset, &t, 1);
}

API ssize_t mercury_send_tensor(struct mercury_client *c, int fd, const void *buf, size_t len,
				uint32_t job, uint32_t layer, enum mercury_dir dir,
				uint64_t iteration)
{
	const char *p = buf;
	size_t done = 0;
	int r;

	if (len == 0)
		return 0; /* nothing to tag or write */
	if (!buf || len > SSIZE_MAX)
		return -EINVAL;
	r = mercury_tag_next(c, fd, job, layer, dir, iteration, len);
	if (r)
		return r;
	while (done < len) {
		ssize_t n = send(fd, p + done, len - done, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* A non-blocking socket: the bytes are tagged already, so wait and
			 * finish rather than return with part of the tensor unwritten. */
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return (ssize_t)len;
}

API int mercury_socket_stats(struct mercury_client *c, int fd, struct mercury_socket_stats *out)
{
	struct mw_stats_req f;
	struct mw_reply reply;
	int r;

	if (!out)
		return -EINVAL;
	hdr_init(&f.h, MW_STATS, sizeof(f));
	r = request(c, &f, sizeof(f), fd, &reply, true);
	if (r)
		return r;
	for (int i = 0; i < 16; i++) {
		out->bytes[i] = le64toh(reply.bytes[i]);
		out->packets[i] = le64toh(reply.packets[i]);
	}
	return 0;
}

API const char *mercury_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENOENT:
		return "no mercuryd socket at that path (is `mercuryd serve` running? is "
		       "MERCURY_SOCKET right?)";
	case -ECONNREFUSED:
		return "mercuryd is not accepting connections (not running, or too many clients)";
	case -EACCES:
		return "permission denied on the mercuryd socket (the user must be in group "
		       "mercury)";
	case -ESRCH:
		return "job not declared by this user (call mercury_job_declare first)";
	case -ERANGE:
		return "layer outside 1..n_layers of the job";
	case -EEXIST:
		return "the range overlaps or precedes the socket's last tag (tags on a socket "
		       "go forward)";
	case -EINVAL:
		return "invalid argument (a length of 0, a direction other than push/pull, a "
		       "count or weight out of range)";
	case -ENOSPC:
		return "the socket has 32 unacknowledged tagged ranges (or 64 jobs are declared)";
	case -EPROTOTYPE:
		return "not a TCP socket";
	case -ENOTSOCK:
		return "not a socket";
	case -ENOTCONN:
		return "the socket is not connected";
	case -EPERM:
		return "the socket, or (through the tag fast path) the job id, belongs to another "
		       "user";
	case -EBADF:
		return "bad or missing socket fd";
	case -E2BIG:
		return "more than one socket fd with one request";
	case -EPROTO:
		return "protocol version or framing mismatch with mercuryd";
	case -EBADMSG:
		return "malformed frame";
	case -ESTALE:
		return "mercuryd cannot reach the pinned tag map the classifier reads (its log "
		       "says why); nothing was tagged";
	case -EMSGSIZE:
		return "frame too large";
	case -EOPNOTSUPP:
		return "request type unknown to this mercuryd";
	case -ECONNRESET:
		return "mercuryd closed the connection";
	default:
		return err < 0 ? strerror(-err) : "unknown error";
	}
}
