/* Tagged byte ranges of sockets, held in the pinned socket-local storage map "sock_tags". */
#ifndef MERCURY_TAG_STORE_H
#define MERCURY_TAG_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "mercury_abi.h"

/*
 * Pure range logic (no syscalls) under tag_store_write(). Inserts [start, start+len) at
 * `level` into `tags`. Ranges wholly below `acked` (bytes the peer has acknowledged, in
 * stream-offset terms) are dropped first to make room. A range that overlaps or precedes the
 * last tagged range is -EEXIST (tags on a socket go forward); a full table -ENOSPC; an empty
 * range, a wrap or a level out of range -EINVAL. Adjacent ranges of the same level merge.
 */
int tags_insert(struct mercury_sock_tags *tags, uint64_t start, uint64_t len, uint32_t level,
		uint64_t acked);

/* The socket's stream offset of the next byte written and of the first unacknowledged byte
 * (TCP_INFO tcpi_bytes_acked + SIOCOUTQ), in the classifier's offset terms. */
int sock_stream_position(int sock_fd, uint64_t *next_write, uint64_t *acked);

#define TAG_AT_NEXT UINT64_MAX /* start: where the socket's next write lands */

struct tag_piece {
	uint64_t len;
	uint32_t level;
};

/*
 * The one way tags are written (the admin `tag` command and the event service): n pieces
 * back to back from `start` (or TAG_AT_NEXT: the next write, or after the last tag if that
 * is further) into sock_fd's entry of map_fd, in one map write, all or none. *first and *end
 * get the tagged span. Errors: those of tags_insert(), -ENOTCONN (not connected), -errno.
 */
int tag_store_write(int map_fd, int sock_fd, uint64_t start, const struct tag_piece *pieces,
		    unsigned n, uint64_t owner, uint64_t *first, uint64_t *end);
int tag_store_get(int map_fd, int sock_fd, struct mercury_sock_tags *out);
int tag_store_clear(int map_fd, int sock_fd);

#endif
