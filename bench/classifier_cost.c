// SPDX-License-Identifier: BSD-2-Clause
/*
 * Cost of the classifier per packet, measured with BPF_PROG_TEST_RUN: a no-op tc program
 * (the harness's own cost), the test variant on a tagged IPv4 TCP segment (32 ranges of job
 * tags, the hit taken through the socket view from maps, its level computed from the job's
 * state as for every framework's tag) and, for reference, the production program on
 * the same packet (its dummy socket takes the NO_OFFSET path). Rounds alternate the programs
 * so that drift hits all of them alike; the medians are printed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "mercury_abi.h"
#include "job_level.h"
#include "classifier_test_view.h"
#include "classifier.skel.h"
#include "classifier_test.skel.h"
#include "noop.skel.h"

#define MAX_ROUNDS    1000
#define PAYLOAD	      1448
#define RANGE_BYTES   100000ull
#define BYTES_ACKED   (5ull << 30) /* beyond 4 GiB, as on a long-lived connection */
#define SND_UNA	      0xfffff000u  /* near the wrap */
#define PRIORITY_BASE 0x10010u
#define NPROGS	      3

enum prog_id { PROG_NOOP, PROG_TEST, PROG_PROD };
static const char *const prog_names[NPROGS] = {"noop", "classifier", "production"};

struct options {
	unsigned int rounds;
	unsigned int repeat;
	unsigned int hit; /* index of the range the packet's offset falls in */
	bool json;
	bool dscp; /* DSCP export on (attach --dscp default): the tagged packet's TOS rewritten */
	bool dscp_guard; /* with dscp: the fabric order guard on (attach --dscp-guard on) */
};

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [-j] [--rounds N] [--repeat N] [--hit I] [--dscp] [--dscp-guard]\n"
		"  Per-packet cost of the Mercury classifier under BPF_PROG_TEST_RUN (root).\n"
		"  -j, --json     print JSON\n"
		"  --rounds N     rounds, each runs every program once (default 9, at least 7)\n"
		"  --repeat N     runs per program per round (default 1000000)\n"
		"  --hit I        range index 0..31 the packet hits (default 16, the middle)\n"
		"  --dscp         DSCP export on (the map of attach --dscp default)\n"
		"  --dscp-guard   and the fabric order guard on (its no-rise path: the\n"
		"                 packet's band is its socket's last one)\n",
		argv0);
}

static int parse_uint(const char *s, unsigned int min, unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v < min || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},	      {"rounds", required_argument, NULL, 'r'},
	    {"repeat", required_argument, NULL, 'n'}, {"hit", required_argument, NULL, 'i'},
	    {"dscp", no_argument, NULL, 'D'},	      {"dscp-guard", no_argument, NULL, 'G'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct options){.rounds = 9, .repeat = 1000000, .hit = 16};
	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'r':
			if (parse_uint(optarg, 7, MAX_ROUNDS, &o->rounds)) {
				fprintf(stderr, "--rounds: want 7..%d, got '%s'\n", MAX_ROUNDS,
					optarg);
				return -EINVAL;
			}
			break;
		case 'n':
			if (parse_uint(optarg, 1, 100000000, &o->repeat)) {
				fprintf(stderr, "--repeat: want 1..100000000, got '%s'\n", optarg);
				return -EINVAL;
			}
			break;
		case 'i':
			if (parse_uint(optarg, 0, MERCURY_RANGES_PER_SOCK - 1, &o->hit)) {
				fprintf(stderr, "--hit: want 0..%d, got '%s'\n",
					MERCURY_RANGES_PER_SOCK - 1, optarg);
				return -EINVAL;
			}
			break;
		case 'D':
			o->dscp = true;
			break;
		case 'G':
			o->dscp = o->dscp_guard = true;
			break;
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		default:
			usage(stderr, argv[0]);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return -EINVAL;
	}
	return 0;
}

/* Ethernet + IPv4 + TCP (ACK|PSH) with PAYLOAD bytes; returns the frame length. */
static size_t build_ipv4_tcp(uint8_t *buf, uint32_t seq)
{
	struct ethhdr *eth = (struct ethhdr *)buf;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct tcphdr *th = (struct tcphdr *)(ip + 1);
	size_t len = sizeof(*eth) + sizeof(*ip) + sizeof(*th) + PAYLOAD;

	memset(buf, 0, len);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_TCP;
	ip->tot_len = htons((uint16_t)(len - sizeof(*eth)));
	ip->saddr = htonl(0x0a000001);
	ip->daddr = htonl(0x0a000002);
	th->source = htons(40000);
	th->dest = htons(9000);
	th->seq = htonl(seq);
	th->doff = 5;
	th->ack = 1;
	th->psh = 1;
	th->window = htons(65535);
	return len;
}

