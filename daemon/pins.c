/* The pin tree: bpffs mount, the lock that serialises mercuryd runs, the shared maps. */
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
	return fd;
}

/* A pinned map is only reused if it has the layout this binary was built with. */
static int open_checked(const char *path, enum bpf_map_type type, __u32 value_size, char *err,
			size_t errlen)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path);

	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != type ||
	    info.value_size != value_size) {
		close(fd);
		snprintf(err, errlen,
			 "%s has another layout than this mercuryd (version %d); detach every "
			 "interface with the old mercuryd, or remove the pin",
			 path, MERCURY_LAYOUT_VERSION);
		return -EEXIST;
	}
	return fd;
}

int pins_global_maps(const char *root, int *sock_tags_fd, int *sock_stats_fd, char *err,
		     size_t errlen)
{
	char tags_path[PATH_MAX], stats_path[PATH_MAX];
	struct classifier_bpf *skel;
	int r;

	pins_path(tags_path, sizeof(tags_path), root, NULL, "sock_tags");
	pins_path(stats_path, sizeof(stats_path), root, NULL, "sock_stats");
	*sock_tags_fd = open_checked(tags_path, BPF_MAP_TYPE_SK_STORAGE,
				     sizeof(struct mercury_sock_tags), err, errlen);
	if (*sock_tags_fd == -EEXIST)
		return -EEXIST;
	*sock_stats_fd = open_checked(stats_path, BPF_MAP_TYPE_SK_STORAGE,
				      sizeof(struct mercury_sock_stats), err, errlen);
	if (*sock_stats_fd == -EEXIST) {
		if (*sock_tags_fd >= 0)
			close(*sock_tags_fd);
		return -EEXIST;
	}
	if (*sock_tags_fd >= 0 && *sock_stats_fd >= 0)
		return 0;
	if (*sock_tags_fd >= 0)
		close(*sock_tags_fd);
	if (*sock_stats_fd >= 0)
		close(*sock_stats_fd);

	/* Create both from the classifier object so they carry its BTF. */
	skel = classifier_bpf__open_and_load();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "cannot load the classifier object: %s (run with -v)",
			 strerror(-r));
		return r;
	}
	unlink(tags_path);
	unlink(stats_path);
	if (bpf_map__pin(skel->maps.sock_tags, tags_path) ||
	    bpf_map__pin(skel->maps.sock_stats, stats_path)) {
		r = -errno;
		snprintf(err, errlen, "cannot pin the socket maps under %s: %s", root,
			 strerror(-r));
		unlink(tags_path);
		classifier_bpf__destroy(skel);
		return r;
	}
	*sock_tags_fd = dup(bpf_map__fd(skel->maps.sock_tags));
	*sock_stats_fd = dup(bpf_map__fd(skel->maps.sock_stats));
	classifier_bpf__destroy(skel);
	return 0;
}
