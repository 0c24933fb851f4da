/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one header shared by the BPF data path and user space: map keys and values,
 * counters and the per-interface configuration. Changing a layout here means bumping
 * MERCURY_LAYOUT_VERSION, because pinned maps of the old layout cannot be reused.
 */
#ifndef MERCURY_ABI_H
#define MERCURY_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define MERCURY_LAYOUT_VERSION 9

/* Priority levels carried by tags: 0 is the most urgent. */
#define MERCURY_MAX_LEVELS 16
/* No qdisc backend has more bands than this (mqprio: 16 priorities, at most 16 TCs). */
#define MERCURY_MAX_BANDS 16
/* Jobs that get a weighted share of an interface (job policy "share", htb): the jobs in job
 * slots 0 .. MERCURY_SHARE_SLOTS - 1. */
#define MERCURY_SHARE_SLOTS 4
/* Tagged byte ranges kept per socket; power of two so the BPF side can mask indices. */
#define MERCURY_RANGES_PER_SOCK	   32
#define MERCURY_RANGE_SEARCH_STEPS 6 /* ceil(log2(MERCURY_RANGES_PER_SOCK)) + 1 */

/*
 * Stream offsets are counted in the kernel's own terms: offset(seq) =
 * bytes_acked + (s32)(seq - snd_una). Both values come from the connection itself
 * (bpf_tcp_sock() in the classifier, TCP_INFO tcpi_bytes_acked + SIOCOUTQ in user space),
 * so the offset is 64-bit and exact across 32-bit sequence wrap, for retransmissions, and
 * for connections opened before Mercury started. An actively opened socket counts its SYN
 * in bytes_acked, so its first payload byte has offset 1, a passively opened one offset 0.
 */
static inline __u64 mercury_stream_offset(__u32 seq, __u32 snd_una, __u64 bytes_acked)
{
	return bytes_acked + (__u64)(__s64)(__s32)(seq - snd_una);
}

/*
 * [start, end) of a socket's send stream and what it carries. A job tag names (job slot,
 * layer, iteration): its level is decided per packet from the job's state in "jobs", so bytes
 * already queued move up the moment an older iteration ends. A fixed tag (job 0, the admin
 * tool's) carries its level.
 */
struct mercury_range {
	__u64 start;
	__u64 end;
	__u64 iteration; /* job tags: the training step the bytes belong to */
	__u16 job;	 /* 0: fixed level; else 1 + the job's slot in "jobs" */
	__u16 job_gen;	 /* low bits of the slot's generation when tagged */
	__u16 layer;	 /* job tags: 1 .. n_layers */
	__u8 level;	 /* fixed tags: the level */
	__u8 dir;	 /* job tags: 0 push, 1 pull (informational) */
};

/*
 * Value of the socket-local storage map "sock_tags": ranges sorted by start, disjoint,
 * ranges[0..count) valid. mercuryd rewrites the whole value, the tag fast path (a cgroup
 * setsockopt program, run under the socket lock) edits it in place; the classifier only reads.
 * Socket-local storage is freed by the kernel with the socket, so no entry outlives it.
 */
struct mercury_sock_tags {
	__u32 count;
	__u32 generation; /* bumped by every user-space rewrite */
	__u64 owner; /* client id of whoever tagged it (0: admin tool; MERCURY_OWNER_FAST | tgid) */
	struct mercury_range ranges[MERCURY_RANGES_PER_SOCK];
};

#define MERCURY_OWNER_FAST (1ull << 63) /* tagged through the fast path by process tgid */

/* Per-socket byte counters by band, kept by the classifier in "sock_stats", and the band of
 * the socket's last packet (the order guard: a socket moves to a more urgent band only when
 * none of its earlier packets still waits below TCP, or once the guard has held it for
 * cfg.order_guard_us). */
