// SPDX-License-Identifier: BSD-2-Clause
/* One attached interface's pins: its record, configuration, counters and health. */
#include <net/if.h>
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
#include "tc/qdisc.h"

const char *iface_hook_name(uint32_t hook)
{
	return hook == MERCURY_HOOK_TCX ? "tcx" : hook == MERCURY_HOOK_CLSACT ? "clsact" : "none";
}

const char *iface_outcome_name(int outcome)
{
	static const char *const names[MERCURY_OUT_MAX] = {
	    [MERCURY_OUT_TAGGED] = "tagged",	   [MERCURY_OUT_TAG_MISS] = "tag_miss",
	    [MERCURY_OUT_UNTAGGED] = "untagged",   [MERCURY_OUT_NO_PAYLOAD] = "no_payload",
	    [MERCURY_OUT_NO_OFFSET] = "no_offset", [MERCURY_OUT_NOT_TCP] = "not_tcp",
	    [MERCURY_OUT_MALFORMED] = "malformed", [MERCURY_OUT_JOB_GONE] = "job_gone",
	};

	return outcome >= 0 && outcome < MERCURY_OUT_MAX ? names[outcome] : "?";
}

uint64_t current_netns_ino(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (uint64_t)st.st_ino;
}

int iface_state_read(const char *root, const char *iface, struct mercury_attach_state *st)
{
	int r = pins_read_value(root, iface, PIN_STATE, st, sizeof(*st));

	if (r == 0 && st->layout_version != MERCURY_LAYOUT_VERSION)
		return -EPROTO;
	return r;
}

void iface_state_strerror(const char *root, const char *iface, int r, char *buf, size_t len)
{
	if (r == -EPROTO)
		snprintf(buf, len,
			 "the attach record %s/%s/%s has another layout than this mercuryd's "
			 "(version %d): detach with the mercuryd that attached it, or clear it by "
			 "hand (tc qdisc del dev %s root; rm -r %s/%s)",
			 root, iface, PIN_STATE, MERCURY_LAYOUT_VERSION, iface, root, iface);
	else
		snprintf(buf, len, "unreadable attach record %s/%s/%s (%s)", root, iface, PIN_STATE,
			 strerror(-r));
}

int iface_cfg_read(const char *root, const char *iface, struct mercury_iface_cfg *cfg)
{
	return pins_read_value(root, iface, PIN_CFG, cfg, sizeof(*cfg));
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
			sum->order_kept.packets += per_cpu[c].order_kept.packets;
			sum->order_kept.bytes += per_cpu[c].order_kept.bytes;
			sum->order_released.packets += per_cpu[c].order_released.packets;
			sum->order_released.bytes += per_cpu[c].order_released.bytes;
			sum->dscp_marked.packets += per_cpu[c].dscp_marked.packets;
			sum->dscp_marked.bytes += per_cpu[c].dscp_marked.bytes;
			sum->dscp_kept.packets += per_cpu[c].dscp_kept.packets;
			sum->dscp_kept.bytes += per_cpu[c].dscp_kept.bytes;
			sum->dscp_released.packets += per_cpu[c].dscp_released.packets;
			sum->dscp_released.bytes += per_cpu[c].dscp_released.bytes;
		}
	}
	free(per_cpu);
	close(fd);
	return r;
}

void iface_state_set_hook(struct mercury_attach_state *st, const struct tc_hook_result *hook)
{
	st->hook = hook->hook;
	st->created_clsact = hook->created_clsact;
	st->tc_handle = hook->tc_handle;
	st->tc_priority = hook->tc_priority;
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
	static const char *const names[] = {PIN_LINK,  PIN_PROG,  PIN_CFG,
					    PIN_STATS, PIN_STATE, PIN_SAVED_TREE};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (pins_path(path, sizeof(path), root, iface, names[i]) == 0)
			unlink(path);
	if (pins_path(path, sizeof(path), root, iface, NULL) == 0)
		rmdir(path);
}

/* Health: are the pieces attach put in place still there? */
const char *iface_health(const char *root, const char *iface, const struct mercury_attach_state *st)
{
	struct tc_hook_result hook;
	struct qdisc_root qr = {0}; /* unread when the dump fails: neither default nor ours */
	char link_pin[PATH_MAX], err[256];

	if (st->netns_ino != current_netns_ino())
		return "in another network namespace";
	if (if_nametoindex(iface) != st->ifindex)
		return "device gone";
	pins_path(link_pin, sizeof(link_pin), root, iface, PIN_LINK);
	iface_state_hook(st, &hook);
	bool hooked = tc_hook_present((int)st->ifindex, &hook, link_pin);
	bool ours = qdisc_get_root((int)st->ifindex, &qr, err, sizeof(err)) == 0 &&
		    qr.handle == st->qdisc_handle;

	/* A detach that stopped after taking Mercury out but before the old tree was back. */
	if (!hooked && !ours && (qr.is_default || (st->saved_root && qr.handle == st->saved_root)))
		return "detach incomplete (run detach again)";
	if (!hooked)
		return "classifier missing";
	if (!ours)
		return "root qdisc replaced";
	return "ok";
}
