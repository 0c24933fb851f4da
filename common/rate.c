// SPDX-License-Identifier: BSD-2-Clause
/* Command-line rates (rate.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <strings.h>

#include "rate.h"

int parse_rate(const char *s, uint64_t *bytes_per_sec)
{
	static const struct {
		const char *suffix;
		double bits; /* bits per unit */
	} units[] = {
	    {"", 1},	{"bit", 1},    {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9},  {"tbit", 1e12},
	    {"bps", 8}, {"kbps", 8e3}, {"mbps", 8e6}, {"gbps", 8e9}, {"tbps", 8e12},
	};
	char *end;
	double v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].suffix) == 0) {
			double bytes = v * units[i].bits / 8;

			if (bytes < 1 || bytes > 1e15)
				return -ERANGE;
			*bytes_per_sec = (uint64_t)bytes;
			return 0;
		}
	}
	return -EINVAL;
}