static void fill_cfg(struct mercury_iface_cfg *cfg, bool dscp, bool guard)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nbands = 4;
	cfg->default_band = 3;
	for (unsigned int l = 0; l < MERCURY_MAX_LEVELS; l++)
		cfg->band_of_level[l] = l < 3 ? l : 3;
	for (unsigned int b = 0; b < MERCURY_MAX_BANDS; b++)
		cfg->skb_priority[b] = PRIORITY_BASE + b;
	cfg->dscp_on = dscp;
	cfg->dscp_guard = dscp && guard; /* no bound: attach's default */
	for (unsigned int b = 0; dscp && b < MERCURY_MAX_BANDS; b++)
		cfg->dscp[b] = b < 4 ? (uint8_t)((5 - b) << 3) : 0; /* attach --dscp default */
}

static int set_map(const struct bpf_map *map, const void *value, const char *what)
{
	uint32_t zero = 0;
	int err = bpf_map_update_elem(bpf_map__fd(map), &zero, value, BPF_ANY);

	if (err)
		fprintf(stderr, "writing map %s: %s; run as root\n", what, strerror(-err));
	return err;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * Runs prog repeat times on the packet. *ns gets the mean wall time per run: the kernel's
 * own figure is whole nanoseconds, too coarse here; the syscall and skb setup around the
 * loop add about 1 us per call, 0.001 ns per run at the default repeat.
 */
static int run_prog(int fd, const uint8_t *pkt, size_t len, unsigned int repeat, double *ns,
		    uint32_t *priority)
{
	struct __sk_buff ctx = {.priority = 0xdead};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = (uint32_t)len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx), .repeat = repeat);
	double t0 = now_ns();
	int err = bpf_prog_test_run_opts(fd, &opts);
	double t1 = now_ns();

	if (err) {
		fprintf(stderr, "BPF_PROG_TEST_RUN: %s\n", strerror(-err));
		return err;
	}
	if (opts.retval != (uint32_t)-1) {
		fprintf(stderr, "program returned %d, not TC_ACT_UNSPEC\n", (int)opts.retval);
		return -EPROTO;
	}
	*ns = (t1 - t0) / repeat;
	if (priority)
		*priority = ctx.priority;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

struct results {
	double median_ns[NPROGS];
	double min_ns[NPROGS], max_ns[NPROGS];
};

static void print_text(const struct options *o, const struct results *r)
{
	printf("BPF_PROG_TEST_RUN, %u rounds x %u runs, IPv4 TCP %d B payload, hit range %u/32, "
	       "DSCP export %s%s\n",
	       o->rounds, o->repeat, PAYLOAD, o->hit, o->dscp ? "on" : "off",
	       o->dscp_guard ? ", fabric guard on" : "");
	for (int p = 0; p < NPROGS; p++)
		printf("  %-11s median %6.2f ns/run  (min %.2f, max %.2f)\n", prog_names[p],
		       r->median_ns[p], r->min_ns[p], r->max_ns[p]);
	printf("  classifier - noop: %.2f ns (target <= 25)\n",
	       r->median_ns[PROG_TEST] - r->median_ns[PROG_NOOP]);
	printf("  production - noop: %.2f ns (dummy socket: NO_OFFSET path)\n",
	       r->median_ns[PROG_PROD] - r->median_ns[PROG_NOOP]);
}

static void print_json(const struct options *o, const struct results *r)
{
	struct json_object *root = json_object_new_object(), *progs = json_object_new_object();

	json_object_object_add(root, "rounds", json_object_new_int((int)o->rounds));
	json_object_object_add(root, "repeat", json_object_new_int((int)o->repeat));
	json_object_object_add(root, "hit_range", json_object_new_int((int)o->hit));
	json_object_object_add(root, "dscp", json_object_new_boolean(o->dscp));
	json_object_object_add(root, "dscp_guard", json_object_new_boolean(o->dscp_guard));
	for (int p = 0; p < NPROGS; p++) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, "median_ns", json_object_new_double(r->median_ns[p]));
		json_object_object_add(j, "min_ns", json_object_new_double(r->min_ns[p]));
		json_object_object_add(j, "max_ns", json_object_new_double(r->max_ns[p]));
		json_object_object_add(progs, prog_names[p], j);
	}
	json_object_object_add(root, "programs", progs);
	json_object_object_add(
	    root, "classifier_minus_noop_ns",
	    json_object_new_double(r->median_ns[PROG_TEST] - r->median_ns[PROG_NOOP]));
	json_object_object_add(
	    root, "production_minus_noop_ns",
	    json_object_new_double(r->median_ns[PROG_PROD] - r->median_ns[PROG_NOOP]));
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY));
	json_object_put(root);
}

