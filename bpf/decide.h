/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The decision for a TCP segment with payload: its socket's tag ranges searched for the
 * segment's stream offset, the range's job state -> level -> band. The socket view is what
 * a program tells it about the socket (classifier.bpf.c: from skb->sk).
 */
#ifndef MERCURY_DECIDE_H
#define MERCURY_DECIDE_H

#include "parse.h"
#include "shared_maps.h"

/* What the classifier knows about the packet's socket. Zeroed: no socket. */
struct mercury_sock_view {
	__u32 has_sock;
	__u32 snd_una;
	__u64 bytes_acked;
	const struct mercury_sock_tags *tags;  /* NULL: socket has no tags */
	struct mercury_sock_stats *sock_stats; /* NULL: not counted per socket */
	struct bpf_tcp_sock *tp;	       /* production: the socket (NULL in the test) */
	__u32 test_queued;		       /* test variant: mercury_sock_queued()'s answer */
};

/*
 * Binary search of the socket's sorted, disjoint [start, end) ranges: find the last range
 * starting at or before off, then check that off is before its end. Steps of 16, 8, 4, 2, 1
 * entries from a pointer: constant load offsets, no index multiply, the same five probes for
 * every offset (MERCURY_RANGE_SEARCH_STEPS - 1, plus the final check).
 */
_Static_assert(1 << (MERCURY_RANGE_SEARCH_STEPS - 1) == MERCURY_RANGES_PER_SOCK,
	       "the search's steps must cover the whole range table");

static __always_inline const struct mercury_range *
mercury_find_range(const struct mercury_sock_tags *tags, __u64 off)
{
	const struct mercury_range *r = tags->ranges;
	__u64 n = tags->count, i = 0;

	if (n > MERCURY_RANGES_PER_SOCK)
		n = MERCURY_RANGES_PER_SOCK;
#pragma unroll
	for (int step = MERCURY_RANGES_PER_SOCK / 2; step > 0; step /= 2) {
		if (i + step < n && r[step].start <= off) {
			r += step;
			i += step;
		}
	}
	if (!n || off < r->start || off >= r->end)
		return NULL;
	return r;
}

/*
 * Outcome for a TCP segment with payload, given its socket view; for TAGGED, *band gets the
 * level's band (clamped by the caller, like every band). A job tag's level comes from the
 * job's state now; a tag whose job slot is free or holds another job is JOB_GONE and keeps
 * the default band: demoted, never dropped. Under the job policy "share" a job in a share
 * slot gets its level unshifted and *share = 1 + its slot (the caller then takes the band's
 * priority from the job's own classes); *share stays 0 otherwise.
 */
static __always_inline __u32 mercury_decide(const struct mercury_classify_ctx *c,
					    const struct mercury_sock_view *v, __u64 *band,
					    __u32 *share)
{
	const struct mercury_range *r;
	__u32 level;

	if (!v->has_sock)
		return MERCURY_OUT_NO_OFFSET;
	if (!v->tags)
		return MERCURY_OUT_UNTAGGED;
	r = mercury_find_range(v->tags, mercury_stream_offset(c->seq, v->snd_una, v->bytes_acked));
	if (!r)
		return MERCURY_OUT_TAG_MISS;
	if (r->job) {
		__u32 slot = r->job - 1u;
		const struct mercury_job_state *js = bpf_map_lookup_elem(&jobs, &slot);

		if (!js || !js->active || (__u16)js->gen != r->job_gen)
			return MERCURY_OUT_JOB_GONE;
		if (slot < c->cfg->share_slots) {
			level =
			    mercury_job_level_in_job(js, r->layer, r->iteration, c->cfg->nbands);
			*share = slot + 1;
		} else {
			level = mercury_job_level(js, r->layer, r->iteration, c->cfg->nbands);
		}
	} else {
		level = r->level;
	}
	if (level >= MERCURY_MAX_LEVELS)
		level = MERCURY_MAX_LEVELS - 1;
	barrier_var(level); /* keep the mask: the verifier does not follow the clamp */
	*band = c->cfg->band_of_level[level & (MERCURY_MAX_LEVELS - 1)];
	return MERCURY_OUT_TAGGED;
}

#endif
