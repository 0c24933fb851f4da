/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test helper: brings up lo in the current network namespace (a new one starts with it
 * down). Include after <cmocka.h>: asserts on failure.
 */
#ifndef MERCURY_TESTS_LOOPBACK_H
#define MERCURY_TESTS_LOOPBACK_H

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static inline void loopback_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	assert_true(fd >= 0);
	strcpy(ifr.ifr_name, "lo");
	assert_int_equal(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	assert_int_equal(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
}

#endif