int main(int argc, char **argv)
{
	static double samples[NPROGS][MAX_ROUNDS];
	struct classifier_test_bpf *test = NULL;
	struct classifier_bpf *prod = NULL;
	struct noop_bpf *noop = NULL;
	struct mercury_sock_tags tags = {.count = MERCURY_RANGES_PER_SOCK};
	struct mercury_test_view view = {.has_sock = 1, .snd_una = SND_UNA};
	struct mercury_job_state job = {
	    .gen = 1, .active = 1, .n_layers = 8, .weight = 1, .has_open = 1, .oldest_open = 7};
	struct mercury_iface_cfg cfg;
	uint32_t want;
	struct options o;
	struct results r = {0};
	uint8_t pkt[2048];
	uint32_t prio, seq;
	int fds[NPROGS], err;
	size_t len;

	if (parse_options(argc, argv, &o))
		return 2;
	if (geteuid() != 0) {
		fprintf(stderr, "classifier_cost: needs root (BPF_PROG_TEST_RUN)\n");
		return 77;
	}

	noop = noop_bpf__open_and_load();
	test = classifier_test_bpf__open_and_load();
	prod = classifier_bpf__open_and_load();
	if (!noop || !test || !prod) {
		fprintf(stderr, "loading the BPF objects failed (see libbpf messages above)\n");
		err = 1;
		goto out;
	}

	/* 32 ranges of RANGE_BYTES from BYTES_ACKED - 10 ranges; the packet hits range o.hit.
	 * Job tags of a job of 8 layers with iteration 7 open: layers 1..8 of iterations 7, 8. */
	for (unsigned int i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		tags.ranges[i].start = BYTES_ACKED - 10 * RANGE_BYTES + i * RANGE_BYTES;
		tags.ranges[i].end = tags.ranges[i].start + RANGE_BYTES - 1000; /* gaps */
		tags.ranges[i].job = 1;
		tags.ranges[i].job_gen = 1;
		tags.ranges[i].layer = (uint16_t)(i % 8 + 1);
		tags.ranges[i].iteration = 7 + (i / 8) % 2;
	}
	view.bytes_acked = BYTES_ACKED;
	view.has_tags = 1;
	/* seq such that offset = bytes_acked + (s32)(seq - snd_una) = middle of range o.hit */
	seq = SND_UNA + (uint32_t)(tags.ranges[o.hit].start + 500 - BYTES_ACKED);
	len = build_ipv4_tcp(pkt, seq);
	fill_cfg(&cfg, o.dscp, o.dscp_guard);
	err = set_map(test->maps.cfg, &cfg, "cfg") ?: set_map(prod->maps.cfg, &cfg, "cfg") ?:
	      set_map(test->maps.test_view, &view, "test_view") ?:
	      set_map(test->maps.test_tags, &tags, "test_tags") ?:
	      set_map(test->maps.jobs, &job, "jobs");
	if (err)
		goto out;

	fds[PROG_NOOP] = bpf_program__fd(noop->progs.mercury_noop);
	fds[PROG_TEST] = bpf_program__fd(test->progs.mercury_egress_test);
	fds[PROG_PROD] = bpf_program__fd(prod->progs.mercury_egress);

	/* The measured path must be the tagged hit: check the band before timing. */
	err = run_prog(fds[PROG_TEST], pkt, len, 1, &samples[0][0], &prio);
	if (err)
		goto out;
	want = PRIORITY_BASE +
	       cfg.band_of_level[mercury_job_level(&job, tags.ranges[o.hit].layer,
						   tags.ranges[o.hit].iteration, cfg.nbands)];
	if (prio != want) {
		fprintf(stderr, "classifier set priority %#x, not the tagged band's %#x\n", prio,
			want);
		err = 1;
		goto out;
	}

	for (unsigned int round = 0; round < o.rounds; round++)
		for (int p = 0; p < NPROGS; p++) {
			err = run_prog(fds[p], pkt, len, o.repeat, &samples[p][round], NULL);
			if (err)
				goto out;
		}
	for (int p = 0; p < NPROGS; p++) {
		r.min_ns[p] = 1e300;
		for (unsigned int i = 0; i < o.rounds; i++) {
			r.min_ns[p] = samples[p][i] < r.min_ns[p] ? samples[p][i] : r.min_ns[p];
			r.max_ns[p] = samples[p][i] > r.max_ns[p] ? samples[p][i] : r.max_ns[p];
		}
		r.median_ns[p] = median(samples[p], o.rounds);
	}
	if (o.json)
		print_json(&o, &r);
	else
		print_text(&o, &r);
out:
	classifier_bpf__destroy(prod);
	classifier_test_bpf__destroy(test);
	noop_bpf__destroy(noop);
	return err ? 1 : 0;
}
