// SPDX-License-Identifier: BSD-2-Clause
/* The tag fast path's program: attach to a cgroup, pin, detach (fastpath.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "fastpath.h"
#include "iface_pins.h"
#include "pins.h"
#include "tag_fastpath.skel.h"

#define PIN_FP_LINK  "fastpath_link"
#define PIN_FP_STATE "fastpath_state"

int fastpath_cgroup2_root(char *buf, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	int r = -ENOENT;

	if (!f)
		return -errno;
	while ((m = getmntent(f))) {
		if (strcmp(m->mnt_type, "cgroup2") == 0) {
			r = snprintf(buf, len, "%s", m->mnt_dir) < (int)len ? 0 : -ENAMETOOLONG;
			break;
		}
	}
	endmntent(f);
	return r;
}

int fastpath_state(const char *root, struct mercury_fastpath_state *st, unsigned *prog_id)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int r, fd;

	r = pins_read_value(root, NULL, PIN_FP_STATE, st, sizeof(*st));
	if (r)
		return r;
	*prog_id = 0;
	pins_path(path, sizeof(path), root, NULL, PIN_FP_LINK);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			*prog_id = info.prog_id;
		close(fd);
	}
	return 0;
}

/* The cgroup's id is its directory's inode on cgroup v2. */
static int cgroup_open(const char *cgroup, char *resolved, __u64 *id, char *err, size_t errlen)
{
	struct stat st;
	int fd;

	if (!realpath(cgroup, resolved)) {
		snprintf(err, errlen, "cgroup %s: %s", cgroup, strerror(errno));
		return -errno;
	}
	fd = open(resolved, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		int r = -errno;

		snprintf(err, errlen, "cannot open cgroup %s: %s", resolved, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	*id = st.st_ino;
	return fd;
}

int fastpath_attach(const char *root, const char *cgroup, char *err, size_t errlen)
{
	char cg_root[PATH_MAX], resolved[PATH_MAX], link_path[PATH_MAX], state_path[PATH_MAX];
	struct mercury_fastpath_state st = {.layout_version = MERCURY_LAYOUT_VERSION}, old;
	int cg_fd, r;
	struct tag_fastpath_bpf *skel = NULL;
	struct bpf_link *link = NULL;
	struct timespec now;
	unsigned prog_id;
	uint32_t zero = 0;

	if (!cgroup) {
		if ((r = fastpath_cgroup2_root(cg_root, sizeof(cg_root)))) {
			snprintf(err, errlen,
				 "no cgroup v2 hierarchy is mounted (mount -t cgroup2 none "
				 "/sys/fs/cgroup), or name one with --cgroup");
			return r;
		}
		cgroup = cg_root;
	}
	cg_fd = cgroup_open(cgroup, resolved, &st.cgroup_id, err, errlen);
	if (cg_fd < 0)
		return cg_fd;
	if (fastpath_state(root, &old, &prog_id) == 0) {
		close(cg_fd);
		if (old.cgroup_id == st.cgroup_id && prog_id)
			return 0; /* already there */
		snprintf(err, errlen,
			 "the fast path is attached to %s already; run `mercuryd fastpath detach` "
			 "first",
			 old.cgroup);
		return -EEXIST;
	}
	snprintf(st.cgroup, sizeof(st.cgroup), "%s", resolved);
	skel = tag_fastpath_bpf__open();
	if (skel && (r = pins_use_globals(skel->obj, root, err, errlen)))
		goto out;
	if (!skel || tag_fastpath_bpf__load(skel)) {
		r = -errno;
		snprintf(err, errlen,
			 "cannot load the tag fast path: %s (run with -v for the verifier log)",
			 strerror(-r));
		goto out;
	}
	link = bpf_program__attach_cgroup(skel->progs.mercury_tag_setsockopt, cg_fd);
	if (!link) {
		r = -errno;
		snprintf(err, errlen, "cannot attach the tag fast path to %s: %s", resolved,
			 strerror(-r));
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	st.attached_at_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	pins_path(link_path, sizeof(link_path), root, NULL, PIN_FP_LINK);
	pins_path(state_path, sizeof(state_path), root, NULL, PIN_FP_STATE);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.fastpath_state), &zero, &st, BPF_ANY) ||
	    bpf_map__pin(skel->maps.fastpath_state, state_path) || bpf_link__pin(link, link_path)) {
		r = -errno;
		snprintf(err, errlen, "cannot pin the tag fast path under %s: %s", root,
			 strerror(-r));
		unlink(state_path);
		unlink(link_path);
		goto out; /* destroying the unpinned link detaches the program */
	}
	r = 0;
out:
	bpf_link__destroy(link); /* the pin keeps it attached */
	tag_fastpath_bpf__destroy(skel);
	close(cg_fd);
	return r;
}

int fastpath_detach(const char *root, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd, r = 0;

	pins_path(path, sizeof(path), root, NULL, PIN_FP_LINK);
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		/* Detach now, not when the last reference goes: a process that opened the pin
		 * would keep the program running. */
		if (bpf_link_detach(fd) && errno != EINVAL)
			r = -errno;
		close(fd);
	}
	if (r) {
		snprintf(err, errlen, "cannot detach the tag fast path: %s", strerror(-r));
		return r;
	}
	if (unlink(path) && errno != ENOENT) {
		r = -errno;
		snprintf(err, errlen, "cannot remove %s: %s", path, strerror(-r));
		return r;
	}
	pins_path(path, sizeof(path), root, NULL, PIN_FP_STATE);
	unlink(path);
	return 0;
}

void fastpath_release_unused(const char *root)
{
	char err[256];

	if (!pins_unused(root))
		return;
	/* The fast path writes tags only the classifiers read: it goes with the last one. */
	if (fastpath_detach(root, err, sizeof(err)))
		log_error("%s", err);
	pins_remove_globals(root);
}
