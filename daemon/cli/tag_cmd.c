// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd tag: the admin path to tag a byte range of another process's TCP socket. */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <json-c/json.h>
#include <bpf/bpf.h>

#include "attach_args.h"
#include "cli.h"
#include "loader/iface_pins.h"
#include "job_level.h"
#include "loader/pins.h"
#include "service/tag_store.h"

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

/* Borrows fd `fd` of process `pid` and checks that it is a TCP socket. */
static int borrow_tcp_socket(long pid, int fd, char *err, size_t errlen)
{
	int pidfd, sock, proto = 0;
	socklen_t len = sizeof(proto);

	pidfd = pidfd_open((pid_t)pid, 0);
	if (pidfd < 0) {
		snprintf(err, errlen, "no process %ld (%s)", pid, strerror(errno));
		return -errno;
	}
	sock = pidfd_getfd(pidfd, fd, 0);
	close(pidfd);
	if (sock < 0) {
		int r = -errno;

		snprintf(err, errlen, "process %ld has no fd %d (%s)", pid, fd, strerror(-r));
		return r;
	}
	if (getsockopt(sock, SOL_SOCKET, SO_PROTOCOL, &proto, &len) || proto != IPPROTO_TCP) {
		snprintf(err, errlen, "fd %d of process %ld is not a TCP socket", fd, pid);
		close(sock);
		return -ENOTSOCK;
	}
	return sock;
}

/* Smallest band count over the attached interfaces (the level shown is for it); 0: none. */
struct min_bands {
	const char *root;
	unsigned min;
};

static int min_bands_one(const char *iface, void *arg)
{
	struct mercury_iface_cfg cfg;
	struct min_bands *m = arg;

	if (iface_cfg_read(m->root, iface, &cfg) == 0 && cfg.nbands >= 2 &&
	    (!m->min || cfg.nbands < m->min))
		m->min = cfg.nbands;
	return 0;
}

/* The level a range resolves to now with nbands bands, from the published job state; -1
 * when its job is gone (the default band). */
static int level_now(int jobs_fd, const struct mercury_range *r, unsigned nbands)
{
	struct mercury_job_state js;
	uint32_t slot = r->job - 1u;

	if (!r->job)
		return r->level < MERCURY_MAX_LEVELS ? r->level : MERCURY_MAX_LEVELS - 1;
	if (jobs_fd < 0 || bpf_map_lookup_elem(jobs_fd, &slot, &js) || !js.active ||
	    (uint16_t)js.gen != r->job_gen)
		return -1;
	return (int)mercury_job_level(&js, r->layer, r->iteration, nbands);
}

static void print_tags(const struct cli_ctx *ctx, const struct tag_args *a, int sock,
		       const struct mercury_sock_tags *t, uint64_t next, uint64_t acked)
{
	struct min_bands bands = {.root = ctx->pin_root};
	uint64_t cookie = 0;
	socklen_t len = sizeof(cookie);
	char path[PATH_MAX];
	int jobs_fd;

	getsockopt(sock, SOL_SOCKET, SO_COOKIE, &cookie, &len);
	iface_for_each(ctx->pin_root, min_bands_one, &bands);
	if (!bands.min)
		bands.min = 8;
	pins_path(path, sizeof(path), ctx->pin_root, NULL, global_maps[GM_JOBS].name);
	jobs_fd = bpf_obj_get(path);
	if (ctx->json) {
		struct json_object *o = json_object_new_object(), *rs = json_object_new_array();

		json_object_object_add(o, "pid", json_object_new_int64(a->pid));
		json_object_object_add(o, "fd", json_object_new_int(a->fd));
		json_object_object_add(o, "cookie", json_object_new_int64((int64_t)cookie));
		json_object_object_add(o, "next_write", json_object_new_int64((int64_t)next));
		json_object_object_add(o, "acked", json_object_new_int64((int64_t)acked));
		json_object_object_add(o, "bands", json_object_new_int((int)bands.min));
		for (uint32_t i = 0; i < t->count && i < MERCURY_RANGES_PER_SOCK; i++) {
			const struct mercury_range *g = &t->ranges[i];
			struct json_object *r = json_object_new_object();
			int lv = level_now(jobs_fd, g, bands.min);

			json_object_object_add(r, "start",
					       json_object_new_int64((int64_t)g->start));
			json_object_object_add(r, "end", json_object_new_int64((int64_t)g->end));
			if (g->job) {
				json_object_object_add(r, "job_slot",
						       json_object_new_int(g->job - 1));
				json_object_object_add(r, "layer", json_object_new_int(g->layer));
				json_object_object_add(r, "dir", json_object_new_int(g->dir));
				json_object_object_add(
				    r, "iteration", json_object_new_int64((int64_t)g->iteration));
			}
			/* null: the job is gone, its bytes take the default band */
			json_object_object_add(r, "level", lv < 0 ? NULL : json_object_new_int(lv));
			json_object_array_add(rs, r);
		}
		json_object_object_add(o, "ranges", rs);
		cli_json_print(ctx, o);
	} else {
		printf("pid %ld fd %d (cookie %llu): next write at %llu, acked %llu, %u ranges "
		       "(levels now, for %u bands)\n",
		       a->pid, a->fd, (unsigned long long)cookie, (unsigned long long)next,
		       (unsigned long long)acked, t->count, bands.min);
		for (uint32_t i = 0; i < t->count && i < MERCURY_RANGES_PER_SOCK; i++) {
			const struct mercury_range *g = &t->ranges[i];
			int lv = level_now(jobs_fd, g, bands.min);

			printf("  [%llu, %llu) ", (unsigned long long)g->start,
			       (unsigned long long)g->end);
			if (g->job)
				printf("job slot %u layer %u %s iteration %llu: ", g->job - 1u,
				       g->layer, g->dir ? "pull" : "push",
				       (unsigned long long)g->iteration);
			if (lv < 0)
				printf("job gone, default band\n");
			else
				printf("level %d\n", lv);
		}
	}
	if (jobs_fd >= 0)
		close(jobs_fd);
}