struct mercury_sock_stats {
	__u64 bytes[MERCURY_MAX_BANDS];
	__u64 packets[MERCURY_MAX_BANDS];
	__u32 last_band;      /* band + 1 of the last packet; 0: none yet */
	__u32 guard_since_us; /* low 32 bits of the monotonic clock in us (never 0) when the
			       * guard first held the socket's pending rise; 0: not holding */
	/* The fabric order guard (cfg.dscp_guard): the socket's DSCP moves to a more urgent
	 * band's only once every byte it sent before is acknowledged, so that no packet of
	 * the socket overtakes its own earlier ones in a switch's strict-priority queues. */
	__u32 dscp_band;     /* band + 1 whose DSCP the last marked packet carried; 0: none */
	__u32 dscp_end;	     /* sequence number just past the furthest payload byte sent */
	__u32 dscp_since_us; /* like guard_since_us, for the fabric guard's pending rise */
	__u32 pad;
};

/* What the classifier decided for a packet; one counter pair each. */
enum mercury_outcome {
	MERCURY_OUT_TAGGED = 0, /* payload offset found in a tagged range */
	MERCURY_OUT_TAG_MISS,	/* socket has tags, offset in none of them */
	MERCURY_OUT_UNTAGGED,	/* TCP socket without tags */
	MERCURY_OUT_NO_PAYLOAD, /* pure ACK, SYN, FIN, RST */
	MERCURY_OUT_NO_OFFSET,	/* no full TCP socket to take the offset base from */
	MERCURY_OUT_NOT_TCP,	/* other L4, non-first fragment, non-IP */
	MERCURY_OUT_MALFORMED,	/* truncated or inconsistent headers */
	MERCURY_OUT_JOB_GONE,	/* tagged by a job no longer declared: default band */
	MERCURY_OUT_MAX,
};

struct mercury_counter {
	__u64 packets;
	__u64 bytes;
};

/* Value of the per-CPU array "stats" (one entry): one lookup per packet. */
struct mercury_stats {
	struct mercury_counter band[MERCURY_MAX_BANDS];
	struct mercury_counter outcome[MERCURY_OUT_MAX];
	/* packets kept in their socket's previous, less urgent band because earlier packets of
	 * the socket were still queued there: moving them up would reorder the TCP stream */
	struct mercury_counter order_kept;
	/* packets that moved up although earlier packets of their socket were still queued in a
	 * less urgent band, because the guard had held the socket for cfg.order_guard_us: one
	 * per such rise (the reordering it allows is those queued bytes, once) */
	struct mercury_counter order_released;
	/* packets whose IP header got their band's DSCP (cfg.dscp_on; tagged packets only) */
	struct mercury_counter dscp_marked;
	/* marked packets that carried their socket's previous, less urgent DSCP because bytes
	 * the socket sent before were not yet acknowledged (cfg.dscp_guard): in a switch they
	 * could still wait in a less urgent queue, and a more urgent DSCP would overtake them */
	struct mercury_counter dscp_kept;
	/* marked packets that moved to a more urgent DSCP with unacknowledged bytes before them
	 * because the fabric guard had held the socket for cfg.dscp_guard_us (one per rise) */
	struct mercury_counter dscp_released;
};

/* The order guard's bound mercuryd writes into cfg.order_guard_us: a level rise takes effect
 * at most this long after the guard first held it, whatever the other traffic does. */
#define MERCURY_ORDER_GUARD_US 4000

/* The fabric order guard's default bound (cfg.dscp_guard_us; mercuryd attach --dscp-guard):
 * 0, none: a rise waits until the socket's earlier bytes are acknowledged. */
#define MERCURY_DSCP_GUARD_US 0

