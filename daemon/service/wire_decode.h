/* SPDX-License-Identifier: BSD-2-Clause */
/* Decoding and validation of event frames (pure, fuzzed). */
#ifndef MERCURY_WIRE_DECODE_H
#define MERCURY_WIRE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include "mercury_wire.h"

struct mw_msg {
	uint16_t type;
	uint32_t seq;
	union {
		struct {
			uint32_t job, n_layers, weight;
		} job;
		struct {
			uint32_t job;
			uint64_t iteration;
		} iter;
		struct {
			uint32_t job, count;
			uint64_t offset;
			struct mw_tensor t[MW_MAX_BATCH];
		} tag;
	};
};

/*
 * Decodes buf[0..n) into m. has_fd: an fd arrived with the frame. Errors, each its own:
 *  -EBADMSG   truncated, or len field != bytes received, or wrong size for the type
 *  -EMSGSIZE  frame larger than MW_MAX_FRAME
 *  -EPROTO    unsupported version
 *  -EOPNOTSUPP unknown type
 *  -EBADF     the type needs a socket fd and none came
 *  -EINVAL    a field out of range (count, dir, len 0, ranges that overflow, reserved != 0),
 *             or an fd sent with a type that takes none
 * m->seq is set as soon as the header could be read (so the reply can echo it).
 */
int mw_decode(const void *buf, size_t n, bool has_fd, struct mw_msg *m);

/* True for frame types that carry a socket fd. */
bool mw_type_takes_fd(uint16_t type);

#endif
