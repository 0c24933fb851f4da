// SPDX-License-Identifier: BSD-2-Clause
/*
 * Example: a "worker" sends tensors of several layers to a peer over one TCP connection per
 * layer group, tagging each with libmercury before writing it, then prints where the
 * classifier put its bytes. Usage: tag_tensor HOST PORT [n_layers] [tensor_bytes]
 * Build: cc -std=c11 tag_tensor.c $(pkg-config --cflags --libs mercury)
 */
#ifndef _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L /* getaddrinfo under -std=c11 */
#endif
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mercury.h"

#define JOB 1

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	int fd;

	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

int main(int argc, char **argv)
{
	unsigned layers = argc > 3 ? (unsigned)atoi(argv[3]) : 4;
	size_t size = argc > 4 ? (size_t)atol(argv[4]) : 1 << 20;
	struct mercury_client *m;
	int fds[16], r;
	char *buf;

	if (argc < 3 || layers < 1 || layers > 16) {
		fprintf(stderr, "usage: %s HOST PORT [n_layers<=16] [tensor_bytes]\n", argv[0]);
		return 2;
	}
	if ((r = mercury_connect(NULL, &m))) {
		fprintf(stderr, "tag_tensor: mercury_connect: %s\n", mercury_strerror(r));
		return 1;
	}
	buf = calloc(1, size);
	if (!buf || (r = mercury_job_declare(m, JOB, layers, 1)) ||
	    (r = mercury_iteration_begin(m, JOB, 0))) {
		fprintf(stderr, "tag_tensor: %s\n", mercury_strerror(r));
		return 1;
	}
	/* One socket per layer: a layer never waits behind another inside one stream. */
	for (unsigned l = 0; l < layers; l++) {
		fds[l] = dial(argv[1], argv[2]);
		if (fds[l] < 0 || (r = mercury_register_socket(m, fds[l]))) {
			fprintf(stderr, "tag_tensor: socket %u: %s\n", l,
				fds[l] < 0 ? "connect failed" : mercury_strerror(r));
			return 1;
		}
	}
	for (unsigned l = layers; l-- > 0;) { /* backward pass order: last layer first */
		ssize_t n = mercury_send_tensor(m, fds[l], buf, size, JOB, l + 1, MERCURY_PUSH, 0);

		if (n < 0) {
			fprintf(stderr, "tag_tensor: layer %u: %s\n", l + 1,
				mercury_strerror((int)n));
			return 1;
		}
	}
	sleep(1); /* let the data drain so the counters are complete */
	for (unsigned l = 0; l < layers; l++) {
		struct mercury_socket_stats st;

		if ((r = mercury_socket_stats(m, fds[l], &st)) == 0) {
			printf("layer %u:", l + 1);
			for (int b = 0; b < 16; b++)
				if (st.bytes[b])
					printf(" band%d=%llu", b, (unsigned long long)st.bytes[b]);
			printf("\n");
		}
		close(fds[l]);
	}
	mercury_iteration_end(m, JOB, 0);
	mercury_disconnect(m);
	free(buf);
	return 0;
}
