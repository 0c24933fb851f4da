// SPDX-License-Identifier: BSD-2-Clause
/* The pin tree: bpffs mount, the lock that serialises mercuryd runs, the shared maps. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "pins.h"
#include "mercury_abi.h"
#include "classifier.skel.h"

int pins_path(char *buf, size_t len, const char *root, const char *iface, const char *name)
{
	int n;

	if (iface && name)
		n = snprintf(buf, len, "%s/%s/%s", root, iface, name);
	else if (iface)
		n = snprintf(buf, len, "%s/%s", root, iface);
	else
		n = snprintf(buf, len, "%s/%s", root, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int is_bpffs(const char *path)
{
	struct statfs st;

	if (statfs(path, &st))
		return -errno;
	return st.f_type == BPF_FS_MAGIC;
}

#define BPFFS_DEFAULT "/sys/fs/bpf"

/* systemd mounts bpffs on /sys/fs/bpf; a bare boot or container may not have: mount it
 * when the pin root lives under it, as bpftool does. */
static int mount_default_bpffs(const char *root, char *err, size_t errlen)
{
	size_t n = strlen(BPFFS_DEFAULT);
	int r;

	if (strncmp(root, BPFFS_DEFAULT, n) || (root[n] != '/' && root[n] != '\0'))
		return 0;
	r = is_bpffs(BPFFS_DEFAULT);
	if (r != 0)
		return 0; /* mounted, or missing: the walk below reports it */
	if (mount("bpf", BPFFS_DEFAULT, "bpf", 0, "mode=0700")) {
		r = -errno;
		snprintf(err, errlen,
			 "bpffs is not mounted on " BPFFS_DEFAULT " and mounting it failed (%s); "
			 "run: mount -t bpf bpf " BPFFS_DEFAULT,
			 strerror(-r));
		return r;
	}
	return 0;
}

int pins_prepare(const char *root, char *err, size_t errlen)
{
	char path[PATH_MAX], existing[PATH_MAX];
	size_t len;
	int r;

	if (snprintf(path, sizeof(path), "%s", root) >= (int)sizeof(path)) {
		snprintf(err, errlen, "pin root too long: %s", root);
		return -ENAMETOOLONG;
	}
	r = mount_default_bpffs(path, err, errlen);
	if (r)
		return r;
	/* The nearest ancestor that exists must be on bpffs; below it, create what is missing. */
	snprintf(existing, sizeof(existing), "%s", path);
	while ((r = is_bpffs(existing)) == -ENOENT && strcmp(existing, "/") &&
	       strcmp(existing, "."))
		dirname(existing);
	if (r < 0) {
		snprintf(err, errlen, "cannot stat %s (%s): is bpffs available?", existing,
			 strerror(-r));
		return r;
	}
	if (r == 0) {
		snprintf(err, errlen, "%s is not on a bpffs mount; mount -t bpf bpf %s", existing,
			 existing);
		return -ENOTSUP;
	}
	len = strlen(existing);
	for (char *p = path + len + 1; p <= path + strlen(path); p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "cannot create %s: %s", path, strerror(-r));
			return r;
		}
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

int pins_lock(const char *root, char *err, size_t errlen)
{
	struct stat held, now;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		int r = -errno;

		snprintf(err, errlen, "cannot open %s: %s", root, strerror(-r));
		return r;
	}
	if (flock(fd, LOCK_EX)) {
		int r = -errno;

		close(fd);
		snprintf(err, errlen, "cannot lock %s: %s", root, strerror(-r));
		return r;
	}
	/* The holder we waited for may have removed the root (its last pin gone): a lock on a
	 * directory no longer at that path serialises nothing. */
	if (fstat(fd, &held) || stat(root, &now) || held.st_dev != now.st_dev ||
	    held.st_ino != now.st_ino) {
		close(fd);
		snprintf(err, errlen, "%s was removed while waiting for its lock", root);
		return -ENOENT;
	}
	return fd;
}

int pins_prepare_lock(const char *root, char *err, size_t errlen)
{
	int r = -ENOENT;

	/* Bounded: each retry means a detach removed the root between our mkdir and lock. */
	for (int i = 0; i < 5 && r == -ENOENT; i++) {
		r = pins_prepare(root, err, errlen);
		if (r == 0)
			r = pins_lock(root, err, errlen);
	}
	return r;
}

const struct global_map_def global_maps[GM_COUNT] = {
    [GM_SOCK_TAGS] = {"sock_tags", BPF_MAP_TYPE_SK_STORAGE, sizeof(struct mercury_sock_tags)},
    [GM_SOCK_STATS] = {"sock_stats", BPF_MAP_TYPE_SK_STORAGE, sizeof(struct mercury_sock_stats)},
    [GM_JOBS] = {"jobs", BPF_MAP_TYPE_ARRAY, sizeof(struct mercury_job_state)},
    [GM_JOB_IDS] = {"job_ids", BPF_MAP_TYPE_HASH, sizeof(__u32)},
};

