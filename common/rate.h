/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rates on the command line, one convention for mercuryd and mercury-ps, tc's: a number with
 * an optional unit, "bit" units in bits per second (kbit, mbit, gbit, tbit: powers of 1000;
 * no unit: bit/s), "bps" units in bytes per second (kbps, mbps, gbps, tbps), any case.
 */
#ifndef MERCURY_RATE_H
#define MERCURY_RATE_H

#include <stdint.h>

/* Bytes per second; -EINVAL (not a rate), -ERANGE (below 1 B/s or above 10^15 B/s). */
int parse_rate(const char *s, uint64_t *bytes_per_sec);

#endif
