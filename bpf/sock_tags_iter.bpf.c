// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Lists the sockets that hold tags: socket-local storage cannot be walked from user space
 * (no get_next_key), so `mercuryd status` runs this iterator over the sock_tags map. One
 * line per socket: cookie, owner (client id), ranges in use.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mercury_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("iter/bpf_sk_storage_map")
int list_tagged_sockets(struct bpf_iter__bpf_sk_storage_map *ctx)
{
	struct mercury_sock_tags *tags = ctx->value;
	struct sock *sk = ctx->sk;

	if (!sk || !tags)
		return 0;
	BPF_SEQ_PRINTF(ctx->meta->seq, "%llu %llu %u\n", bpf_get_socket_cookie(sk), tags->owner,
		       tags->count);
	return 0;
}
