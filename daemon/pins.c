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
#include "iface_pins.h"
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

int pins_prepare(const char *root, char *err, size_t errlen)
{
	char parent[PATH_MAX];
	int r;

	snprintf(parent, sizeof(parent), "%s", root);
	dirname(parent);
	r = is_bpffs(parent);
	if (r == 0 && strcmp(parent, "/sys/fs/bpf") == 0) {
		/* Nothing mounted yet (fresh boot without systemd's mount unit): mount it. */
		if (mount("bpf", parent, "bpf", 0, "mode=0700")) {
			r = -errno;
			snprintf(err, errlen,
				 "bpffs is not mounted on /sys/fs/bpf and mounting it failed (%s); "
				 "run: mount -t bpf bpf /sys/fs/bpf",
				 strerror(-r));
			return r;
		}
		r = 1;
	}
	if (r == -ENOENT) {
		snprintf(err, errlen,
			 "%s does not exist: the pin root must be inside a bpffs mount", parent);
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot stat %s (%s): is bpffs available?", parent,
			 strerror(-r));
		return r;
	}
	if (r == 0) {
		snprintf(err, errlen, "%s is not on a bpffs mount; mount -t bpf bpf %s", parent,
			 parent);
		return -ENOTSUP;
	}
	if (mkdir(root, 0700) && errno != EEXIST) {
		r = -errno;
		snprintf(err, errlen, "cannot create %s: %s", root, strerror(-r));
		return r;
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

/* The maps every interface's classifier shares, by pin name. */
static struct bpf_map *global_map(struct classifier_bpf *skel, int i)
{
	struct bpf_map *maps[PINS_GLOBAL_MAPS] = {skel->maps.sock_tags, skel->maps.sock_stats,
						  skel->maps.job_clock};
	return maps[i];
}

static const struct {
	const char *name;
	enum bpf_map_type type;
	__u32 value_size;
} globals[PINS_GLOBAL_MAPS] = {
    {"sock_tags", BPF_MAP_TYPE_SK_STORAGE, sizeof(struct mercury_sock_tags)},
    {"sock_stats", BPF_MAP_TYPE_SK_STORAGE, sizeof(struct mercury_sock_stats)},
    {"job_clock", BPF_MAP_TYPE_ARRAY, sizeof(struct mercury_job_clock)},
};

const char *pins_global_name(int i)
{
	return i >= 0 && i < PINS_GLOBAL_MAPS ? globals[i].name : NULL;
}

static void close_all(int *fds)
{
	for (int i = 0; i < PINS_GLOBAL_MAPS; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

static int count_attached(const char *iface, void *arg)
{
	(void)iface;
	(*(int *)arg)++;
	return 0;
}

int pins_global_maps(const char *root, struct global_maps *m, char *err, size_t errlen)
{
	char paths[PINS_GLOBAL_MAPS][PATH_MAX];
	struct classifier_bpf *skel;
	int missing = 0, attached = 0, r, i;

	for (i = 0; i < PINS_GLOBAL_MAPS; i++) {
		pins_path(paths[i], sizeof(paths[i]), root, NULL, globals[i].name);
		m->fd[i] =
		    open_checked(paths[i], globals[i].type, globals[i].value_size, err, errlen);
		if (m->fd[i] == -EEXIST) {
			m->fd[i] = -1;
			close_all(m->fd);
			return -EEXIST;
		}
		missing += m->fd[i] < 0;
	}
	if (!missing)
		return 0;
	close_all(m->fd);
	if (missing < PINS_GLOBAL_MAPS && iface_for_each(root, count_attached, &attached) == 0 &&
	    attached > 0) {
		/* An older mercuryd's set (fewer shared maps) that attached classifiers still use:
		 * replacing it would leave them reading maps nobody writes. */
		snprintf(err, errlen,
			 "%s holds the shared maps of an older mercuryd (layout < %d) in use by %d "
			 "attached interface(s); detach them with that mercuryd first",
			 root, MERCURY_LAYOUT_VERSION, attached);
		return -EEXIST;
	}
	/* Absent (first attach, or an unused older set): make all of them anew from the
	 * classifier object, so that they carry its BTF and belong together. */
	skel = classifier_bpf__open_and_load();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "cannot load the classifier object: %s (run with -v)",
			 strerror(-r));
		return r;
	}
	for (i = 0; i < PINS_GLOBAL_MAPS; i++)
		unlink(paths[i]);
	for (i = 0; i < PINS_GLOBAL_MAPS; i++)
		if (bpf_map__pin(global_map(skel, i), paths[i]))
			break;
	if (i < PINS_GLOBAL_MAPS) {
		r = -errno;
		snprintf(err, errlen, "cannot pin the shared maps under %s: %s", root,
			 strerror(-r));
		for (int k = 0; k < i; k++)
			unlink(paths[k]);
		classifier_bpf__destroy(skel);
		return r;
	}
	for (i = 0; i < PINS_GLOBAL_MAPS; i++)
		m->fd[i] = dup(bpf_map__fd(global_map(skel, i)));
	classifier_bpf__destroy(skel);
	return 0;
}

int pins_reuse_global_maps(struct classifier_bpf *skel, const struct global_maps *m)
{
	for (int i = 0; i < PINS_GLOBAL_MAPS; i++)
		if (bpf_map__reuse_fd(global_map(skel, i), m->fd[i]))
			return -errno;
	return 0;
}

void pins_close_global_maps(struct global_maps *m)
{
	close_all(m->fd);
}
