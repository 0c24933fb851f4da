// SPDX-License-Identifier: BSD-2-Clause
/* The time bound of a level rise (rise_bound.h). */
#include "rise_bound.h"

#include <errno.h>
#include <stdio.h>

uint64_t rise_bound_us(uint32_t guard_us, uint64_t tsq, uint64_t r)
{
	uint64_t q = tsq + RISE_GSO_PACKET;

	if (!r)
		return UINT64_MAX;
	if (q < 2ull * RISE_GSO_PACKET)
		q = 2ull * RISE_GSO_PACKET;
	return guard_us + (q * 1000000ull + r - 1) / r;
}

uint64_t rise_tsq_for(uint32_t guard_us, uint64_t target_us, uint64_t r)
{
	uint64_t q;

	if (target_us <= guard_us)
		return 0;
	q = (target_us - guard_us) * r / 1000000ull; /* bytes r drains in the time left */
	if (q < 2ull * RISE_GSO_PACKET)
		return 0;
	return q - RISE_GSO_PACKET;
}

int rise_read_tsq(uint64_t *tsq)
{
	/* /proc/sys/net follows the network namespace of the process that opens it */
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_limit_output_bytes", "re");
	unsigned long long v;
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	if (n != 1)
		return -EINVAL;
	*tsq = v;
	return 0;
}
