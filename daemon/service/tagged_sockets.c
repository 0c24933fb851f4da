// SPDX-License-Identifier: BSD-2-Clause
/* Walks sock_tags with the iterator program (user space has no get_next_key for it), or
 * with sock_diag where the kernel refuses the program. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tagged_sockets.h"
#include "sock_tags_iter.skel.h"

static int iterator_walk(int sock_tags_fd, void (*fn)(const struct tagged_socket *, void *),
			 void *arg)
{
	DECLARE_LIBBPF_OPTS(bpf_iter_attach_opts, opts);
	union bpf_iter_link_info info = {.map.map_fd = (__u32)sock_tags_fd};
	struct sock_tags_iter_bpf *skel = sock_tags_iter_bpf__open_and_load();
	struct bpf_link *link = NULL;
	char line[128];
	int iter_fd = -1, n = 0, r = 0;
	FILE *f = NULL;

	if (!skel)
		return -errno;
	opts.link_info = &info;
	opts.link_info_len = sizeof(info);
	link = bpf_program__attach_iter(skel->progs.list_tagged_sockets, &opts);
	if (!link) {
		r = -errno;
		goto out;
	}
	iter_fd = bpf_iter_create(bpf_link__fd(link));
	if (iter_fd < 0 || !(f = fdopen(iter_fd, "r"))) {
		r = -errno;
		goto out;
	}
	iter_fd = -1; /* owned by f now */
	while (fgets(line, sizeof(line), f)) {
		struct tagged_socket t;
		unsigned long long cookie, owner;

		if (sscanf(line, "%llu %llu %u", &cookie, &owner, &t.ranges) != 3)
			continue;
		t.cookie = cookie;
		t.owner = owner;
		if (fn)
			fn(&t, arg);
		n++;
	}
	r = n;
out:
	if (f)
		fclose(f);
	if (iter_fd >= 0)
		close(iter_fd);
	bpf_link__destroy(link);
	sock_tags_iter_bpf__destroy(skel);
	return r;
}

int tagged_sockets_walk(int sock_tags_fd, void (*fn)(const struct tagged_socket *, void *),
			void *arg, const char **via)
{
	int r = iterator_walk(sock_tags_fd, fn, arg);

	if (via)
		*via = "iterator";
	/* A refused load or attach calls fn for nothing, so the other walk cannot double up. */
	if (r >= 0)
		return r;
	if (via)
		*via = "sock_diag";
	return tagged_sockets_diag(sock_tags_fd, fn, arg);
}
