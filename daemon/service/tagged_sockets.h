/* The sockets that currently hold tags, found with a BPF iterator over sock_tags. */
#ifndef MERCURY_TAGGED_SOCKETS_H
#define MERCURY_TAGGED_SOCKETS_H

#include <stdint.h>

struct tagged_socket {
	uint64_t cookie, owner;
	uint32_t ranges;
};

/* Calls fn for every socket with a sock_tags entry; returns the count or -errno. */
int tagged_sockets_walk(int sock_tags_fd, void (*fn)(const struct tagged_socket *, void *),
			void *arg);

#endif
