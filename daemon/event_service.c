/* One event frame: every check before the map is touched, one map write per frame. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "event_service.h"
#include "tag_store.h"
#include "wire_decode.h"

/* The fd is a TCP socket owned by the peer (or the peer is root). Whether it is connected
 * is checked where its stream position is read. SO_PROTOCOL alone tells TCP: only
 * AF_INET/AF_INET6 stream sockets report IPPROTO_TCP (MPTCP and SCTP report their own). */
static int check_socket(int fd, const struct ucred *cred)
{
	int proto = 0;
	socklen_t len = sizeof(proto);
	struct stat st;

	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len))
		return errno == ENOTSOCK ? -ENOTSOCK : -errno;
	if (proto != IPPROTO_TCP)
		return -EPROTOTYPE;
	if (fstat(fd, &st))
		return -errno;
	if (cred->uid != 0 && st.st_uid != cred->uid)
		return -EPERM;
	return 0;
}

/* Slot of (uid, job): an existing one, or (create) a free one; -ESRCH / -ENOSPC. */
static int slot_of(struct event_state *ev, uint32_t uid, uint32_t job, bool create)
{
	int free_slot = -1;

	for (int i = 0; i < POLICY_MAX_JOBS; i++) {
		if (ev->slots[i].refs && ev->slots[i].job == job && ev->slots[i].uid == uid)
			return i;
		if (!ev->slots[i].refs && free_slot < 0)
			free_slot = i;
	}
	if (!create)
		return -ESRCH;
	if (free_slot < 0)
		return -ENOSPC;
	ev->slots[free_slot].job = job;
	ev->slots[free_slot].uid = uid;
	return free_slot;
}

static int do_declare(struct event_state *ev, uint32_t uid, uint64_t *mask, const struct mw_msg *m)
{
	int slot = slot_of(ev, uid, m->job.job, true);
	int r;

	if (slot < 0)
		return slot;
	r = policy_declare(&ev->policy, (uint32_t)slot, m->job.n_layers, m->job.weight);
	if (r)
		return r;
	if (!(*mask & (1ull << slot))) {
		*mask |= 1ull << slot;
		ev->slots[slot].refs++;
	}
	return 0;
}

static int do_iteration(struct event_state *ev, uint32_t uid, const struct mw_msg *m)
{
	int slot = slot_of(ev, uid, m->iter.job, false);

	if (slot < 0)
		return slot;
	if (m->type == MW_ITER_BEGIN)
		return policy_iteration_begin(&ev->policy, (uint32_t)slot, m->iter.iteration);
	return policy_iteration_end(&ev->policy, (uint32_t)slot, m->iter.iteration);
}

_Static_assert(MW_OFFSET_NEXT == TAG_AT_NEXT, "the wire's 'next' offset is the store's");

static int do_tag(struct event_state *ev, uint64_t client_id, uint32_t uid, int fd,
		  const struct mw_msg *m, struct mw_reply *reply)
{
	struct tag_piece pieces[MW_MAX_BATCH];
	uint64_t first, end;
	int slot = slot_of(ev, uid, m->tag.job, false), r;

	if (slot < 0)
		return slot;
	for (uint32_t i = 0; i < m->tag.count; i++) {
		pieces[i].len = m->tag.t[i].len;
		r = policy_level(&ev->policy, (uint32_t)slot, m->tag.t[i].layer, m->tag.t[i].dir,
				 m->tag.t[i].iteration, &pieces[i].level);
		if (r)
			return r;
	}
	r = tag_store_write(ev->tags_fd, fd, m->tag.offset, pieces, m->tag.count, client_id, &first,
			    &end);
	if (r)
		return r;
	reply->start = first;
	reply->end = end;
	reply->count = m->tag.count;
	return 0;
}

static int do_stats(struct event_state *ev, int fd, struct mw_reply *reply)
{
	struct mercury_sock_stats st;

	if (bpf_map_lookup_elem(ev->stats_fd, &fd, &st))
		return errno == ENOENT ? 0 : -errno;
	memcpy(reply->bytes, st.bytes, sizeof(reply->bytes));
	memcpy(reply->packets, st.packets, sizeof(reply->packets));
	return 0;
}

void event_handle(struct event_state *ev, uint64_t client_id, const struct ucred *cred,
		  uint64_t *jobs_mask, const void *frame, size_t n, bool truncated, const int *fds,
		  int nfds, struct mw_reply *reply)
{
	struct mw_msg m;
	int r;

	memset(reply, 0, sizeof(*reply));
	r = mw_decode(frame, truncated ? MW_MAX_FRAME + 1 : n, nfds > 0, &m);
	reply->h = (struct mw_hdr){
	    .len = sizeof(*reply), .version = MW_VERSION, .type = MW_REPLY, .seq = m.seq};
	ev->frames++;
	if (r == 0 && nfds > 1)
		r = -E2BIG; /* one socket per frame */
	if (r == 0 && mw_type_takes_fd(m.type))
		r = check_socket(fds[0], cred);
	if (r == 0) {
		switch (m.type) {
		case MW_JOB_DECLARE:
			r = do_declare(ev, cred->uid, jobs_mask, &m);
			break;
		case MW_ITER_BEGIN:
		case MW_ITER_END:
			r = do_iteration(ev, cred->uid, &m);
			break;
		case MW_REGISTER: {
			uint64_t next, acked;

			r = sock_stream_position(fds[0], &next, &acked); /* connected? */
			break;
		}
		case MW_TAG:
			r = ev->maps_error ? ev->maps_error
					   : do_tag(ev, client_id, cred->uid, fds[0], &m, reply);
			break;
		case MW_STATS:
			r = ev->maps_error ? ev->maps_error : do_stats(ev, fds[0], reply);
			break;
		}
	}
	if (r) {
		ev->rejected++;
		fprintf(stderr,
			"mercuryd: client %llu (pid %d uid %d): frame type %u rejected: %s\n",
			(unsigned long long)client_id, cred ? (int)cred->pid : -1,
			cred ? (int)cred->uid : -1, m.type, strerror(-r));
	}
	reply->status = r;
}

void event_client_gone(struct event_state *ev, uint64_t jobs_mask)
{
	for (int i = 0; i < POLICY_MAX_JOBS; i++) {
		if (!(jobs_mask & (1ull << i)) || !ev->slots[i].refs)
			continue;
		if (--ev->slots[i].refs == 0)
			policy_remove(&ev->policy, (uint32_t)i);
	}
}
