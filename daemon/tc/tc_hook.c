// SPDX-License-Identifier: BSD-2-Clause
/* TC egress attachment: TCX link (kernel >= 6.6), clsact filter otherwise. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/pkt_sched.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <netlink/netlink.h>
#include <netlink/route/classifier.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>

#include "tc_hook.h"

/* libbpf 1.1 predates TCX: the kernel's attach type number, used with bpf_link_create. */
#define MERCURY_BPF_TCX_EGRESS 47

static int attach_tcx(int prog_fd, int ifindex, const char *link_pin, char *err, size_t errlen)
{
	int link_fd =
	    bpf_link_create(prog_fd, ifindex, (enum bpf_attach_type)MERCURY_BPF_TCX_EGRESS, NULL);
	int r;

	if (link_fd < 0)
		return -errno;
	unlink(link_pin);
	if (bpf_obj_pin(link_fd, link_pin)) {
		r = -errno;
		snprintf(err, errlen, "cannot pin the TCX link at %s: %s", link_pin, strerror(-r));
		bpf_link_detach(link_fd);
		close(link_fd);
		return r;
	}
	close(link_fd);
	return 0;
}

static int attach_clsact(int prog_fd, int ifindex, struct tc_hook_result *res, char *err,
			 size_t errlen)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd, .handle = MERCURY_CLSACT_HANDLE,
			    .priority = MERCURY_CLSACT_PRIORITY);
	int r = bpf_tc_hook_create(&hook);

	if (r && r != -EEXIST) {
		snprintf(err, errlen, "cannot create clsact on ifindex %d: %s", ifindex,
			 strerror(-r));
		return r;
	}
	res->created_clsact = r == 0;
	r = bpf_tc_attach(&hook, &opts);
	if (r) {
		snprintf(err, errlen,
			 r == -EEXIST
			     ? "a tc egress filter already uses handle 0x%x priority %u; "
			       "remove it or attach with --hook tcx"
			     : "cannot attach the tc egress filter (handle 0x%x prio %u): %s",
			 MERCURY_CLSACT_HANDLE, MERCURY_CLSACT_PRIORITY, strerror(-r));
		if (res->created_clsact) {
			hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
			bpf_tc_hook_destroy(&hook);
		}
		return r;
	}
	res->hook = MERCURY_HOOK_CLSACT;
	res->tc_handle = MERCURY_CLSACT_HANDLE;
	res->tc_priority = MERCURY_CLSACT_PRIORITY;
	return 0;
}

int tc_hook_attach(int prog_fd, int ifindex, enum mercury_hook want, const char *link_pin,
		   struct tc_hook_result *res, char *err, size_t errlen)
{
	int r;

	memset(res, 0, sizeof(*res));
	if (want != MERCURY_HOOK_CLSACT) {
		r = attach_tcx(prog_fd, ifindex, link_pin, err, errlen);
		if (r == 0) {
			res->hook = MERCURY_HOOK_TCX;
			return 0;
		}
		if (want == MERCURY_HOOK_TCX) {
			if (!err[0])
				snprintf(err, errlen,
					 "cannot create a TCX egress link: %s (kernel < 6.6 has no "
					 "TCX: use --hook clsact or auto)",
					 strerror(-r));
			return r;
		}
		err[0] = '\0'; /* no TCX in this kernel: clsact is the fallback */
	}
	return attach_clsact(prog_fd, ifindex, res, err, errlen);
}

/* Is there a clsact qdisc on the device at all? (Without it the kernel answers EINVAL.) */
static bool clsact_present(int ifindex)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_cache *cache = NULL;
	struct rtnl_qdisc *q = NULL;
	bool found = true; /* when unsure, do not claim it is gone */

	if (sk && nl_connect(sk, NETLINK_ROUTE) == 0 && rtnl_qdisc_alloc_cache(sk, &cache) == 0) {
		q = rtnl_qdisc_get_by_parent(cache, ifindex, TC_H_CLSACT);
		found = q != NULL;
		if (q)
			rtnl_qdisc_put(q);
		nl_cache_free(cache);
	}
	nl_socket_free(sk);
	return found;
}

/* Counts the filters on clsact's ingress and egress, whoever put them there. */
static int clsact_filter_count(int ifindex)
{
	const uint32_t parents[] = {TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS),
				    TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS)};
	struct nl_sock *sk = nl_socket_alloc();
	int total = 0;

	if (!sk || nl_connect(sk, NETLINK_ROUTE)) {
		nl_socket_free(sk);
		return -ENOTCONN;
	}
	for (size_t i = 0; i < 2; i++) {
		struct nl_cache *cache = NULL;

		if (rtnl_cls_alloc_cache(sk, ifindex, parents[i], &cache) == 0) {
			total += nl_cache_nitems(cache);
			nl_cache_free(cache);
		}
	}
	nl_socket_free(sk);
	return total;
}

int tc_hook_detach(int ifindex, const struct tc_hook_result *res, const char *link_pin, char *err,
		   size_t errlen)
{
	int r = 0;

	if (res->hook == MERCURY_HOOK_TCX) {
		int fd = bpf_obj_get(link_pin);

		if (fd >= 0) {
			if (bpf_link_detach(fd))
				r = -errno;
			close(fd);
			unlink(link_pin);
		}
		if (r)
			snprintf(err, errlen, "cannot detach the TCX link %s: %s", link_pin,
				 strerror(-r));
		return r;
	}
	if (res->hook == MERCURY_HOOK_CLSACT) {
		DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
				    .attach_point = BPF_TC_EGRESS);
		DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = res->tc_handle,
				    .priority = res->tc_priority);

		r = bpf_tc_detach(&hook, &opts);
		if (r == -ENOENT || (r == -EINVAL && !clsact_present(ifindex)))
			r = 0; /* already gone: someone flushed the hook, or an earlier detach */
		if (r) {
			snprintf(err, errlen, "cannot remove Mercury's tc filter: %s",
				 strerror(-r));
			return r;
		}
		/* Never flush others' filters: drop clsact only if we made it and it is empty. */
		if (res->created_clsact && clsact_filter_count(ifindex) == 0) {
			hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
			bpf_tc_hook_destroy(&hook);
		}
	}
	return 0;
}

bool tc_hook_present(int ifindex, const struct tc_hook_result *res, const char *link_pin)
{
	if (res->hook == MERCURY_HOOK_TCX) {
		struct bpf_link_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_obj_get(link_pin);
		bool ok;

		if (fd < 0)
			return false;
		ok = bpf_obj_get_info_by_fd(fd, &info, &len) == 0;
		close(fd);
		return ok;
	}
	if (res->hook == MERCURY_HOOK_CLSACT) {
		DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
				    .attach_point = BPF_TC_EGRESS);
		DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = res->tc_handle,
				    .priority = res->tc_priority);

		return bpf_tc_query(&hook, &opts) == 0;
	}
	return false;
}
