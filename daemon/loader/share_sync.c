// SPDX-License-Identifier: BSD-2-Clause
/* Job policy share: per-job htb class rates from the job weights (share_sync.h). */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "iface_pins.h"
#include "pins.h"
#include "share_sync.h"
#include "tc/qdisc.h"

void share_weights_read(const char *root, uint32_t weight[MERCURY_SHARE_SLOTS])
{
	char path[PATH_MAX];
	int fd;

	memset(weight, 0, sizeof(weight[0]) * MERCURY_SHARE_SLOTS);
	pins_path(path, sizeof(path), root, NULL, "jobs");
	fd = bpf_obj_get(path);
	if (fd < 0)
		return;
	for (uint32_t i = 0; i < MERCURY_SHARE_SLOTS; i++) {
		struct mercury_job_state js;

		if (bpf_map_lookup_elem(fd, &i, &js) == 0 && js.active)
			weight[i] = js.weight;
	}
	close(fd);
}

struct sync_walk {
	const char *root;
	const uint32_t *weight;
	uint64_t netns;
	int done, first_err;
	char *err;
	size_t errlen;
};

static int sync_one(const char *iface, void *arg)
{
	struct sync_walk *w = arg;
	struct mercury_attach_state st;
	char name[IF_NAMESIZE], why[256];
	int r;

	if (iface_state_read(w->root, iface, &st) || st.job_policy != MERCURY_POLICY_SHARE ||
	    st.netns_ino != w->netns || !if_indextoname(st.ifindex, name) || strcmp(name, iface))
		return 0; /* not ours to set, or not here */
	r = qdisc_htb_share_update((int)st.ifindex, st.qdisc_handle, st.rate_bps, st.nbands,
				   w->weight, why, sizeof(why));
	if (r && !w->first_err) {
		w->first_err = r;
		snprintf(w->err, w->errlen, "%s: %s", iface, why);
	}
	w->done += !r;
	return 0;
}

int share_sync_all(const char *root, const uint32_t weight[MERCURY_SHARE_SLOTS], char *err,
		   size_t errlen)
{
	struct sync_walk w = {.root = root,
			      .weight = weight,
			      .netns = current_netns_ino(),
			      .err = err,
			      .errlen = errlen};

	err[0] = '\0';
	iface_for_each(root, sync_one, &w);
	return w.first_err ? w.first_err : w.done;
}
