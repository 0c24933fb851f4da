/* Reading and removing the pins of one attached interface. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "iface_pins.h"
#include "pins.h"
#include "qdisc.h"

static int read_pinned_value(const char *root, const char *iface, const char *name, void *value)
{
	char path[PATH_MAX];
	__u32 key = 0;
	int fd, r = 0;

	if (pins_path(path, sizeof(path), root, iface, name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &key, value))
		r = -errno;
	close(fd);
	return r;
}

uint64_t current_netns_ino(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

int iface_state_read(const char *root, const char *iface, struct mercury_attach_state *st)
{
	int r = read_pinned_value(root, iface, PIN_STATE, st);

	if (r == 0 && st->layout_version != MERCURY_LAYOUT_VERSION)
		return -EPROTO;
	return r;
}

int iface_cfg_read(const char *root, const char *iface, struct mercury_iface_cfg *cfg)
{
	return read_pinned_value(root, iface, PIN_CFG, cfg);
}

int iface_stats_read(const char *root, const char *iface, struct mercury_stats *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	struct mercury_stats *per_cpu;
	char path[PATH_MAX];
	__u32 key = 0;
	int fd, r = 0;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	if (pins_path(path, sizeof(path), root, iface, PIN_STATS))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if (!per_cpu) {
		close(fd);
		return -ENOMEM;
	}
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(fd, &key, per_cpu)) {
		r = -errno;
	} else {
		for (int c = 0; c < ncpu; c++) {
			for (int b = 0; b < MERCURY_MAX_BANDS; b++) {
				sum->band[b].packets += per_cpu[c].band[b].packets;
				sum->band[b].bytes += per_cpu[c].band[b].bytes;
			}
			for (int o = 0; o < MERCURY_OUT_MAX; o++) {
				sum->outcome[o].packets += per_cpu[c].outcome[o].packets;
				sum->outcome[o].bytes += per_cpu[c].outcome[o].bytes;
			}
		}
	}
	free(per_cpu);
	close(fd);
	return r;
}

void iface_state_hook(const struct mercury_attach_state *st, struct tc_hook_result *hook)
{
	memset(hook, 0, sizeof(*hook));
	hook->hook = st->hook;
	hook->created_clsact = st->created_clsact;
	hook->tc_handle = st->tc_handle;
	hook->tc_priority = st->tc_priority;
}

void iface_unpin_all(const char *root, const char *iface)
{
	static const char *const names[] = {PIN_LINK, PIN_PROG, PIN_CFG, PIN_STATS, PIN_STATE};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (pins_path(path, sizeof(path), root, iface, names[i]) == 0)
			unlink(path);
	if (pins_path(path, sizeof(path), root, iface, NULL) == 0)
		rmdir(path);
}

static int count_one(const char *iface, void *arg)
{
	(void)iface;
	(*(int *)arg)++;
	return 0;
}

void pins_remove_unused_globals(const char *root)
{
	char path[PATH_MAX];
	int n = 0;

	if (iface_for_each(root, count_one, &n) || n > 0)
		return;
	pins_path(path, sizeof(path), root, NULL, "sock_tags");
	unlink(path);
	pins_path(path, sizeof(path), root, NULL, "sock_stats");
	unlink(path);
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

int iface_teardown(const char *root, const char *iface, const struct mercury_attach_state *st,
		   char *err, size_t errlen)
{
	struct tc_hook_result hook;
	char link_pin[PATH_MAX];
	int r;

	pins_path(link_pin, sizeof(link_pin), root, iface, PIN_LINK);
	iface_state_hook(st, &hook);
	r = tc_hook_detach((int)st->ifindex, &hook, link_pin, err, errlen);
	if (r)
		return r;
	r = qdisc_remove((int)st->ifindex, st->qdisc_handle, err, errlen);
	if (r && r != -ENOENT)
		return r;
	/* Restore the replaced root only over the kernel's default: if someone installed
	 * their own root since, theirs wins. */
	struct qdisc_root now;
	if (st->saved_qdisc_len && qdisc_get_root((int)st->ifindex, &now, err, errlen) == 0 &&
	    now.is_default) {
		r = qdisc_restore_root((int)st->ifindex, st->saved_qdisc, st->saved_qdisc_len, err,
				       errlen);
		if (r)
			return r;
	}
	iface_unpin_all(root, iface);
	return 0;
}
