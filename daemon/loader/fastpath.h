/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tag fast path (bpf/tag_fastpath.bpf.c): a cgroup setsockopt program through which a
 * process tags its own sockets without a round trip to mercuryd. Attached once per node to a
 * cgroup v2 directory (default: the hierarchy's root, every process), pinned as a link under
 * the pin root so that it outlives mercuryd:
 *   <root>/fastpath_link, <root>/fastpath_state
 */
#ifndef MERCURY_FASTPATH_H
#define MERCURY_FASTPATH_H

#include <stdbool.h>
#include <stddef.h>

#include "mercury_abi.h"

/* The cgroup v2 mount point (the first in /proc/self/mounts); -ENOENT when none. */
int fastpath_cgroup2_root(char *buf, size_t len);

/* Attaches the program to cgroup (NULL: the cgroup v2 root) and pins it; the shared maps
 * are created if absent. Idempotent for the same cgroup; -EEXIST (err says where) when it
 * is attached elsewhere. Call under the pin lock. */
int fastpath_attach(const char *root, const char *cgroup, char *err, size_t errlen);

/* Detaches and removes its pins; 0 when it was not attached. Call under the pin lock. */
int fastpath_detach(const char *root, char *err, size_t errlen);
/* When no interface is attached any more: detaches the tag fast path, then removes the
 * shared maps and the root directory. */
void fastpath_release_unused(const char *root);

/* 0 and *st when attached (prog_id: the program's id, 0 if the link is gone); -ENOENT when
 * not; another -errno when the pins cannot be read. */
int fastpath_state(const char *root, struct mercury_fastpath_state *st, unsigned *prog_id);

#endif