int do_tag(const struct cli_ctx *ctx, int argc, char **argv)
{
	char err[512] = "", path[PATH_MAX];
	struct mercury_sock_tags tags;
	uint64_t next = 0, acked = 0;
	struct tag_args a;
	int map_fd = -1, sock = -1, r, ret = 1;

	if (tag_args_parse(argc, argv, &a, err, sizeof(err))) {
		cli_error(ctx, "tag: %s", err);
		return 2;
	}
	if (a.help) {
		cli_usage(stdout, &tag_command, NULL);
		return 0;
	}
	if (geteuid() != 0) {
		cli_error(ctx, "tag: must run as root (needs CAP_SYS_PTRACE over the process and "
			       "CAP_BPF)");
		return 1;
	}
	pins_path(path, sizeof(path), ctx->pin_root, NULL, "sock_tags");
	map_fd = bpf_obj_get(path);
	if (map_fd < 0) {
		cli_error(ctx,
			  "tag: no interface is attached (%s missing); run mercuryd attach "
			  "<iface> first",
			  path);
		return 1;
	}
	sock = borrow_tcp_socket(a.pid, a.fd, err, sizeof(err));
	if (sock < 0) {
		cli_error(ctx, "tag: %s", err);
		goto out;
	}
	r = sock_stream_position(sock, &next, &acked);
	if (r) {
		cli_error(ctx, "tag: pid %ld fd %d: %s", a.pid, a.fd,
			  r == -ENOTCONN ? "the socket is not connected" : strerror(-r));
		goto out;
	}
	if (a.clear) {
		r = tag_store_clear(map_fd, sock);
	} else if (!a.show) {
		uint64_t start = a.have_next ? TAG_AT_NEXT : a.offset, first, end;
		struct tag_piece piece = {.len = a.have_next ? a.next : a.len,
					  .id = {.level = (uint8_t)a.level}};
		uint64_t len = piece.len;

		r = tag_store_write(map_fd, sock, start, &piece, 1, 0, &first, &end);
		if (start == TAG_AT_NEXT)
			start = first;
		if (r == -EEXIST)
			snprintf(err, sizeof(err),
				 "[%llu, +%llu) overlaps or precedes the socket's "
				 "last tagged range (tags must go forward)",
				 (unsigned long long)start, (unsigned long long)len);
		else if (r == -ENOSPC)
			snprintf(err, sizeof(err),
				 "the socket already has %d unacknowledged tagged "
				 "ranges; wait for the peer to acknowledge or --clear",
				 MERCURY_RANGES_PER_SOCK);
	} else {
		r = 0;
	}
	if (r) {
		cli_error(ctx, "tag: pid %ld fd %d: %s", a.pid, a.fd, err[0] ? err : strerror(-r));
		goto out;
	}
	if ((r = tag_store_get(map_fd, sock, &tags))) {
		cli_error(ctx, "tag: cannot read back the tags: %s", strerror(-r));
		goto out;
	}
	print_tags(ctx, &a, sock, &tags, next, acked);
	ret = 0;
out:
	if (sock >= 0)
		close(sock); /* never keep a process's socket: it would outlive its close() */
	close(map_fd);
	return ret;
}
