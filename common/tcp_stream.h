/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Where a TCP socket's send stream stands, in the classifier's offset terms (tcpi_bytes_acked
 * based, include/mercury_abi.h): shared by mercuryd's tag store and the parameter server. A
 * .c file of its own because <linux/tcp.h>, which has the counter, and glibc's
 * <netinet/tcp.h>, which callers use, cannot share a translation unit.
 */
#ifndef MERCURY_TCP_STREAM_H
#define MERCURY_TCP_STREAM_H

#include <stdint.h>

/*
 * The kernel's cumulative count of bytes the peer acknowledged (RFC 4898). Unlike "bytes
 * written - SIOCOUTQ" it cannot be read half-way through a write. -EOPNOTSUPP before Linux
 * 4.1; another -errno (not a TCP socket) from getsockopt. *connected (may be NULL): the
 * connection can carry new data (ESTABLISHED or CLOSE_WAIT).
 */
int tcp_bytes_acked(int fd, uint64_t *acked, int *connected);

/* The receive window the peer advertised last, in bytes after scaling (tcpi_snd_wnd):
 * -EOPNOTSUPP where TCP_INFO lacks it (older kernels), another -errno from getsockopt. */
int tcp_peer_window(int fd, uint32_t *window);

/* The stream offset of the next byte written and of the first unacknowledged one
 * (tcpi_bytes_acked + SIOCOUTQ, read until no ACK landed in between); -ENOTCONN when the
 * socket cannot carry new data. */
int sock_stream_position(int fd, uint64_t *next_write, uint64_t *acked);

#endif
