// SPDX-License-Identifier: BSD-2-Clause
/* Prometheus text metrics of the data path and the event service (metrics.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "tc/band_plan.h"
#include "loader/iface_pins.h"
#include "metrics.h"
#include "loader/pins.h"
#include "tagged_sockets.h"

/* Upper bounds (seconds) of the request latency buckets; +Inf follows. */
static const double lat_bounds[METRICS_LAT_BUCKETS] = {2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4,
						       2e-4, 5e-4, 1e-3, 1e-2, 1e-1};

void service_metrics_observe(struct service_metrics *m, int status, double seconds)
{
	int code = status < 0 ? -status : 0;

	m->by_code[code < METRICS_CODES ? code : METRICS_CODES - 1]++;
	for (int i = 0; i < METRICS_LAT_BUCKETS; i++) {
		if (seconds <= lat_bounds[i]) {
			m->lat_bucket[i]++;
			break;
		}
	}
	m->lat_count++;
	m->lat_sum_s += seconds;
}

/* A label value with \, " and newline escaped, as the text format wants. */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*v, f);
	}
}

/* One series of an interface's counter: name{iface="..."} value. */
static void put_iface_count(FILE *f, const char *name, const char *iface, unsigned long long v)
{
	fprintf(f, "%s{iface=\"", name);
	put_label(f, iface);
	fprintf(f, "\"} %llu\n", v);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct iface_walk {
	FILE *f;
	const char *root;
	int pass; /* one metric family per pass over the interfaces */
};

static int iface_metrics(const char *iface, void *arg)
{
	struct iface_walk *w = arg;
	struct mercury_attach_state st;
	struct mercury_stats sum;
	FILE *f = w->f;

	if (iface_state_read(w->root, iface, &st) || iface_stats_read(w->root, iface, &sum))
		return 0; /* an unreadable record: status says why; metrics skip it */
	switch (w->pass) {
	case 0:
		fputs("mercury_iface_info{iface=\"", f);
		put_label(f, iface);
		fprintf(f, "\",backend=\"%s\",hook=\"%s\",health=\"%s\"} 1\n",
			backend_name(st.backend), iface_hook_name(st.hook),
			iface_health(w->root, iface, &st));
		break;
	case 1:
		fputs("mercury_iface_healthy{iface=\"", f);
		put_label(f, iface);
		fprintf(f, "\"} %d\n", !strcmp(iface_health(w->root, iface, &st), "ok"));
		break;
	case 2:
		fputs("mercury_iface_bands{iface=\"", f);
		put_label(f, iface);
		fprintf(f, "\"} %u\n", st.nbands);
		break;
	case 3:
	case 4:
		for (unsigned b = 0; b < st.nbands && b < MERCURY_MAX_BANDS; b++) {
			fprintf(f, "mercury_band_%s_total{iface=\"",
				w->pass == 3 ? "packets" : "bytes");
			put_label(f, iface);
			fprintf(f, "\",band=\"%u\"} %llu\n", b,
				(unsigned long long)(w->pass == 3 ? sum.band[b].packets
								  : sum.band[b].bytes));
		}
		break;
	case 5:
	case 6:
		for (int o = 0; o < MERCURY_OUT_MAX; o++) {
			fprintf(f, "mercury_outcome_%s_total{iface=\"",
				w->pass == 5 ? "packets" : "bytes");
			put_label(f, iface);
			fprintf(f, "\",outcome=\"%s\"} %llu\n", iface_outcome_name(o),
				(unsigned long long)(w->pass == 5 ? sum.outcome[o].packets
								  : sum.outcome[o].bytes));
		}
		break;
	case 7:
		put_iface_count(f, "mercury_order_kept_packets_total", iface,
				sum.order_kept.packets);
		break;
	case 10:
		put_iface_count(f, "mercury_order_released_packets_total", iface,
				sum.order_released.packets);
		break;
	case 8: /* the DSCP export: one series a band while it is on, none when off */
		for (unsigned b = 0; st.dscp_on && b < st.nbands && b < MERCURY_MAX_BANDS; b++) {
			fputs("mercury_band_dscp{iface=\"", f);
			put_label(f, iface);
			fprintf(f, "\",band=\"%u\"} %u\n", b, st.dscp[b]);
		}
		break;
	case 9:
		put_iface_count(f, "mercury_dscp_marked_packets_total", iface,
				sum.dscp_marked.packets);
		break;
	case 11:
		put_iface_count(f, "mercury_dscp_kept_packets_total", iface, sum.dscp_kept.packets);
		break;
	case 12:
		put_iface_count(f, "mercury_dscp_released_packets_total", iface,
				sum.dscp_released.packets);
		break;
	}
	return 0;
}

static void datapath_metrics(FILE *f, const char *root)
{
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
	    {"mercury_iface_info", "gauge", "An attached interface: backend, hook and health."},
	    {"mercury_iface_healthy", "gauge", "1 when every piece attach installed is in place."},
	    {"mercury_iface_bands", "gauge", "Priority bands of the interface's qdisc."},
	    {"mercury_band_packets_total", "counter", "Packets the classifier put in each band."},
	    {"mercury_band_bytes_total", "counter", "Bytes the classifier put in each band."},
	    {"mercury_outcome_packets_total", "counter", "Packets by classifier decision."},
	    {"mercury_outcome_bytes_total", "counter", "Bytes by classifier decision."},
	    {"mercury_order_kept_packets_total", "counter",
	     "Packets kept in their socket's previous band so as not to reorder its stream."},
	    {"mercury_band_dscp", "gauge",
	     "DSCP written into tagged packets of each band (attach --dscp; absent when off)."},
	    {"mercury_dscp_marked_packets_total", "counter",
	     "Tagged packets whose IP header got their band's DSCP."},
	    {"mercury_order_released_packets_total", "counter",
	     "Level rises the order guard let through at its time bound, its socket's earlier "
	     "packets still queued."},
	    {"mercury_dscp_kept_packets_total", "counter",
	     "Tagged packets that kept their socket's previous DSCP because bytes it sent before "
	     "were unacknowledged (the fabric order guard)."},
	    {"mercury_dscp_released_packets_total", "counter",
	     "DSCP rises the fabric order guard let through at its time bound."},
	};
	struct iface_walk w = {.f = f, .root = root};
	char path[PATH_MAX];
	int fd, n;

	for (w.pass = 0; w.pass < (int)(sizeof(fams) / sizeof(fams[0])); w.pass++) {
		family(f, fams[w.pass].name, fams[w.pass].type, fams[w.pass].help);
		iface_for_each(root, iface_metrics, &w);
	}
	pins_path(path, sizeof(path), root, NULL, "sock_tags");
	fd = bpf_obj_get(path);
	n = fd >= 0 ? tagged_sockets_walk(fd, NULL, NULL, NULL) : 0;
	if (fd >= 0)
		close(fd);
	if (n >= 0) { /* left out where the kernel refuses the iterator that counts them */
		family(f, "mercury_tagged_sockets", "gauge", "Sockets holding tagged ranges.");
		fprintf(f, "mercury_tagged_sockets %d\n", n);
	}
}

