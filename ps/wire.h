/* SPDX-License-Identifier: BSD-2-Clause */
/* The PS wire protocol (wire.c): one header per message, then its floats. */
#ifndef MERCURY_PS_WIRE_H
#define MERCURY_PS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PS_MAGIC 0x4d505331u /* "MPS1" */

enum ps_msg_type {
	PS_MSG_HELLO = 1, /* worker -> server: layer = worker rank, slice = connection index,
			   * iter = the worker's model layout hash */
	PS_MSG_READY,	  /* server -> worker: every worker's connections are in */
	PS_MSG_PUSH,	  /* worker -> server: gradient floats [off, off+len) of a slice */
	PS_MSG_ORDER,	  /* rank 0's worker -> server (partition): rank 0 dispatched tensor
			   * `off` of iteration `iter`; the server's own worker follows suit */
	PS_MSG_PULL_DATA, /* server -> worker: aggregated floats [off, off+len) */
	PS_MSG_BYE,	  /* worker -> server: done, closing is no error from now on */
	PS_MSG_REFUSE,	  /* server -> worker: HELLO's layout (iter) is not the server's */
};

struct ps_msg_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t pad;
	uint32_t layer;
	uint32_t slice; /* index in the placement */
	uint64_t iter;
	uint64_t off; /* parameters, within the slice */
	uint64_t len; /* parameters; payload is len * 4 bytes for PUSH and PULL_DATA */
};

int ps_read_full(int fd, void *buf, size_t len);
int ps_write_msg(int fd, const struct ps_msg_hdr *h, const void *payload, size_t payload_len);

#endif
