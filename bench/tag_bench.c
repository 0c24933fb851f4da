// SPDX-License-Identifier: BSD-2-Clause
/*
 * Event service benchmark (run by bench/events.sh against a live mercuryd serve):
 *   latency:    tag round trip (mercury_tag_next returns once the range is in the kernel
 *               map; a sample is verified by reading the map) p50/p99 over N calls;
 *   throughput: tensors tagged per second from C concurrent clients (threads, one client
 *               each) in batches of 32 tensors;
 *   soak:       S sockets opened, tagged and closed by C clients.
 *   scale:      C clients (1..128) at once, one tensor per call, for -n calls in all: every
 *               call's round trip (p50/p99/p99.9) and the tags/s of all of them together.
 *   core:       one client on one CPU, back to back, untimed calls: tags/s unbatched and in
 *               batches of 8 (the fast path's batch), next to the floor of this machine's
 *               system calls (a getsockopt(SO_TYPE) loop on the same socket), 5 rounds, medians.
 * Usage: tag_bench latency|throughput|soak|scale|core [-n N] [-c CLIENTS] [-j]
 *                  [--map PINNED_SOCK_TAGS]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "mercury.h"
#include "mercury_abi.h"

#define JOB 1

static int listen_fd;
static unsigned batch_size = MERCURY_MAX_BATCH;
static struct sockaddr_in listen_addr;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* A connected TCP pair on loopback; the accepted end is closed right away. */
static int tcp_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), peer;

	if (fd < 0 || connect(fd, (struct sockaddr *)&listen_addr, sizeof(listen_addr)))
		return -1;
	peer = accept(listen_fd, NULL, NULL);
	if (peer >= 0)
		close(peer);
	return fd;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int die(const char *what, int r)
{
	fprintf(stderr, "tag_bench: %s: %s\n", what, mercury_strerror(r));
	exit(1);
}

static void latency(long n, bool json, const char *map_path)
{
	struct mercury_client *m;
	double *t = calloc((size_t)n, sizeof(double));
	int fd = tcp_socket(), map_fd = map_path ? bpf_obj_get(map_path) : -1, r;
	long verified = 0;

	if (!t || fd < 0)
		die("setup", -errno);
	if ((r = mercury_connect(NULL, &m)) || (r = mercury_job_declare(m, JOB, 8, 1)))
		die("connect", r);
	for (long i = 0; i < n; i++) {
		double t0 = now_us();

		/* layer 1 each time: adjacent same-level ranges merge, the table never fills */
		if ((r = mercury_tag_next(m, fd, JOB, 1, MERCURY_PUSH, 0, 1000)))
			die("tag", r);
		t[i] = now_us() - t0;
		if (map_fd >= 0 && i % 1000 == 0) {
			struct mercury_sock_tags tags;

			if (bpf_map_lookup_elem(map_fd, &fd, &tags) == 0 && tags.count &&
			    tags.ranges[tags.count - 1].end >= 1000ull * (i + 1))
				verified++;
		}
	}
	qsort(t, (size_t)n, sizeof(double), cmp_double);
	if (json)
		printf("{\"calls\":%ld,\"p50_us\":%.2f,\"p99_us\":%.2f,\"max_us\":%.2f,\"verified_"
		       "in_map\":%ld}\n",
		       n, t[n / 2], t[n * 99 / 100], t[n - 1], verified);
	else
		printf("tag round trip over %ld calls: p50 %.1f us, p99 %.1f us, max %.1f us "
		       "(%ld samples read back from the map)\n",
		       n, t[n / 2], t[n * 99 / 100], t[n - 1], verified);
	mercury_disconnect(m);
	close(fd);
	free(t);
}

static double median5(double *v)
{
	qsort(v, 5, sizeof(double), cmp_double);
	return v[2];
}

