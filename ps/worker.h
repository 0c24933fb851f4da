/* SPDX-License-Identifier: BSD-2-Clause */
/* The worker role (worker.c): pushes, pulls, the partition scheduler's order. */
#ifndef MERCURY_PS_WORKER_H
#define MERCURY_PS_WORKER_H

#include "core.h"

/* A pull (PULL_DATA header + payload) from this process's own server, taken from memory. */
int ps_worker_local_pull(struct ps_node *n, const struct ps_msg_hdr *h, const float *data);
void *ps_worker_rx(void *arg);
/* Partition mode, ranks other than 0: rank 0 dispatched tensor `part` of iteration iter. */
int ps_worker_order(struct ps_node *n, int part, uint64_t iter);
int ps_worker_wait_ready(struct ps_node *n);

#endif
