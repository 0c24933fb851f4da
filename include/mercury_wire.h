/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The event wire protocol between libmercury and mercuryd, over a SOCK_SEQPACKET Unix
 * socket: one frame per message, every frame starts with struct mw_hdr whose len is the
 * frame's total size (checked against what arrived). All integers little-endian. Frames
 * that name a socket (REGISTER, TAG, STATS) carry its fd as SCM_RIGHTS ancillary data.
 * Every request gets exactly one struct mw_reply with the request's seq.
 */
#ifndef MERCURY_WIRE_H
#define MERCURY_WIRE_H

#include <stdint.h>

#define MW_VERSION     1
#define MW_MAX_FRAME   1024
#define MW_MAX_BATCH   32
#define MW_OFFSET_NEXT UINT64_MAX /* tag from the socket's next write position */

enum mw_type {
	MW_JOB_DECLARE = 1,
	MW_ITER_BEGIN = 2,
	MW_ITER_END = 3,
	MW_REGISTER = 4, /* + fd */
	MW_TAG = 5,	 /* + fd */
	MW_STATS = 6,	 /* + fd */
	MW_REPLY = 128,
};

struct mw_hdr {
	uint32_t len; /* whole frame, header included */
	uint16_t version;
	uint16_t type;
	uint32_t seq;
	uint32_t reserved; /* 0 */
};

struct mw_job_declare {
	struct mw_hdr h;
	uint32_t job;
	uint32_t n_layers; /* 1 .. MW_MAX_LAYERS */
	uint32_t weight;   /* 1 .. MW_MAX_WEIGHT */
	uint32_t reserved;
};
#define MW_MAX_LAYERS 65535
#define MW_MAX_WEIGHT 1000

struct mw_iter {
	struct mw_hdr h;
	uint32_t job;
	uint32_t reserved;
	uint64_t iteration;
};

struct mw_register {
	struct mw_hdr h;
};

struct mw_tensor {
	uint64_t len;
	uint32_t layer;
	uint32_t dir; /* 0 push, 1 pull */
	uint64_t iteration;
};

/* count tensors back to back from offset (or MW_OFFSET_NEXT). */
struct mw_tag {
	struct mw_hdr h;
	uint32_t job;
	uint32_t count; /* 1 .. MW_MAX_BATCH */
	uint64_t offset;
	struct mw_tensor t[];
};

struct mw_stats_req {
	struct mw_hdr h;
};

struct mw_reply {
	struct mw_hdr h;
	int32_t status;	      /* 0 or a negative errno (see mercury_strerror) */
	uint32_t count;	      /* TAG: ranges written */
	uint64_t start;	      /* TAG: first byte tagged */
	uint64_t end;	      /* TAG: one past the last */
	uint64_t bytes[16];   /* STATS */
	uint64_t packets[16]; /* STATS */
};

#endif /* MERCURY_WIRE_H */
