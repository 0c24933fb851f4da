/* SPDX-License-Identifier: BSD-2-Clause */
/* The worker role (worker.c): pushes, pulls, the partition scheduler's order; also the public
 * ps_node_push, ps_node_push_inplace and ps_node_pull_ready. Its state (struct
 * ps_worker_state, n->worker) is worker.c's own, under n->mu. */
#ifndef MERCURY_PS_WORKER_H
#define MERCURY_PS_WORKER_H

#include "core.h"

/* After the placement is made: per-layer progress, the push buffers, the scheduler's. */
int ps_worker_init(struct ps_node *n);
void ps_worker_free(struct ps_node *n);
/* A pull h (PULL_DATA header read): its payload read from c's socket or, from this process's
 * own server (c NULL), copied from src. */
int ps_worker_take_pull(struct ps_node *n, struct ps_conn *c, const struct ps_msg_hdr *h,
			const float *src);
/* Partition mode, ranks other than 0: rank 0 dispatched tensor `part` of iteration iter. */
int ps_worker_order(struct ps_node *n, int part, uint64_t iter);
/* ps_node_wait_pull; a timeout's message ends with what why adds. */
int ps_worker_wait_pull(struct ps_node *n, int layer, uint64_t iter, float *out,
			ps_explain_fn *why);
/* Waits until every iteration begun has ended at this node; from then on the servers closing
 * is expected (ps_worker_finished, n->mu held). */
int ps_worker_finish(struct ps_node *n);
bool ps_worker_finished(const struct ps_node *n);
/* The worker's part of a node's result: verify's counts, partition's credit in flight. */
void ps_worker_result(const struct ps_node *n, struct ps_result *res);

#endif
