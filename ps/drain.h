/* SPDX-License-Identifier: BSD-2-Clause */
/* Iteration end (drain.c): both halves done and every owed pull acknowledged. Its state
 * (struct ps_drain_state, n->drain) is drain.c's own, under n->mu. */
#ifndef MERCURY_PS_DRAIN_H
#define MERCURY_PS_DRAIN_H

#include "core.h"

/* After the placement is made: the pulls this node's server owes per iteration. */
int ps_drain_init(struct ps_node *n);
void ps_drain_free(struct ps_node *n);
/* One side of iteration `iter` is done at this node (n->mu held): ends it when both are
 * (and, with the drainer running, once every pull of it is acknowledged). */
void ps_iteration_side_done(struct ps_node *n, uint64_t iter, bool worker_side);
int ps_drain_start(struct ps_node *n);
/* Whether the drainer runs: iterations then end only once their pulls are acknowledged. */
bool ps_drain_running(const struct ps_node *n);
/* Whether every server connection from *next on (flattened worker x connection index) has
 * iteration slot i's pulls acknowledged; on false, *next is the first that has not. */
bool ps_drain_slot_done(struct ps_node *n, int i, int *next);
extern long ps_drain_poll_ns;	       /* the drainer's poll period */
void ps_drain_stop(struct ps_node *n); /* after n->closing is set */

#endif