static void service_metrics_put(FILE *f, const struct service_metrics *m)
{
	uint64_t cum = 0;

	family(f, "mercury_service_requests_total", "counter",
	       "Requests answered by the event service, by result.");
	for (int c = 0; c < METRICS_CODES; c++) {
		const char *name = c ? strerrorname_np(c) : "ok";

		if (!m->by_code[c] && c)
			continue;
		fprintf(f, "mercury_service_requests_total{result=\"%s\"} %llu\n",
			name ? name : "other", (unsigned long long)m->by_code[c]);
	}
	family(f, "mercury_service_request_duration_seconds", "histogram",
	       "Time from a request's arrival to its reply.");
	for (int i = 0; i < METRICS_LAT_BUCKETS; i++) {
		cum += m->lat_bucket[i];
		fprintf(f, "mercury_service_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
			lat_bounds[i], (unsigned long long)cum);
	}
	fprintf(f, "mercury_service_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n",
		(unsigned long long)m->lat_count);
	fprintf(f, "mercury_service_request_duration_seconds_sum %.9f\n", m->lat_sum_s);
	fprintf(f, "mercury_service_request_duration_seconds_count %llu\n",
		(unsigned long long)m->lat_count);
	family(f, "mercury_service_clients", "gauge", "Connected clients.");
	fprintf(f, "mercury_service_clients %u\n", m->clients);
	family(f, "mercury_service_jobs", "gauge", "Declared jobs.");
	fprintf(f, "mercury_service_jobs %u\n", m->jobs);
	family(f, "mercury_service_job_oldest_open_iteration", "gauge",
	       "The oldest iteration a job has begun and not ended.");
	for (unsigned j = 0; j < m->jobs && j < 64; j++)
		if (m->job[j].open)
			fprintf(f,
				"mercury_service_job_oldest_open_iteration{uid=\"%u\",job=\"%u\"} "
				"%llu\n",
				m->job[j].uid, m->job[j].job,
				(unsigned long long)m->job[j].oldest_open);
}

int metrics_write(FILE *f, const char *pin_root, const struct service_metrics *svc)
{
	datapath_metrics(f, pin_root);
	if (svc)
		service_metrics_put(f, svc);
	return ferror(f) ? -EIO : 0;
}

int metrics_write_textfile(const char *dir, const char *pin_root, const struct service_metrics *svc,
			   char *err, size_t errlen)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/mercury.prom", dir);
	/* node_exporter skips files not ending in .prom: a half-written one is never read */
	snprintf(tmp, sizeof(tmp), "%s/.mercury.prom.%d", dir, (int)getpid());
	/* 0644 whatever the umask: node_exporter runs as its own user, and the unit's
	 * UMask=0077 would leave the file readable by root alone (counters, nothing secret) */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || fchmod(fd, 0644) || !(f = fdopen(fd, "w"))) {
		r = -errno;
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(-r));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return r;
	}
	r = metrics_write(f, pin_root, svc);
	if (fclose(f) && !r)
		r = -errno;
	if (!r && rename(tmp, path))
		r = -errno;
	if (r) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-r));
		unlink(tmp);
	}
	return r;
}