/* Value of the array "cfg" (one entry), written by mercuryd at attach. */
struct mercury_iface_cfg {
	__u32 nbands;
	__u32 default_band;
	__u32 band_of_level[MERCURY_MAX_LEVELS]; /* level -> band, each < nbands */
	__u32 skb_priority[MERCURY_MAX_BANDS];	 /* band -> skb->priority for the backend */
	/* DSCP export: when dscp_on, a tagged packet's IP header (IPv4 TOS / IPv6 traffic class)
	 * gets dscp[band] in its 6 DSCP bits, ECN bits kept, the IPv4 header checksum fixed;
	 * other packets are left untouched. */
	__u32 dscp_on;
	__u8 dscp[MERCURY_MAX_BANDS]; /* band -> DSCP value 0..63 */
	/* The order guard's bound: a socket held in its previous band (its earlier packets still
	 * queued in a less urgent one) moves up once held this long. 0: no bound. */
	__u32 order_guard_us;
	/* The fabric order guard (with dscp_on): a socket's DSCP moves to a more urgent band's
	 * only once the bytes it sent before are acknowledged (moves to a less urgent band's
	 * never wait: a strict-priority queue ahead drains first), or once held for
	 * dscp_guard_us (0: no bound). Off: each packet carries its own band's DSCP. */
	__u32 dscp_guard;
	__u32 dscp_guard_us;
	/* Job policy "share": a job tag of job slot s < share_slots ignores the job's shift and
	 * takes skb_priority_share[s][band] (the band's leaf under the job's own htb class,
	 * whose assured rate follows the job's weight); everything else skb_priority[band].
	 * 0: policy "priority" (weights buy bands: the shift). */
	__u32 share_slots;
	__u32 skb_priority_share[MERCURY_SHARE_SLOTS][MERCURY_MAX_BANDS];
	/* TCP segments without payload (pure ACKs, SYN, FIN, RST): 1, band 0 and, with dscp_on,
	 * dscp[0] where they carry DSCP 0 (an application's own DSCP is kept), so that the ACKs
	 * of a flow into this host never wait behind its tagged traffic, here or in a strict-
	 * priority switch queue; 0, the default band and their DSCP untouched. */
	__u32 control_first;
};

/*
 * Job state, written by mercuryd on job declare, iteration begin/end and job removal; read by
 * the classifier for every tagged packet and by the tag fast path. Array "jobs", one entry a
 * slot; hash "job_ids" finds a user's job: (uid, job) -> slot.
 */
#define MERCURY_MAX_JOBS 64
struct mercury_job_state {
	__u32 gen;	/* bumped when the slot gets a new job: its tags do not carry over */
	__u32 active;	/* 0: slot free, tags naming it go to the default band */
	__u32 uid;	/* owner: job ids are per user */
	__u32 job;	/* id in the owner's namespace */
	__u32 n_layers; /* layers 1 .. n_layers, 1 = input side */
	__u32 weight;
	__u32 shift;	/* levels the job yields to heavier jobs: log2(max weight / weight) */
	__u32 has_open; /* an iteration is open: oldest_open is valid */
	__u64 oldest_open;
	__u64 ended_mask; /* bit i: iteration oldest_open + i has ended (kept for a restart) */
};

struct mercury_job_key {
	__u32 uid;
	__u32 job;
};

/*
 * The tag fast path: setsockopt(fd, MERCURY_SOL, MERCURY_SO_TAG, &tag, size) on a TCP socket
 * of a process in the cgroup mercuryd attached it to. A private option level: the kernel's
 * own setsockopt never sees it; without the program the call fails with ENOPROTOOPT (the
 * caller then uses the service). Errors are the service's (include/mercury.h).
 */
#define MERCURY_SOL	    0x4d455243 /* "MERC" */
#define MERCURY_SO_TAG	    1
#define MERCURY_FAST_BATCH  8
#define MERCURY_OFFSET_NEXT (~0ull) /* from the socket's next write (or its last tag's end) */

struct mercury_fast_tensor {
	__u64 len;
	__u32 layer;
	__u32 dir;
	__u64 iteration;
};

