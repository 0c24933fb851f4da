/* SPDX-License-Identifier: BSD-2-Clause */
/* A connection's send queue (sendq.c): messages in (key, seq) order for its tx thread. */
#ifndef MERCURY_PS_SENDQ_H
#define MERCURY_PS_SENDQ_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct ps_send_item {
	struct ps_msg_hdr h;
	const void *data; /* payload (h.len floats for PUSH/PULL_DATA), not owned */
	uint64_t key;	  /* lower first; ties in enqueue order */
	uint64_t seq;
	double not_before; /* ps_now() time before which it is not written (the op's start-up) */
};

/* A connection's send queue, drained by its tx thread in (key, seq) order. */
struct ps_sendq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ps_send_item *heap;
	int n, cap;
	uint64_t seq;
	bool closed;
};

void ps_sendq_init(struct ps_sendq *q);
void ps_sendq_destroy(struct ps_sendq *q);
int ps_sendq_push(struct ps_sendq *q, const struct ps_send_item *it);
/* Blocks; false once closed. */
bool ps_sendq_pop(struct ps_sendq *q, struct ps_send_item *out);
void ps_sendq_close(struct ps_sendq *q);

#endif