static void core(long n, bool json)
{
	struct mercury_tensor batch[8];
	struct mercury_client *m;
	double floor_ns[5], one_ns[5], batch_ns[5];
	int fd = tcp_socket(), type, r;
	socklen_t len = sizeof(type);
	cpu_set_t cpu;

	CPU_ZERO(&cpu);
	CPU_SET(0, &cpu);
	sched_setaffinity(0, sizeof(cpu), &cpu); /* one core: its own rate, no migration */
	if (fd < 0)
		die("setup", -errno);
	if ((r = mercury_connect(NULL, &m)) || (r = mercury_job_declare(m, JOB, 8, 1)))
		die("connect", r);
	for (int i = 0; i < 8; i++)
		batch[i] = (struct mercury_tensor){.len = 4096, .layer = 1, .iteration = 0};
	for (int round = 0; round < 5; round++) {
		double t0 = now_us(), t1, t2, t3;

		for (long i = 0; i < n; i++)
			getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
		t1 = now_us();
		for (long i = 0; i < n; i++)
			if ((r = mercury_tag_next(m, fd, JOB, 1, MERCURY_PUSH, 0, 4096)))
				die("tag", r);
		t2 = now_us();
		for (long i = 0; i < n / 8; i++)
			if ((r = mercury_tag_batch(m, fd, JOB, batch, 8)))
				die("tag batch", r);
		t3 = now_us();
		floor_ns[round] = (t1 - t0) * 1e3 / n;
		one_ns[round] = (t2 - t1) * 1e3 / n;
		batch_ns[round] = (t3 - t2) * 1e3 / (double)(n / 8 * 8);
	}
	double f = median5(floor_ns), o = median5(one_ns), b = median5(batch_ns);

	printf(json ? "{\"path\":\"%s\",\"syscall_floor_ns\":%.0f,\"tag_ns\":%.0f,"
		      "\"tags_per_s\":%.0f,\"batch8_tags_per_s\":%.0f}\n"
		    : "%s, one core: a getsockopt costs %.0f ns; one tag per call %.0f ns = %.0f "
		      "tags/s; batches of 8: %.0f tags/s\n",
	       mercury_fastpath_active(m) ? "fast path" : "service", f, o, 1e9 / o, 1e9 / b);
	mercury_disconnect(m);
	close(fd);
}

struct worker {
	pthread_t th;
	long n, done;
	int mode; /* 0 throughput, 1 soak, 2 scale */
	int err;
	double *lat; /* scale: one round trip per call, microseconds */
};

static pthread_mutex_t accept_lock = PTHREAD_MUTEX_INITIALIZER;

static int locked_socket(void)
{
	int fd;

	pthread_mutex_lock(&accept_lock);
	fd = tcp_socket();
	pthread_mutex_unlock(&accept_lock);
	return fd;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct mercury_tensor batch[MERCURY_MAX_BATCH];
	struct mercury_client *m;
	int fd = -1, r;

	if ((r = mercury_connect(NULL, &m)) || (r = mercury_job_declare(m, JOB, 8, 1))) {
		w->err = r;
		return NULL;
	}
	for (int i = 0; i < MERCURY_MAX_BATCH; i++)
		batch[i] =
		    (struct mercury_tensor){.len = 4096, .layer = 1, .dir = 0, .iteration = 0};
	if (w->mode != 1)
		fd = locked_socket();
	while (w->done < w->n) {
		if (w->mode == 1) { /* soak: a fresh socket per iteration, three tensors, close */
			fd = locked_socket();
			if (fd < 0) {
				w->err = -errno;
				break;
			}
			batch[1].layer = 3;
			batch[2].layer = 7;
			r = mercury_tag_batch(m, fd, JOB, batch, 3);
			close(fd);
			w->done++;
		} else if (w->mode == 2) {
			double t0 = now_us();

			r = mercury_tag_next(m, fd, JOB, 1, MERCURY_PUSH, 0, 4096);
			w->lat[w->done++] = now_us() - t0;
		} else {
			r = mercury_tag_batch(m, fd, JOB, batch, batch_size);
			w->done += batch_size;
		}
		if (r) {
			w->err = r;
			break;
		}
	}
	if (w->mode != 1)
		close(fd);
	mercury_disconnect(m);
	return NULL;
}

#define MAX_CLIENTS 128