struct mercury_fast_tag {
	__u32 job;
	__u32 count; /* 1 .. MERCURY_FAST_BATCH tensors follow, written back to back */
	__u64 offset;
	struct mercury_fast_tensor t[MERCURY_FAST_BATCH];
};
/* The option's size for n tensors. */
#define MERCURY_FAST_TAG_SIZE(n) (16 + 24 * (n))

/* Value of the array "fastpath_state" (one entry, pinned next to the fast path's link):
 * where `mercuryd fastpath attach` put the program, for status and detach. */
struct mercury_fastpath_state {
	__u32 layout_version;
	__u32 pad;
	__u64 cgroup_id;      /* inode of the cgroup v2 directory */
	__u64 attached_at_ns; /* CLOCK_REALTIME */
	char cgroup[256];     /* its path when attached */
};

/* Qdisc backends; the order is the CLI's. */
enum mercury_backend {
	MERCURY_BACKEND_NONE = 0,
	MERCURY_BACKEND_MQPRIO,
	MERCURY_BACKEND_PRIO,
	MERCURY_BACKEND_ETS,
	MERCURY_BACKEND_HTB,
	MERCURY_BACKEND_TBF,
	MERCURY_BACKEND_MAX,
};

/* What a job's weight buys on an interface (mercuryd attach --job-policy). */
enum mercury_job_policy {
	MERCURY_POLICY_PRIORITY = 0, /* bands: a lighter job yields log2(w_max / w) bands */
	MERCURY_POLICY_SHARE,	     /* link share: htb assured rate proportional to weight */
};

enum mercury_hook {
	MERCURY_HOOK_NONE = 0,
	MERCURY_HOOK_TCX,
	MERCURY_HOOK_CLSACT,
};

/*
 * Value of the array "saved_tree" (one entry): the qdisc tree that attach --force replaced
 * (root, classes, child qdiscs, filters) as the rtnetlink messages that create it again, in
 * that order (daemon/tc_tree.h). detach replays them.
 */
#define MERCURY_SAVED_TREE_MAX 65528
struct mercury_saved_tree {
	__u32 len;   /* bytes of msgs in use */
	__u32 count; /* messages */
	__u8 msgs[MERCURY_SAVED_TREE_MAX];
};

/*
 * Value of the array "attach_state" (one entry): what attach did, so that detach undoes
 * exactly that and a restarted daemon reports the same state. Lives in a pinned map because
 * bpffs holds no regular files.
 */
struct mercury_attach_state {
	__u32 layout_version;
	__u32 ifindex;
	__u32 backend; /* enum mercury_backend */
	__u32 hook;    /* enum mercury_hook */
	__u32 nbands;
	__u32 default_band;
	__u64 rate_bps;	    /* htb/tbf bottleneck, bytes per second; 0 when unused */
	__u32 qdisc_handle; /* root qdisc Mercury created (major << 16) */
	__u32 tc_handle;    /* clsact filter handle (clsact hook only) */
	__u32 tc_priority;  /* clsact filter priority (clsact hook only) */
	__u32 created_clsact;
	__u32 mqprio_hw;       /* mqprio: 1 when offloaded to the NIC */
	__u32 saved_tree_len;  /* bytes in "saved_tree"; 0 when the old root was the default */
	__u64 attached_at_ns;  /* CLOCK_REALTIME */
	__u64 netns_ino;       /* inode of the network namespace of ifindex (/proc/self/ns/net) */
	__u32 saved_tree_objs; /* qdiscs, classes and filters in "saved_tree" */
	__u32 saved_root;      /* handle of the replaced root (major << 16); 0 when none */
	__u32 dscp_on;	       /* the DSCP export cfg has (kept here so re-attach is exact) */
	__u8 dscp[MERCURY_MAX_BANDS];
	__u32 dscp_guard; /* cfg.dscp_guard and cfg.dscp_guard_us, kept likewise */
	__u32 dscp_guard_us;
	__u32 job_policy;    /* enum mercury_job_policy */
	__u32 control_first; /* cfg.control_first, kept likewise */
};

#endif /* MERCURY_ABI_H */
