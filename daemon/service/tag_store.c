// SPDX-License-Identifier: BSD-2-Clause
/* Tagged byte ranges per socket: the pure range table logic and its socket-local storage. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>

#include "tag_store.h"
#include "tag_table.h"

int tags_apply(struct mercury_sock_tags *tags, uint64_t start, const struct tag_piece *pieces,
	       unsigned n, uint64_t acked)
{
	struct mercury_range r[MERCURY_RANGES_PER_SOCK + 1];
	uint32_t new_ranges = 0;
	int err;

	if (n == 0 || n > MERCURY_RANGES_PER_SOCK + 1)
		return n ? -ENOSPC : -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		r[i] = pieces[i].id;
		r[i].start = start;
		r[i].end = start + pieces[i].len;
		if (pieces[i].len == 0 || r[i].end < start ||
		    (!r[i].job && r[i].level >= MERCURY_MAX_LEVELS))
			return -EINVAL;
		if (i == 0 || !tag_range_same(&r[i - 1], &r[i]))
			new_ranges++;
		start = r[i].end;
	}
	if (tags->count > MERCURY_RANGES_PER_SOCK)
		return -EINVAL;
	tag_table_drop_acked(tags, acked);
	if ((err = tag_table_check(tags, &r[0], new_ranges)))
		return err;
	for (unsigned i = 0; i < n; i++)
		tag_table_append(tags, &r[i]);
	tags->generation++;
	return 0;
}

int tags_insert(struct mercury_sock_tags *tags, uint64_t start, uint64_t len, uint32_t level,
		uint64_t acked)
{
	struct tag_piece piece = {.len = len, .id = {.level = (uint8_t)level}};

	if (level >= MERCURY_MAX_LEVELS)
		return -EINVAL;
	return tags_apply(tags, start, &piece, 1, acked);
}

int tag_store_get(int map_fd, int sock_fd, struct mercury_sock_tags *out)
{
	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(map_fd, &sock_fd, out))
		return errno == ENOENT ? 0 : -errno;
	return 0;
}

int tag_store_write(int map_fd, int sock_fd, uint64_t start, const struct tag_piece *pieces,
		    unsigned n, uint64_t owner, uint64_t *first, uint64_t *end)
{
	struct mercury_sock_tags tags;
	uint64_t next, acked;
	int r;

	if (n == 0)
		return -EINVAL;
	if ((r = sock_stream_position(sock_fd, &next, &acked)) ||
	    (r = tag_store_get(map_fd, sock_fd, &tags)))
		return r;
	if (start == TAG_AT_NEXT) {
		/* Tagging ahead: continue where the last tag ended if that is past the writes. */
		start = next;
		if (tags.count && tags.count <= MERCURY_RANGES_PER_SOCK &&
		    tags.ranges[tags.count - 1].end > start)
			start = tags.ranges[tags.count - 1].end;
	}
	*first = start;
	if ((r = tags_apply(&tags, start, pieces, n, acked)))
		return r; /* nothing written: all pieces or none */
	for (unsigned i = 0; i < n; i++)
		start += pieces[i].len;
	tags.owner = owner;
	if (bpf_map_update_elem(map_fd, &sock_fd, &tags, BPF_ANY))
		return -errno;
	*end = start;
	return 0;
}

int tag_store_clear(int map_fd, int sock_fd)
{
	if (bpf_map_delete_elem(map_fd, &sock_fd) && errno != ENOENT)
		return -errno;
	return 0;
}
