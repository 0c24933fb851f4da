// SPDX-License-Identifier: BSD-2-Clause
/* One event frame: every check before the map is touched, one map write per frame. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "log.h"
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

/*
 * Publishes slot i's state where the classifier and the tag fast path read it: the jobs entry
 * (inactive when the slot is free, so its old tags demote) and the (uid, job) -> slot index.
 * A failed write is logged; the service keeps serving (tags then resolve to the last state).
 */
static void publish(struct event_state *ev, int i)
{
	struct mercury_job_key key = {.uid = ev->slots[i].uid, .job = ev->slots[i].job};
	struct mercury_job_state js;
	uint32_t slot = (uint32_t)i;
	bool active = ev->slots[i].refs || ev->slots[i].orphan;

	if (ev->jobs_fd < 0)
		return;
	policy_job_state(&ev->policy, slot, &js);
	js.gen = ev->slots[i].gen;
	js.uid = key.uid;
	js.job = key.job;
	js.active = active;
	if (bpf_map_update_elem(ev->jobs_fd, &slot, &js, BPF_ANY) ||
	    (active && bpf_map_update_elem(ev->job_ids_fd, &key, &slot, BPF_ANY)) ||
	    (!active && bpf_map_delete_elem(ev->job_ids_fd, &key) && errno != ENOENT))
		log_error("cannot publish job %u of uid %u: %s", key.job, key.uid, strerror(errno));
}

void event_share_weights(const struct event_state *ev, uint32_t weight[MERCURY_SHARE_SLOTS])
{
	for (uint32_t i = 0; i < MERCURY_SHARE_SLOTS; i++) {
		struct mercury_job_state js;

		policy_job_state(&ev->policy, i, &js);
		weight[i] = (ev->slots[i].refs || ev->slots[i].orphan) ? js.weight : 0;
	}
}

void event_publish_all(struct event_state *ev)
{
	for (int i = 0; i < POLICY_MAX_JOBS; i++)
		if (ev->slots[i].gen)
			publish(ev, i);
}

/* A job came or went or changed weight: every job's shift may have changed. */
static void publish_weights(struct event_state *ev)
{
	for (int i = 0; i < POLICY_MAX_JOBS; i++)
		if (ev->slots[i].refs || ev->slots[i].orphan)
			publish(ev, i);
}

static void forget(struct event_state *ev, int i)
{
	ev->slots[i].refs = 0;
	ev->slots[i].orphan = false;
	policy_remove(&ev->policy, (uint32_t)i);
	publish(ev, i); /* inactive: its tags go to the default band */
	publish_weights(ev);
}

/*
 * Slot of (uid, job): an existing one (an orphan is adopted), or (create) a free one, or
 * the slot of an orphan nobody claimed; -ESRCH / -ENOSPC. A new job gets a new generation.
 */
static int slot_of(struct event_state *ev, uint32_t uid, uint32_t job, bool create)
{
	int free_slot = -1, orphan = -1;

	for (int i = 0; i < POLICY_MAX_JOBS; i++) {
		bool used = ev->slots[i].refs || ev->slots[i].orphan;

		if (used && ev->slots[i].job == job && ev->slots[i].uid == uid)
			return i;
		if (!used && free_slot < 0)
			free_slot = i;
		if (ev->slots[i].orphan && !ev->slots[i].refs && orphan < 0)
			orphan = i;
	}
	if (!create)
		return -ESRCH;
	if (free_slot < 0 && orphan >= 0) {
		forget(ev, orphan);
		free_slot = orphan;
	}
	if (free_slot < 0)
		return -ENOSPC;
	ev->slots[free_slot].job = job;
	ev->slots[free_slot].uid = uid;
	ev->slots[free_slot].gen = (uint16_t)(ev->slots[free_slot].gen + 1) ?: 1;
	return free_slot;
}

/* The iteration window of the job in slot i. */
static void set_window(struct event_state *ev, uint32_t i, struct iter_window w)
{
	for (unsigned k = 0; k < ev->policy.njobs; k++)
		if (ev->policy.jobs[k].job == i)
			ev->policy.jobs[k].win = w;
}

static int do_declare(struct event_state *ev, uint32_t uid, uint64_t *mask, const struct mw_msg *m)
{
	int slot = slot_of(ev, uid, m->job.job, true);
	bool claimed;
	int r;

	if (slot < 0)
		return slot;
	claimed = ev->slots[slot].orphan && !ev->slots[slot].refs;
	r = policy_declare(&ev->policy, (uint32_t)slot, m->job.n_layers, m->job.weight);
	if (r)
		return r;
	/* A job kept from an earlier daemon, declared again by its client: the client's replay
	 * that follows (its open iterations) is the truth, not the window published before the
	 * earlier daemon died (iteration ends it never heard would hold that window's oldest
	 * iteration open for good, and the job's traffic in the later-iteration bands). */
	if (claimed)
		set_window(ev, (uint32_t)slot, (struct iter_window){0});
	if (!(*mask & (1ull << slot))) {
		*mask |= 1ull << slot;
		ev->slots[slot].refs++;
	}
	ev->slots[slot].orphan = false;
	publish_weights(ev);
	return 0;
}

static int do_iteration(struct event_state *ev, uint32_t uid, const struct mw_msg *m)
{
	int slot = slot_of(ev, uid, m->iter.job, false), r;

	if (slot < 0)
		return slot;
	if (m->type == MW_ITER_BEGIN)
		r = policy_iteration_begin(&ev->policy, (uint32_t)slot, m->iter.iteration);
	else
		r = policy_iteration_end(&ev->policy, (uint32_t)slot, m->iter.iteration);
	if (r == 0)
		publish(ev, slot); /* queued bytes of the job follow at once */
	return r;
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
		/* The level is decided per packet from the job's state: only check here. */
		if ((r = policy_check(&ev->policy, (uint32_t)slot, m->tag.t[i].layer)))
			return r;
		pieces[i] = (struct tag_piece){.len = m->tag.t[i].len,
					       .id = {.iteration = m->tag.t[i].iteration,
						      .job = (uint16_t)(slot + 1),
						      .job_gen = (uint16_t)ev->slots[slot].gen,
						      .layer = (uint16_t)m->tag.t[i].layer,
						      .dir = (uint8_t)m->tag.t[i].dir}};
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
		log_info("client %llu (pid %d uid %d): frame type %u rejected: %s",
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
			forget(ev, i);
	}
}

int event_adopt_jobs(struct event_state *ev)
{
	int n = 0;

	if (ev->jobs_fd < 0)
		return 0;
	for (uint32_t i = 0; i < POLICY_MAX_JOBS; i++) {
		struct mercury_job_state js;

		if (bpf_map_lookup_elem(ev->jobs_fd, &i, &js))
			continue;
		ev->slots[i].gen = js.gen; /* a free slot's next job still gets a new one */
		if (!js.active || policy_declare(&ev->policy, i, js.n_layers, js.weight))
			continue;
		ev->slots[i].job = js.job;
		ev->slots[i].uid = js.uid;
		ev->slots[i].orphan = true;
		set_window(ev, i,
			   (struct iter_window){.oldest_open = js.oldest_open,
						.ended_mask = js.ended_mask,
						.has_open = js.has_open});
		n++;
	}
	return n;
}
