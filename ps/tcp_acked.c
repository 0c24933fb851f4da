/*
 * Bytes of a TCP connection its peer has acknowledged, from the kernel's own cumulative
 * counter (tcpi_bytes_acked, RFC 4898). Unlike "bytes written - SIOCOUTQ" it cannot be read
 * half-way through a write: the bytes a write has queued count in SIOCOUTQ before the writer
 * can add them to its own tally, so that difference dips below what was really acknowledged.
 *
 * A file of its own because <linux/tcp.h>, which has the field, and glibc's <netinet/tcp.h>,
 * which the rest of ps/ uses, cannot share a translation unit.
 */
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "node.h"

int ps_tcp_bytes_acked(int fd, uint64_t *acked)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return -errno;
	/* Kernels before 4.1 return a shorter struct without the counter. */
	if (len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
		return -EOPNOTSUPP;
	*acked = ti.tcpi_bytes_acked;
	return 0;
}
