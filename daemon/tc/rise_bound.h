/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How long a level rise takes to take effect on a backend with a guaranteed rate per band
 * (htb). A socket whose bytes now resolve to a more urgent band is held in its previous band
 * by the order guard for at most cfg.order_guard_us; its later packets then go to the new
 * band, but the receiver delivers them only once the socket's bytes already queued in the old
 * band have left, at that band's guaranteed rate r when more urgent traffic fills the link.
 * Those bytes are bounded by TCP small queues (net/ipv4/tcp_output.c,
 * tcp_small_queue_check()): the socket sends while its bytes below TCP are at most
 * L = min(max(2 packets, ~1 ms at its pacing rate), net.ipv4.tcp_limit_output_bytes), so it
 * may hold L plus one packet, and always two packets (a retransmit queue of one packet is
 * never throttled). Linux applies tcp_limit_output_bytes to paced sockets (BBR, fq) from
 * 6.16 only; before that such a socket may hold ~1 ms at its pacing rate.
 *   bound = guard + max(L + P, 2 P) / r,   P = one GSO packet as the qdisc counts it.
 */
#ifndef MERCURY_RISE_BOUND_H
#define MERCURY_RISE_BOUND_H

#include <stdint.h>

/* One 64 KiB GSO packet with its per-segment headers (68130 B measured with 1448-byte
 * segments), rounded up. */
#define RISE_GSO_PACKET 69632u

/* The bound (µs) for guard_us, tcp_limit_output_bytes tsq and guaranteed rate r (bytes/s);
 * UINT64_MAX when r is 0 (no guarantee: unbounded while more urgent bands fill the link). */
uint64_t rise_bound_us(uint32_t guard_us, uint64_t tsq, uint64_t r);

/* The largest tcp_limit_output_bytes for which the bound is at most target_us; 0 when no
 * value gets there (the rate drains less than two packets in that time). */
uint64_t rise_tsq_for(uint32_t guard_us, uint64_t target_us, uint64_t r);

/* net.ipv4.tcp_limit_output_bytes of the caller's network namespace; -errno when unreadable. */
int rise_read_tsq(uint64_t *tsq);

#endif
