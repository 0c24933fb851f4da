// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The tag fast path: a cgroup setsockopt program that takes a Mercury tag on the caller's
 * own TCP socket (option level MERCURY_SOL) and writes it into the socket's range table
 * without a round trip to mercuryd. It checks what the service checks, with the same codes
 * (include/mercury.h), and edits the table with the same code (common/tag_table.h). Every
 * other option passes through untouched. Ownership is implicit: a process can only call
 * setsockopt on descriptors it holds; the job must be one the caller's uid declared.
 * The kernel runs the program under the socket lock, so two tags on one socket serialise.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "mercury_abi.h"
#include "shared_maps.h"

#define EPERM		1
#define ESRCH		3
#define ENOMEM		12
#define EEXIST		17
#define EINVAL		22
#define ERANGE		34
#define ENOSPC		28
#define EPROTOTYPE	91
#define EOPNOTSUPP	95
#define ENOTCONN	107
#define TCP_ESTABLISHED 1
#define TCP_CLOSE_WAIT	8

#include "tag_table.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Unused by the code: created BTF-typed for mercuryd to pin (where the program is attached). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_fastpath_state);
} fastpath_state SEC(".maps");

/*
 * The stream offset of the socket's next write: bytes_acked + (write_seq - snd_una), what
 * TCP_INFO + SIOCOUTQ give user space. struct bpf_tcp_sock has no write_seq and this program
 * type may not cast to struct tcp_sock, so it is read with bpf_probe_read_kernel() at its
 * CO-RE offset from the socket's address (taken as a number through the stack: the verifier
 * allows no arithmetic on socket pointers).
 */
static __always_inline int next_write(struct bpf_sock *sk, const struct bpf_tcp_sock *tp,
				      __u64 *next)
{
	struct bpf_sock *volatile spilled = sk;
	__u64 addr = 0;
	__u32 write_seq = 0;

	if (bpf_probe_read_kernel(&addr, sizeof(addr), (const void *)&spilled) || !addr)
		return -EOPNOTSUPP;
	if (bpf_probe_read_kernel(
		&write_seq, sizeof(write_seq),
		(const void *)(addr + bpf_core_field_offset(struct tcp_sock, write_seq))))
		return -EOPNOTSUPP;
	*next = tp->bytes_acked + (__u32)(write_seq - tp->snd_una);
	return 0;
}

/* -EPERM when another user has a job of this id, -ESRCH when nobody has. */
static __always_inline int unknown_job(__u32 job)
{
	for (__u32 i = 0; i < MERCURY_MAX_JOBS; i++) {
		__u32 slot = i;
		const struct mercury_job_state *js = bpf_map_lookup_elem(&jobs, &slot);

		if (js && js->active && js->job == job)
			return -EPERM;
	}
	return -ESRCH;
}

static __always_inline int fast_tag(struct bpf_sockopt *ctx)
{
	const struct mercury_fast_tag *req = ctx->optval;
	const struct mercury_job_state *js;
	struct mercury_range r[MERCURY_FAST_BATCH];
	struct mercury_job_key key;
	struct mercury_sock_tags *tags;
	struct bpf_tcp_sock *tp;
	struct bpf_sock *sk = ctx->sk;
	__u32 count, new_ranges = 0, *slotp, slot;
	__u64 start, next;
	int err;

	if (ctx->optname != MERCURY_SO_TAG)
		return -EOPNOTSUPP;
	if ((void *)req + MERCURY_FAST_TAG_SIZE(1) > ctx->optval_end)
		return -EINVAL;
	count = req->count;
	if (count == 0 || count > MERCURY_FAST_BATCH ||
	    ctx->optlen != (int)MERCURY_FAST_TAG_SIZE(count))
		return -EINVAL;
	if (!sk)
		return -EPROTOTYPE;
	tp = bpf_tcp_sock(sk);
	if (!tp)
		return -EPROTOTYPE;
	if (sk->state != TCP_ESTABLISHED && sk->state != TCP_CLOSE_WAIT)
		return -ENOTCONN;

	key.uid = (__u32)bpf_get_current_uid_gid();
	key.job = req->job;
	slotp = bpf_map_lookup_elem(&job_ids, &key);
	if (!slotp)
		return unknown_job(req->job);
	slot = *slotp;
	js = bpf_map_lookup_elem(&jobs, &slot);
	if (!js || !js->active || js->uid != key.uid || js->job != key.job)
		return -ESRCH;

	if ((err = next_write(sk, tp, &next)))
		return err;
	tags = bpf_sk_storage_get(&sock_tags, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!tags)
		return -ENOMEM;
	start = req->offset;
	if (start == MERCURY_OFFSET_NEXT) {
		/* Tagging ahead: continue where the last tag ended if that is past the writes. */
		__u64 end = tag_table_end(tags);

		start = end > next ? end : next;
	}

	/* The per-piece steps of tags_apply() (daemon/service/tag_store.c), written out: a shared
	 * helper returning 0, 1 or -EINVAL made the verifier walk 820 k instructions instead of 110
	 * k. */
	for (__u32 i = 0; i < MERCURY_FAST_BATCH; i++) {
		const struct mercury_fast_tensor *t = &req->t[i];

		if (i >= count)
			break;
		if ((void *)(t + 1) > ctx->optval_end)
			return -EINVAL;
		if (t->layer == 0 || t->layer > js->n_layers)
			return -ERANGE;
		if (t->len == 0 || start + t->len < start || t->dir > 1)
			return -EINVAL;
		r[i] = (struct mercury_range){.start = start,
					      .end = start + t->len,
					      .iteration = t->iteration,
					      .job = (__u16)(slot + 1),
					      .job_gen = (__u16)js->gen,
					      .layer = (__u16)t->layer,
					      .dir = (__u8)t->dir};
		if (i == 0 || !tag_range_same(&r[(i - 1) & (MERCURY_FAST_BATCH - 1)], &r[i]))
			new_ranges++;
		start += t->len;
	}

	tag_table_drop_acked(tags, tp->bytes_acked);
	if ((err = tag_table_check(tags, &r[0], new_ranges)))
		return err;
	for (__u32 i = 0; i < MERCURY_FAST_BATCH; i++) {
		if (i >= count)
			break;
		tag_table_append(tags, &r[i]);
	}
	tags->generation++;
	tags->owner = MERCURY_OWNER_FAST | (bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("cgroup/setsockopt")
int mercury_tag_setsockopt(struct bpf_sockopt *ctx)
{
	int err;

	if (ctx->level != MERCURY_SOL)
		return 1; /* not ours: the kernel handles it as if we were not here */
	err = fast_tag(ctx);
	if (err) {
		bpf_set_retval(err);
		return 0;
	}
	ctx->optlen = -1; /* handled: the kernel's setsockopt never sees the option */
	return 1;
}
