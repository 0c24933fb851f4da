/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* What the emulated ECN-marking switch port (bpf/port_ecn.bpf.c) shares with its loader
 * (bench/port_ecn.c). */
#ifndef MERCURY_PORT_ECN_H
#define MERCURY_PORT_ECN_H

/* The ECN field, the DS byte's low two bits (RFC 3168). */
#define PORT_ECN_MASK	 0x03
#define PORT_ECN_NOT_ECT 0x00
#define PORT_ECN_CE	 0x03

/* enqueue()'s answer for a packet the port's limit refuses. */
#define PORT_ECN_FULL (~0ULL)

/* tc verdicts (linux/pkt_cls.h is not in vmlinux.h) */
#define PORT_ECN_TC_ACT_OK 0

/* Per-CPU counters, summed by the loader. */
enum port_ecn_counter {
	PORT_ECN_PACKETS,     /* every packet seen */
	PORT_ECN_MARKED,      /* CE set (or already set) above the threshold */
	PORT_ECN_NOT_CAPABLE, /* above the threshold, not ECN-capable: left to the tbf */
	PORT_ECN_OVER_LIMIT,  /* the tbf's limit refuses it: dropped there */
	PORT_ECN_NR_COUNTERS,
};

#endif