/* key_size / max_entries 0: not checked (the service's map sync knows type and value only). */
static int compare_layout(int fd, const char *path, unsigned type, unsigned key_size,
			  unsigned value_size, unsigned max_entries, __u32 *id, char *err,
			  size_t errlen)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		int r = -errno;

		snprintf(err, errlen, "cannot inspect %s: %s", path, strerror(-r));
		return r;
	}
	if (id)
		*id = info.id;
	if (info.type == type && info.value_size == value_size &&
	    (!key_size || info.key_size == key_size) &&
	    (!max_entries || info.max_entries == max_entries))
		return 0;
	snprintf(err, errlen,
		 "%s has another layout (type %u, key %u, value %u bytes, %u entries) than this "
		 "mercuryd (layout version %d: type %u, key %u, value %u bytes, %u entries)",
		 path, info.type, info.key_size, info.value_size, info.max_entries,
		 MERCURY_LAYOUT_VERSION, type, key_size ? key_size : info.key_size, value_size,
		 max_entries ? max_entries : info.max_entries);
	return -EPROTO;
}

int pins_check_layout(int fd, const char *path, unsigned type, unsigned value_size, __u32 *id,
		      char *err, size_t errlen)
{
	return compare_layout(fd, path, type, 0, value_size, 0, id, err, errlen);
}

/*
 * The shared maps are pinned the libbpf way: each object that declares them gets their pin
 * path before it is loaded, and libbpf reuses a pin whose definition matches (type, key and
 * value size, entries, flags) or creates the map and pins it. (The maps' source does not say
 * LIBBPF_PIN_BY_NAME: every other loader of the objects — tests, benches — would then pin
 * into the default /sys/fs/bpf; only mercuryd pins.) A pin of another layout is refused
 * first, here, with a message naming both layouts, not libbpf's bare -EINVAL.
 */
static int check_pinned_def(const char *path, const struct bpf_map *m, char *err, size_t errlen)
{
	int fd = bpf_obj_get(path), r;
	size_t used;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* not pinned yet: libbpf pins it */
	r = compare_layout(fd, path, bpf_map__type(m), bpf_map__key_size(m), bpf_map__value_size(m),
			   bpf_map__max_entries(m), NULL, err, errlen);
	close(fd);
	if (r != -EPROTO)
		return r;
	used = strlen(err);
	snprintf(err + used, errlen - used,
		 "; detach every interface with the old mercuryd, or remove the pin");
	return -EEXIST;
}

int pins_use_globals(struct bpf_object *obj, const char *root, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int r;

	for (int i = 0; i < GM_COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, global_maps[i].name);

		if (!m)
			continue; /* an object may use only some of them */
		if ((r = pins_path(path, sizeof(path), root, NULL, global_maps[i].name)) ||
		    (r = check_pinned_def(path, m, err, errlen)))
			return r;
		if (bpf_map__set_pin_path(m, path)) {
			r = -errno;
			snprintf(err, errlen, "cannot set the pin path %s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

void pins_close_globals(int fds[GM_COUNT])
{
	for (int i = 0; i < GM_COUNT; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

int pins_global_maps(const char *root, int fds[GM_COUNT], char *err, size_t errlen)
{
	struct classifier_bpf *skel;
	int r;

	for (int i = 0; i < GM_COUNT; i++)
		fds[i] = -1;
	/* The classifier declares them all: loading it (not attaching it) reuses or creates
	 * and pins them, with its BTF (bpftool dumps them by field). */
	skel = classifier_bpf__open();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "cannot open the classifier object: %s", strerror(-r));
		return r;
	}
	if ((r = pins_use_globals(skel->obj, root, err, errlen)))
		goto out;
	if (classifier_bpf__load(skel)) {
		r = -errno;
		snprintf(err, errlen, "cannot load the classifier object: %s (run with -v)",
			 strerror(-r));
		goto out;
	}
	for (int i = 0; i < GM_COUNT; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(skel->obj, global_maps[i].name);

		fds[i] = m ? dup(bpf_map__fd(m)) : -1;
		if (fds[i] < 0) {
			r = m ? -errno : -ENOENT;
			snprintf(err, errlen, "cannot hold the shared map %s: %s",
				 global_maps[i].name, strerror(-r));
			pins_close_globals(fds);
			goto out;
		}
	}
	r = 0;
out:
	classifier_bpf__destroy(skel);
	return r;
}

/* Reads entry 0 of a pinned array whose value must be `size` bytes. A map of another size
 * (another layout) is -EPROTO and never copied: its value would not fit. */
int pins_read_value(const char *root, const char *iface, const char *name, void *value, size_t size)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	__u32 key = 0;
	int fd, r = 0;

	if (pins_path(path, sizeof(path), root, iface, name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		r = -errno;
	else if (info.value_size != size)
		r = -EPROTO;
	else if (bpf_map_lookup_elem(fd, &key, value))
		r = -errno;
	close(fd);
	return r;
}

static int count_one(const char *iface, void *arg)
{
	(void)iface;
	(*(int *)arg)++;
	return 0;
}

bool pins_unused(const char *root)
{
	int n = 0;

	return iface_for_each(root, count_one, &n) == 0 && n == 0;
}

void pins_remove_globals(const char *root)
{
	char path[PATH_MAX];

	for (int i = 0; i < GM_COUNT; i++) {
		pins_path(path, sizeof(path), root, NULL, global_maps[i].name);
		unlink(path);
	}
	rmdir(root); /* fails harmlessly if something else lives there */
}

int iface_for_each(const char *root, int (*fn)(const char *iface, void *arg), void *arg)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int r = 0;

	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (e = readdir(d))) {
		char path[PATH_MAX];

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (pins_path(path, sizeof(path), root, e->d_name, PIN_STATE) || access(path, F_OK))
			continue;
		r = fn(e->d_name, arg);
	}
	closedir(d);
	return r;
}
