/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A long-running user of pinned maps (mercuryd serve) keeps its fds the maps that are pinned
 * now: what the classifier reads. detach removes the shared pins when the last interface goes,
 * and a later attach would create new maps; a service still writing into the old ones would
 * acknowledge tags that classify nothing.
 */
#ifndef MERCURY_MAP_SYNC_H
#define MERCURY_MAP_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pinned_map {
	const char *name; /* pin name under the root, e.g. "sock_tags" */
	uint32_t type;	  /* enum bpf_map_type and value size this binary reads and writes */
	uint32_t value_size;
	int fd;
	uint32_t id; /* kernel map id of fd */
	ino_t ino;   /* inode of the pin fd was opened from (0: not pinned by us) */
};

/* Records fd (opened from <root>/<name>) as the map in use. */
int pinned_map_track(const char *root, struct pinned_map *m, int fd);

/*
 * One stat() when nothing changed. If the pin is gone, pins the map in use again (under the
 * pin lock) so that the next attach reuses it and every tag written so far keeps counting.
 * If the pin now holds another map, switches to that one. Returns 0 (note set to a line
 * saying what changed, or "") or -errno with note saying why the map cannot be used.
 */
int pinned_map_sync(const char *root, struct pinned_map *m, char *note, size_t notelen);

#endif
