/* SPDX-License-Identifier: BSD-2-Clause */
/* The sockets that currently hold tags: a BPF iterator over sock_tags, or sock_diag where the
 * kernel refuses the iterator. */
#ifndef MERCURY_TAGGED_SOCKETS_H
#define MERCURY_TAGGED_SOCKETS_H

#include <stdint.h>

struct tagged_socket {
	uint64_t cookie, owner;
	uint32_t ranges;
};

/* Calls fn for every socket with a sock_tags entry; returns the count or -errno. The
 * iterator sees every namespace's sockets; where it is refused, sock_diag answers for this
 * network namespace's TCP sockets (the ones its interfaces carry). *via (may be NULL) says
 * which: "iterator" or "sock_diag". */
int tagged_sockets_walk(int sock_tags_fd, void (*fn)(const struct tagged_socket *, void *),
			void *arg, const char **via);
/* The sock_diag walk alone (this namespace's TCP sockets). */
int tagged_sockets_diag(int sock_tags_fd, void (*fn)(const struct tagged_socket *, void *),
			void *arg);

#endif
