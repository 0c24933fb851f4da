/* SPDX-License-Identifier: BSD-2-Clause */
/* The pin tree under /sys/fs/bpf/mercury: bpffs mount, lock, per-interface and global pins. */
#ifndef MERCURY_PINS_H
#define MERCURY_PINS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/*
 * Layout (versioned by MERCURY_LAYOUT_VERSION in the directory name of nothing: the
 * attach_state map records it):
 *   <root>/sock_tags, sock_stats, jobs, job_ids   shared by all interfaces and the fast path
 *   <root>/fastpath/prog, link                  the tag fast path (fastpath.c)
 *   <root>/<iface>/prog, link (TCX only), cfg, stats, attach_state, saved_tree
 */

/* Names of the pins in <root>/<iface>/. */
#define PIN_PROG       "prog"
#define PIN_LINK       "link"
#define PIN_CFG	       "cfg"
#define PIN_STATS      "stats"
#define PIN_STATE      "attach_state"
#define PIN_SAVED_TREE "saved_tree"

/* Mounts bpffs on /sys/fs/bpf if <root> is under it and nothing is mounted there, then
 * creates <root> and its missing parents (the nearest existing one must be on bpffs). */
int pins_prepare(const char *root, char *err, size_t errlen);

/* flock(LOCK_EX) on <root>; returns the fd to close to unlock, or -errno. Serialises
 * concurrent mercuryd invocations. -ENOENT when <root> was removed (or replaced) while
 * waiting: the lock would guard nothing. */
int pins_lock(const char *root, char *err, size_t errlen);

/* pins_prepare, then pins_lock; again (a few times) when the root was removed meanwhile. */
int pins_prepare_lock(const char *root, char *err, size_t errlen);

/* The maps shared by every interface and the tag fast path (bpf/shared_maps.h). */
enum global_map { GM_SOCK_TAGS, GM_SOCK_STATS, GM_JOBS, GM_JOB_IDS, GM_COUNT };

struct global_map_def {
	const char *name; /* pin name under the root, and the map's name in every object */
	unsigned type;	  /* enum bpf_map_type */
	unsigned value_size;
};
extern const struct global_map_def global_maps[GM_COUNT];

/* fds of the shared maps, reused from their pins or created and pinned; a pinned map of
 * another layout is refused naming both layouts (-EEXIST). Caller closes them. */
int pins_global_maps(const char *root, int fds[GM_COUNT], char *err, size_t errlen);

/* 0 when fd is a map of this type and value size (*id, if not NULL, gets its id); -EPROTO
 * with err naming both layouts and the layout version, or -errno, otherwise. */
int pins_check_layout(int fd, const char *path, unsigned type, unsigned value_size, __u32 *id,
		      char *err, size_t errlen);

struct bpf_object;
/* Before obj (opened, not loaded) is loaded: gives the shared maps it declares their pin
 * paths under root, so that libbpf's load reuses each pin (or creates and pins the map);
 * refuses (-EEXIST, err naming both layouts) a pin whose definition differs. */
int pins_use_globals(struct bpf_object *obj, const char *root, char *err, size_t errlen);

void pins_close_globals(int fds[GM_COUNT]);

/* "<root>/<iface>/<name>" into buf. */
int pins_path(char *buf, size_t len, const char *root, const char *iface, const char *name);

/* Entry 0 of the pinned array <root>[/<iface>]/<name> whose value must be `size` bytes; a map
 * of another size (another layout) is -EPROTO and never copied. */
int pins_read_value(const char *root, const char *iface, const char *name, void *value,
		    size_t size);

/* Calls fn for each attached interface (each directory holding an attach record). */
int iface_for_each(const char *root, int (*fn)(const char *iface, void *arg), void *arg);
/* Whether no interface is attached under root any more. */
bool pins_unused(const char *root);
/* Removes the shared maps' pins and the root directory (when nothing else lives there). */
void pins_remove_globals(const char *root);

#endif
