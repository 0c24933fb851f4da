/* SPDX-License-Identifier: BSD-2-Clause */
/* Tagging through libmercury (tag.c; a stub in the unit tests). */
#ifndef MERCURY_PS_TAG_H
#define MERCURY_PS_TAG_H

#include "core.h"

int ps_tag_open(struct ps_node *n);
void ps_tag_close(struct ps_node *n);
void ps_tag_iteration(struct ps_node *n, uint64_t iter, bool begin);
int ps_tag_register(struct ps_conn *c);
int ps_tag_next(struct ps_conn *c, uint64_t nbytes, int layer, enum ps_dir dir, uint64_t iter);
void ps_tag_unregister(struct ps_conn *c);
void ps_tag_counts(struct ps_node *n, uint64_t *fastpath, uint64_t *service);
/* Tagged sockets of this node whose packets the classifier has put in more than one band. */
uint64_t ps_tag_split_sockets(struct ps_node *n, uint64_t *split_queues);

#endif
