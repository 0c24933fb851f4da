// SPDX-License-Identifier: BSD-2-Clause
/* A TCP socket's stream position from TCP_INFO and SIOCOUTQ (tcp_stream.h). */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>

#include "tcp_stream.h"

/* tcpi_state values (include/net/tcp_states.h); linux/tcp.h does not export them. */
enum { TCPI_ESTABLISHED = 1, TCPI_CLOSE_WAIT = 8 };

/* TCP_INFO up to and including the field that ends at `need` bytes: -EOPNOTSUPP from a
 * kernel whose struct stops short of it. */
#define TCP_INFO_UPTO(field)                                                                       \
	(offsetof(struct tcp_info, field) + sizeof(((struct tcp_info *)0)->field))
static int tcp_info_read(int fd, struct tcp_info *ti, size_t need)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len))
		return -errno;
	return len < need ? -EOPNOTSUPP : 0;
}

int tcp_bytes_acked(int fd, uint64_t *acked, int *connected)
{
	struct tcp_info ti;
	int r = tcp_info_read(fd, &ti, TCP_INFO_UPTO(tcpi_bytes_acked)); /* Linux >= 4.1 */

	if (r)
		return r;
	*acked = ti.tcpi_bytes_acked;
	if (connected)
		*connected = ti.tcpi_state == TCPI_ESTABLISHED || ti.tcpi_state == TCPI_CLOSE_WAIT;
	return 0;
}

int tcp_peer_window(int fd, uint32_t *window)
{
	struct tcp_info ti;
	int r = tcp_info_read(fd, &ti, TCP_INFO_UPTO(tcpi_snd_wnd));

	if (r)
		return r;
	*window = ti.tcpi_snd_wnd;
	return 0;
}

int sock_stream_position(int fd, uint64_t *next_write, uint64_t *acked)
{
	/* acked + unacked-or-unsent is invariant under ACK arrival; read it until an ACK did
	 * not land between the two calls (bounded: ACKs cannot keep arriving forever). */
	for (int tries = 0; tries < 16; tries++) {
		uint64_t a1, a2;
		int outq, connected, r;

		if ((r = tcp_bytes_acked(fd, &a1, &connected)))
			return r;
		if (!connected)
			return -ENOTCONN;
		if (ioctl(fd, SIOCOUTQ, &outq))
			return -errno;
		if ((r = tcp_bytes_acked(fd, &a2, &connected)))
			return r;
		if (!connected)
			return -ENOTCONN;
		if (a1 == a2) {
			*acked = a1;
			*next_write = a1 + (uint64_t)outq;
			return 0;
		}
	}
	return -EAGAIN;
}
