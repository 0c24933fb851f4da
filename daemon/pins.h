/* The pin tree under /sys/fs/bpf/mercury: bpffs mount, lock, per-interface and global pins. */
#ifndef MERCURY_PINS_H
#define MERCURY_PINS_H

#include <stddef.h>

/*
 * Layout (versioned by MERCURY_LAYOUT_VERSION in the directory name of nothing: the
 * attach_state map records it):
 *   <root>/sock_tags, <root>/sock_stats      shared by all interfaces (socket-local storage)
 *   <root>/<iface>/prog, link (TCX only), cfg, stats, attach_state
 */

/* Mounts bpffs on /sys/fs/bpf if <root> is under it and nothing is mounted there, then
 * creates <root> and its missing parents (the nearest existing one must be on bpffs). */
int pins_prepare(const char *root, char *err, size_t errlen);

/* flock(LOCK_EX) on <root>; returns the fd to close to unlock, or -errno. Serialises
 * concurrent mercuryd invocations. */
int pins_lock(const char *root, char *err, size_t errlen);

/* fds of the shared maps, created (by loading the classifier object, not attaching it) and
 * pinned if absent. Caller closes them. */
int pins_global_maps(const char *root, int *sock_tags_fd, int *sock_stats_fd, char *err,
		     size_t errlen);

/* "<root>/<iface>/<name>" into buf. */
int pins_path(char *buf, size_t len, const char *root, const char *iface, const char *name);

#endif
