/* Tagged byte ranges of sockets, held in the pinned socket-local storage map "sock_tags". */
#ifndef MERCURY_TAG_STORE_H
#define MERCURY_TAG_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "mercury_abi.h"

/*
 * Pure range logic (no syscalls), shared by the admin `tag` command and the event service.
 * Inserts [start, start+len) at `level` into `tags`. Ranges wholly below `acked` (bytes the
 * peer has acknowledged, in stream-offset terms) are dropped first to make room. A range
 * that overlaps or precedes the last tagged range is rejected (-EINVAL, "out of order");
 * a full table gives -ENOSPC. Adjacent ranges of the same level are merged.
 */
int tags_insert(struct mercury_sock_tags *tags, uint64_t start, uint64_t len, uint32_t level,
		uint64_t acked);

/* Index of the range holding `offset`, or -1. Same search the classifier runs. */
int tags_find(const struct mercury_sock_tags *tags, uint64_t offset);

/* The socket's stream offset of the next byte written and of the first unacknowledged byte
 * (TCP_INFO tcpi_bytes_acked + SIOCOUTQ), in the classifier's offset terms. */
int sock_stream_position(int sock_fd, uint64_t *next_write, uint64_t *acked);

/* Reads, changes and writes back the tags of `sock_fd` in the map `map_fd`. */
int tag_store_add(int map_fd, int sock_fd, uint64_t start, uint64_t len, uint32_t level,
		  uint64_t owner);
int tag_store_get(int map_fd, int sock_fd, struct mercury_sock_tags *out);
int tag_store_clear(int map_fd, int sock_fd);

#endif
