/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Metrics in the Prometheus text format, the way node agents publish them: node_exporter's
 * textfile collector reads <dir>/mercury.prom (written whole, then renamed into place).
 * The data path's counters come from the pins; the event service's from serve itself.
 */
#ifndef MERCURY_METRICS_H
#define MERCURY_METRICS_H

#include <stdint.h>
#include <stdio.h>

#define METRICS_CODES	    134 /* results by -errno; 0 is success */
#define METRICS_LAT_BUCKETS 11

/* What serve counts about its requests. */
struct service_metrics {
	uint64_t by_code[METRICS_CODES];
	uint64_t lat_bucket[METRICS_LAT_BUCKETS]; /* non-cumulative; bounds in metrics.c */
	uint64_t lat_count;
	double lat_sum_s;
	unsigned clients;
	unsigned jobs;
	struct {
		uint32_t uid, job;
		uint64_t oldest_open;
		int open; /* an iteration is open */
	} job[64];
};

/* One request answered with status (0 or -errno) after seconds. */
void service_metrics_observe(struct service_metrics *m, int status, double seconds);

/* Every attached interface of pin_root, then svc's figures if svc is not NULL. */
int metrics_write(FILE *f, const char *pin_root, const struct service_metrics *svc);

/* The same into <dir>/mercury.prom, atomically (a temporary file renamed over it). */
int metrics_write_textfile(const char *dir, const char *pin_root, const struct service_metrics *svc,
			   char *err, size_t errlen);

#endif
