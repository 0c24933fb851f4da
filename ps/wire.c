// SPDX-License-Identifier: BSD-2-Clause
/* Wire protocol helpers: whole reads, header+payload writes, the test gradient values. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ps.h"
#include "wire.h"

int ps_read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n == 0)
			return -ENODATA; /* peer closed the stream */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ps_write_msg(int fd, const struct ps_msg_hdr *h, const void *payload, size_t payload_len)
{
	struct iovec iov[2] = {{(void *)h, sizeof(*h)}, {(void *)payload, payload_len}};
	int cnt = payload_len ? 2 : 1, i = 0;

	while (i < cnt) {
		struct msghdr m = {.msg_iov = iov + i, .msg_iovlen = (size_t)(cnt - i)};
		ssize_t n =
		    sendmsg(fd, &m, MSG_NOSIGNAL); /* a vanished peer is an error, not a signal */

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (i < cnt && (size_t)n >= iov[i].iov_len) {
			n -= (ssize_t)iov[i].iov_len;
			i++;
		}
		if (i < cnt) {
			iov[i].iov_base = (char *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	return 0;
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Random sign, mantissa and an exponent spread over 2^-7..2^7, so that float sums round
 * differently in different orders: a summation-order bug shows up as a mismatch. */
float ps_grad_value(int worker, int layer, uint64_t iter, uint64_t index)
{
	uint64_t h = splitmix64(
	    splitmix64(splitmix64((uint64_t)worker << 32 | (uint32_t)layer) ^ iter) ^ index);
	uint32_t bits = (uint32_t)(h & 0x807fffffu) | (uint32_t)(120 + (h >> 40) % 14) << 23;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}