static void report_scale(struct worker *w, int clients, long total, double dt, bool json)
{
	double *all = calloc((size_t)total, sizeof(double));
	long k = 0;

	if (!all)
		die("scale", -ENOMEM);
	for (int i = 0; i < clients; i++)
		for (long j = 0; j < w[i].done; j++)
			all[k++] = w[i].lat[j];
	qsort(all, (size_t)k, sizeof(double), cmp_double);
	printf(json ? "{\"clients\":%d,\"calls\":%ld,\"p50_us\":%.1f,\"p99_us\":%.1f,"
		      "\"p999_us\":%.1f,\"tags_per_s\":%.0f}\n"
		    : "%3d clients, one tensor per call: %ld calls, p50 %.1f us, p99 %.1f us, "
		      "p99.9 %.1f us, %.0f tags/s\n",
	       clients, k, all[k / 2], all[k * 99 / 100], all[k * 999 / 1000], k / dt);
	free(all);
}

static void parallel(int mode, long n, int clients, bool json)
{
	static struct worker w[MAX_CLIENTS];
	long total = 0;
	double t0 = now_us(), dt;

	memset(w, 0, sizeof(w));
	for (int i = 0; i < clients; i++) {
		w[i].n = n / clients;
		w[i].mode = mode;
		if (mode == 2 && !(w[i].lat = calloc((size_t)w[i].n + 1, sizeof(double))))
			die("scale", -ENOMEM);
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	for (int i = 0; i < clients; i++) {
		pthread_join(w[i].th, NULL);
		if (w[i].err)
			die(mode == 2 ? "scale" : mode ? "soak" : "throughput", w[i].err);
		total += w[i].done;
	}
	dt = (now_us() - t0) / 1e6;
	if (mode == 2) {
		report_scale(w, clients, total, dt, json);
		for (int i = 0; i < clients; i++)
			free(w[i].lat);
		return;
	}
	if (mode == 0)
		printf(json ? "{\"clients\":%d,\"batch\":%u,\"tensors\":%ld,\"seconds\":%.3f,"
			      "\"tags_per_s\":%.0f}\n"
			    : "%d clients, batches of %u: %ld tensors in %.2f s, %.0f tags/s\n",
		       clients, batch_size, total, dt, total / dt);
	else
		printf(json ? "{\"clients\":%d,\"sockets\":%ld,\"seconds\":%.3f}\n"
			    : "%d clients opened, tagged and closed %ld sockets in %.2f s\n",
		       clients, total, dt);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"map", required_argument, NULL, 'm'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *map_path = NULL;
	long n = 0;
	int clients = 4, c;
	bool json = false;
	socklen_t len = sizeof(listen_addr);

	while ((c = getopt_long(argc, argv, "n:c:b:jh", opts, NULL)) != -1) {
		if (c == 'b')
			batch_size = (unsigned)atoi(optarg);
		else if (c == 'n')
			n = atol(optarg);
		else if (c == 'c')
			clients = atoi(optarg);
		else if (c == 'j')
			json = true;
		else if (c == 'm')
			map_path = optarg;
		else {
			printf("usage: tag_bench latency|throughput|soak|scale|core [-n N] [-c "
			       "CLIENTS] "
			       "[-b "
			       "BATCH] [-j] "
			       "[--map PINNED_SOCK_TAGS]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1 || clients < 1 || clients > MAX_CLIENTS || batch_size < 1 ||
	    batch_size > MERCURY_MAX_BATCH) {
		fprintf(
		    stderr,
		    "tag_bench: give one of latency, throughput, soak, scale, core (-c 1..%d)\n",
		    MAX_CLIENTS);
		return 2;
	}
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	listen_addr =
	    (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(listen_fd, (struct sockaddr *)&listen_addr, sizeof(listen_addr)) ||
	    listen(listen_fd, 1024) ||
	    getsockname(listen_fd, (struct sockaddr *)&listen_addr, &len)) {
		perror("tag_bench: listen");
		return 1;
	}
	if (!strcmp(argv[optind], "latency"))
		latency(n ? n : 20000, json, map_path);
	else if (!strcmp(argv[optind], "throughput"))
		parallel(0, n ? n : 2000000, clients, json);
	else if (!strcmp(argv[optind], "soak"))
		parallel(1, n ? n : 10000, clients, json);
	else if (!strcmp(argv[optind], "scale"))
		parallel(2, n ? n : 200000, clients, json);
	else if (!strcmp(argv[optind], "core"))
		core(n ? n : 200000, json);
	else
		return 2;
	return 0;
}
