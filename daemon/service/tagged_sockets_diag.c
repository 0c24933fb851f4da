// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sockets holding tags, asked of sock_diag: an inet_diag dump of this namespace's TCP
 * sockets with the sock_tags map named in INET_DIAG_REQ_SK_BPF_STORAGES returns each
 * socket's entry. For kernels that refuse the iterator program (tracing programs are not
 * allowed everywhere); needs CAP_BPF-level rights, no program.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "mercury_abi.h"
#include "tagged_sockets.h"

struct diag_walk {
	void (*fn)(const struct tagged_socket *, void *);
	void *arg;
	int n;
};

/* The sock_tags value inside one INET_DIAG_SK_BPF_STORAGES attribute, or NULL. */
static const struct mercury_sock_tags *storage_value(struct nlattr *storages)
{
	struct nlattr *storage, *a;
	int rem, rem2;

	nla_for_each_nested(storage, storages, rem)
	{
		if (nla_type(storage) != SK_DIAG_BPF_STORAGE)
			continue;
		nla_for_each_nested(a, storage, rem2)
		{
			if (nla_type(a) == SK_DIAG_BPF_STORAGE_MAP_VALUE &&
			    nla_len(a) >= (int)sizeof(struct mercury_sock_tags))
				return nla_data(a);
		}
	}
	return NULL;
}

static int on_socket(struct nl_msg *msg, void *arg)
{
	struct diag_walk *w = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct nlattr *tb[INET_DIAG_MAX + 1];
	const struct inet_diag_msg *d = nlmsg_data(h);
	const struct mercury_sock_tags *tags;
	struct tagged_socket t;

	if (nlmsg_parse(h, sizeof(*d), tb, INET_DIAG_MAX, NULL) || !tb[INET_DIAG_SK_BPF_STORAGES])
		return NL_OK;
	tags = storage_value(tb[INET_DIAG_SK_BPF_STORAGES]);
	if (!tags)
		return NL_OK;
	t.cookie = (uint64_t)d->id.idiag_cookie[1] << 32 | d->id.idiag_cookie[0];
	t.owner = tags->owner;
	t.ranges = tags->count;
	if (w->fn)
		w->fn(&t, w->arg);
	w->n++;
	return NL_OK;
}

static int dump_family(struct nl_sock *sk, int family, int sock_tags_fd)
{
	struct inet_diag_req_v2 req = {
	    .sdiag_family = (__u8)family,
	    .sdiag_protocol = IPPROTO_TCP,
	    .idiag_states = ~0u,
	};
	struct nl_msg *m = nlmsg_alloc_simple(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP);
	struct nlattr *nest;
	int r = -NLE_NOMEM;

	if (!m)
		return r;
	if (nlmsg_append(m, &req, sizeof(req), NLMSG_ALIGNTO) ||
	    !(nest = nla_nest_start(m, INET_DIAG_REQ_SK_BPF_STORAGES)) ||
	    nla_put_u32(m, SK_DIAG_BPF_STORAGE_REQ_MAP_FD, (uint32_t)sock_tags_fd))
		goto out;
	nla_nest_end(m, nest);
	r = nl_send_auto(sk, m);
	if (r >= 0)
		r = nl_recvmsgs_default(sk);
out:
	nlmsg_free(m);
	return r;
}

int tagged_sockets_diag(int sock_tags_fd, void (*fn)(const struct tagged_socket *, void *),
			void *arg)
{
	static const int families[] = {AF_INET, AF_INET6};
	struct diag_walk w = {.fn = fn, .arg = arg};
	struct nl_sock *sk = nl_socket_alloc();
	int r;

	if (!sk)
		return -ENOMEM;
	r = nl_connect(sk, NETLINK_SOCK_DIAG);
	if (!r)
		r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_socket, &w);
	for (size_t i = 0; !r && i < sizeof(families) / sizeof(families[0]); i++)
		r = dump_family(sk, families[i], sock_tags_fd);
	nl_socket_free(sk);
	if (r >= 0)
		return w.n;
	switch (-r) {
	case NLE_PERM:
		return -EPERM;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_INVAL:
		return -EINVAL; /* a kernel without bpf storages in sock_diag (before 5.2) */
	default:
		return -EOPNOTSUPP;
	}
}
