/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test helper: a connected TCP pair over 127.0.0.1 (cmocka asserts on failure). Include after
 * <cmocka.h>. *client is the actively opened end, *server the accepted one.
 */
#ifndef MERCURY_TESTS_TCP_PAIR_H
#define MERCURY_TESTS_TCP_PAIR_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static inline void tcp_pair(int *client, int *server)
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(addr);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&addr, &alen), 0);
	assert_int_equal(listen(lfd, 1), 0);
	*client = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*client >= 0);
	assert_int_equal(connect(*client, (struct sockaddr *)&addr, sizeof(addr)), 0);
	*server = accept(lfd, NULL, NULL);
	assert_true(*server >= 0);
	close(lfd);
}

#endif
