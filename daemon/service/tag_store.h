/* SPDX-License-Identifier: BSD-2-Clause */
/* Tagged byte ranges of sockets, held in the pinned socket-local storage map "sock_tags". */
#ifndef MERCURY_TAG_STORE_H
#define MERCURY_TAG_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "mercury_abi.h"
#include "tcp_stream.h" /* sock_stream_position() */

/*
 * What `len` bytes carry: a job tag (id.job = 1 + slot, id.job_gen, id.layer, id.dir,
 * id.iteration) or a fixed level (id.job 0, id.level). id.start and id.end are ignored.
 */
struct tag_piece {
	uint64_t len;
	struct mercury_range id;
};

/*
 * Pure range logic (no syscalls) under tag_store_write(), the same edits as the tag fast path
 * (common/tag_table.h). Appends n pieces back to back from `start`, all or none. Ranges wholly
 * below `acked` (bytes the peer has acknowledged, in stream-offset terms) are dropped first to
 * make room. A piece that overlaps or precedes the last tagged range is -EEXIST (tags on a
 * socket go forward); a full table -ENOSPC; an empty piece, a wrap or a fixed level out of
 * range -EINVAL. Adjacent pieces with the same job, layer, iteration (or level) merge.
 */
int tags_apply(struct mercury_sock_tags *tags, uint64_t start, const struct tag_piece *pieces,
	       unsigned n, uint64_t acked);
/* One fixed-level piece. */
int tags_insert(struct mercury_sock_tags *tags, uint64_t start, uint64_t len, uint32_t level,
		uint64_t acked);

#define TAG_AT_NEXT UINT64_MAX /* start: where the socket's next write lands */

/*
 * The one way tags are written (the admin `tag` command and the event service): n pieces
 * back to back from `start` (or TAG_AT_NEXT: the next write, or after the last tag if that
 * is further) into sock_fd's entry of map_fd, in one map write, all or none. *first and *end
 * get the tagged span. Errors: those of tags_apply(), -ENOTCONN (not connected), -errno.
 */
int tag_store_write(int map_fd, int sock_fd, uint64_t start, const struct tag_piece *pieces,
		    unsigned n, uint64_t owner, uint64_t *first, uint64_t *end);
int tag_store_get(int map_fd, int sock_fd, struct mercury_sock_tags *out);
int tag_store_clear(int map_fd, int sock_fd);

#endif
