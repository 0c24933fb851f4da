/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmercury: the client library training frameworks call to tell the local mercuryd which
 * bytes of which TCP socket carry which layer. The daemon turns (job, layer, direction,
 * iteration) into a priority level with Mercury's policy and writes the kernel's per-socket
 * tag table; the TC classifier then steers every packet of those bytes into the band of its
 * level.
 *
 * Rules of use:
 *  - Tag before you write: a tag call returns only after the daemon has put the range in the
 *    kernel map, so bytes written after it returns are classified by it.
 *  - Ranges on one socket go forward: each tag starts at or after the end of the previous.
 *    mercury_tag_next() starts at the socket's current write position (or where the previous
 *    tag on this socket ended, if that is later, so you may tag ahead of your writes).
 *  - Put tensors of different urgency on different sockets: TCP cannot reorder bytes inside
 *    one stream, so a packet can only overtake packets of other sockets. Layers share bands
 *    in groups (mercury_layer_group() in mercury_groups.h, the daemon's own rule): give one
 *    socket layers of one group only, or its packets land in two bands and reorder.
 *  - The library never keeps your socket: it passes the fd to the daemon (SCM_RIGHTS), which
 *    reads what it needs and closes its copy at once. Only sockets the calling user created
 *    can be tagged (root may tag any).
 *  - Tags live with the socket, not with the client: the kernel frees them when the socket
 *    closes. A socket that outlives its client (disconnect, exit of a helper process) keeps
 *    its ranges until it closes, so bytes tagged and still queued are classified as tagged;
 *    bytes beyond the last range go to the interface's default band.
 *  - Job ids are per user: (uid, job) names a job, so users cannot touch each other's jobs.
 *    A job is forgotten when the last client that declared it disconnects.
 *  - Cost: where mercuryd attached the tag fast path to the caller's cgroup (`mercuryd
 *    fastpath attach`), a tag of up to 8 tensors is one setsockopt() on the socket, checked
 *    and written in the kernel (about a microsecond); elsewhere every call is one round
 *    trip to the daemon (a few microseconds, more under load). Both give the same answers.
 *    Tag a batch of tensors bound for one socket with one call where you can
 *    (mercury_tag_batch). Jobs and iterations always go through the daemon.
 *
 * All functions are thread-safe (one request at a time per client; use one client per thread
 * for parallelism), allocate nothing after mercury_connect(), and return 0 or a negative
 * errno; mercury_strerror() explains each. After fork() a child may go on using its
 * parent's clients: the child's first call opens its own connection (in the background, as
 * after a daemon restart: until it is up, calls fail at once as with the daemon gone and
 * iteration events are kept for it), and a child that never calls never connects. fork()
 * waits for any call in flight on a client (at most its reply timeout, 2 s). The answers (the
 * daemon's and the fast path's are the same): -ESRCH  job not declared by this user     -ERANGE
 * layer outside 1..n_layers -EPERM  (fast path) the job id is another user's -EEXIST range
 * overlaps/precedes the socket's last tag -ENOSPC 32 unacknowledged ranges on the socket, or 64
 * jobs -EPROTOTYPE not TCP   -ENOTSOCK not a socket   -ENOTCONN not connected -EPERM  socket of
 * another user             -EINVAL a field out of range -EPROTO / -EBADMSG / -EMSGSIZE /
 * -EOPNOTSUPP: library and daemon disagree on the wire and mercury_connect()'s: -ENOENT no socket
 * at the path, -EACCES not in group mercury, -ECONNREFUSED daemon not accepting.
 */
#ifndef MERCURY_H
#define MERCURY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "mercury_groups.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MERCURY_DEFAULT_SOCKET "/run/mercury/mercuryd.sock"

struct mercury_client;

enum mercury_dir {
	MERCURY_PUSH = 0, /* gradients, worker -> server */
	MERCURY_PULL = 1, /* parameters, server -> worker */
};

/* One tensor of a batch. layer counts from 1 (the input side). */
struct mercury_tensor {
	uint64_t len;	    /* bytes, > 0 */
	uint32_t layer;	    /* 1 .. n_layers of the job */
	uint32_t dir;	    /* enum mercury_dir */
	uint64_t iteration; /* training step the bytes belong to */
};

/*
 * Connects to the daemon (path NULL: MERCURY_DEFAULT_SOCKET, or $MERCURY_SOCKET if set),
 * waiting up to the reconnect timeout (default 3000 ms, or $MERCURY_RECONNECT_MS) for one.
 *
 * A daemon that goes away costs priority, never progress. A call that finds it gone
 * (killed, restarted, or silent for 2 s) tries once to reconnect; failing that, the client
 * remembers it gone: tags and iteration events fail at once with -ECONNREFUSED or -ENOENT
 * (nothing was tagged: the bytes go out untagged) and never wait, while a thread of the
 * client looks for the daemon every 100 ms. When one answers, it is told this client's
 * declared jobs and open iterations (iteration events made meanwhile included) and calls
 * succeed again. The other calls (job declaration, registration, stats) made within the
 * reconnect timeout of the loss wait for a daemon until then. The tag fast path does not
 * need the daemon at all.
 */
int mercury_connect(const char *path, struct mercury_client **out);
void mercury_disconnect(struct mercury_client *c);
/* How long after the daemon's loss a call other than a tag or iteration event waits for a
 * restarted one (0: fail at once). */
void mercury_set_reconnect_timeout(struct mercury_client *c, int ms);
/* 1 while a daemon is connected; 0 while it is gone (calls fail at once, a reconnect is
 * tried every 100 ms). */
int mercury_daemon_connected(struct mercury_client *c);

/* Declares a job: its layer count (layer 1 = input side) and its weight against other jobs on
 * this node (1 = normal; higher = more urgent). Must precede tags of that job. */
int mercury_job_declare(struct mercury_client *c, uint32_t job, uint32_t n_layers, uint32_t weight);

/* Marks the start of iteration `iteration` of `job` (the oldest unfinished iteration is the
 * one whose traffic goes first) and its end (all its traffic sent and received). A tag
 * names its job, layer and iteration; the classifier decides each packet's band from the
 * job's state at that moment, so bytes of iteration i+1 written ahead (and still queued)
 * move up the moment iteration i ends. */
int mercury_iteration_begin(struct mercury_client *c, uint32_t job, uint64_t iteration);
int mercury_iteration_end(struct mercury_client *c, uint32_t job, uint64_t iteration);

/* Checks that fd is a connected TCP socket of the caller, usable for tags. */
int mercury_register_socket(struct mercury_client *c, int fd);

/* The next `len` bytes written to fd carry `layer` of `job` in direction `dir`. */
int mercury_tag_next(struct mercury_client *c, int fd, uint32_t job, uint32_t layer,
		     enum mercury_dir dir, uint64_t iteration, uint64_t len);

/* n (<= MERCURY_MAX_BATCH) tensors that will be written to fd back to back, in this order,
 * starting at the socket's next write position: one round trip for all of them. */
#define MERCURY_MAX_BATCH 32
int mercury_tag_batch(struct mercury_client *c, int fd, uint32_t job,
		      const struct mercury_tensor *t, unsigned n);

/* Explicit stream offsets (the classifier's: tcpi_bytes_acked based). */
int mercury_tag_range(struct mercury_client *c, int fd, uint32_t job, uint32_t layer,
		      enum mercury_dir dir, uint64_t iteration, uint64_t offset, uint64_t len);

/* Tags then writes all of buf (retrying short writes; on a non-blocking socket it waits for
 * room with poll()). Returns len (0 for len 0, nothing tagged) or a negative errno; after a
 * write error the tag stays, so close the socket rather than write it again. */
ssize_t mercury_send_tensor(struct mercury_client *c, int fd, const void *buf, size_t len,
			    uint32_t job, uint32_t layer, enum mercury_dir dir, uint64_t iteration);

/* Whether tags may use the tag fast path (default: yes, unless $MERCURY_FASTPATH=0); off
 * sends every tag through the daemon. mercury_fastpath_active() says whether the last try
 * found it attached (1) or the client uses the daemon for now (0; it looks again each
 * second). */
void mercury_use_fastpath(struct mercury_client *c, int on);
int mercury_fastpath_active(struct mercury_client *c);
/* Tags (calls, batches count once) this client has made so far through the fast path and
 * through the daemon's service: which path a job's tags really take. Either pointer may be
 * NULL. */
void mercury_tag_counts(struct mercury_client *c, uint64_t *fastpath, uint64_t *service);

/* Bytes and packets the classifier put in each band for this socket (index = band). */
struct mercury_socket_stats {
	uint64_t bytes[16];
	uint64_t packets[16];
};
int mercury_socket_stats(struct mercury_client *c, int fd, struct mercury_socket_stats *out);

/* A message for any negative return of this library. */
const char *mercury_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* MERCURY_H */
