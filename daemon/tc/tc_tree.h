/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A device's egress qdisc tree — root qdisc, classes, child qdiscs and their filters — saved
 * as rtnetlink messages so that detach can put back exactly what attach --force replaced.
 *
 * The saved form is a sequence of creatable RTM_NEWQDISC / RTM_NEWTCLASS / RTM_NEWTFILTER
 * messages in replay order (parents first), statistics and kernel-computed fields dropped.
 * The clsact/ingress hook and its filters are not part of it: replacing the root does not
 * touch them. Qdiscs the kernel made itself (handle 0) are not saved: they come back by
 * themselves when their parent is created.
 *
 * What the dump does not carry (tc chain templates, estimators, a cls_bpf program) cannot come
 * back; tc_tree_verify() finds every such loss before anything changes, by replaying the
 * tree on a scratch device and comparing.
 */
#ifndef MERCURY_TC_TREE_H
#define MERCURY_TC_TREE_H

#include <stddef.h>
#include <stdint.h>

struct tc_tree {
	uint8_t *buf; /* concatenated netlink messages, malloc'd */
	size_t len;
	size_t cap;
	unsigned count;
};

/* Reads ifindex's root tree. An empty tree (count 0) when the root is the kernel's default. */
int tc_tree_save(int ifindex, struct tc_tree *t, char *err, size_t errlen);

/*
 * Creates the saved tree on ifindex. The root must be the kernel default, or carry the saved
 * root's handle (a replay cut short): that root is deleted first, then everything is created
 * again. Returns 0 or -errno with err naming the object that failed.
 */
int tc_tree_replay(int ifindex, const uint8_t *buf, size_t len, char *err, size_t errlen);

/*
 * Replays the tree on a veth with num_tx_queues queues in a scratch network namespace (a
 * child process; the namespace dies with it), reads it back and compares. 0 when the copy is
 * exact; -ENOTSUP with err naming the first object that came back different or not at all.
 */
int tc_tree_verify(const uint8_t *buf, size_t len, unsigned num_tx_queues, char *err,
		   size_t errlen);

/* Root handle (major << 16) of a saved tree; 0 when empty. */
uint32_t tc_tree_root_handle(const uint8_t *buf, size_t len);

/* Number of messages of a saved tree, or -EINVAL when buf is not a sequence of them. */
int tc_tree_count(const uint8_t *buf, size_t len);

/* A one-line description of message i ("class htb 1:10 parent 1:1") into out. */
void tc_tree_describe(const uint8_t *buf, size_t len, unsigned i, char *out, size_t outlen);

void tc_tree_free(struct tc_tree *t);

/* The same on an open qdisc context (qdisc.h), for the qdisc layer's own rollbacks. */
struct qdisc_ctx;
int tc_tree_save_ctx(struct qdisc_ctx *c, struct tc_tree *t);
int tc_tree_replay_ctx(struct qdisc_ctx *c, const uint8_t *buf, size_t len);

#endif
