// SPDX-License-Identifier: BSD-2-Clause
/*
 * port_ecn: puts the ECN-marking program (bpf/port_ecn.bpf.c) on an emulated switch port's
 * egress, in front of the tbf FIFO that cluster/lib.sh gives every port, and reads its
 * counters. The program keeps its own model of the port's queue, so it is told the tbf's
 * rate, burst and limit, and the queue length above which ECN-capable packets get CE.
 *
 *   port_ecn attach DEV --rate R --limit BYTES --mark-above BYTES [--burst BYTES] [--pin PATH]
 *   port_ecn detach DEV
 *   port_ecn stats --pin PATH [-j]
 *
 * The filter stays after the command exits (clsact, Mercury's handle and priority); the
 * counters outlive it only where --pin names a bpffs path for them.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "rate.h"
#include "tc/tc_hook.h"
#include "port_ecn.h"
#include "port_ecn.skel.h"

static const char *const counter_names[PORT_ECN_NR_COUNTERS] = {
    [PORT_ECN_PACKETS] = "packets",
    [PORT_ECN_MARKED] = "marked",
    [PORT_ECN_NOT_CAPABLE] = "not_capable_above_threshold",
    [PORT_ECN_OVER_LIMIT] = "over_limit",
};

struct options {
	uint64_t rate, limit, burst, mark_above;
	const char *pin;
	bool json;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: port_ecn attach DEV --rate R --limit BYTES --mark-above BYTES\n"
	    "                       [--burst BYTES] [--pin PATH]\n"
	    "       port_ecn detach DEV\n"
	    "       port_ecn stats --pin PATH [-j]\n"
	    "  An emulated switch port that marks ECN: CE on an ECN-capable packet that\n"
	    "  arrives while the port's queue (modelled: bytes in, drained at R) holds more\n"
	    "  than --mark-above bytes. Put it in front of a tbf with the same rate, burst\n"
	    "  and limit (cluster/lib.sh CL_PORT_ECN=1 does). Root.\n"
	    "  --rate R          the port's rate, tc's units (400mbit, 50mbps)\n"
	    "  --limit BYTES     the tbf's limit: a packet that would overflow it is not counted\n"
	    "  --mark-above B    the marking threshold, below --limit\n"
	    "  --burst BYTES     the tbf's burst (default 65536)\n"
	    "  --pin PATH        pin the counters map there (bpffs), for `stats`\n"
	    "  -j, --json        stats as JSON\n");
}

static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v == 0 || v > (1ULL << 40))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
	    {"rate", required_argument, NULL, 'r'},  {"limit", required_argument, NULL, 'l'},
	    {"burst", required_argument, NULL, 'b'}, {"mark-above", required_argument, NULL, 'm'},
	    {"pin", required_argument, NULL, 'p'},   {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},	     {NULL, 0, NULL, 0}};
	int c;

	o->burst = 65536;
	while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (parse_rate(optarg, &o->rate)) {
				fprintf(stderr, "port_ecn: --rate %s: not a rate (e.g. 400mbit)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'l':
		case 'b':
		case 'm':
			if (parse_bytes(optarg, c == 'l'   ? &o->limit
						: c == 'b' ? &o->burst
							   : &o->mark_above)) {
				fprintf(stderr, "port_ecn: %s: give a byte count from 1\n", optarg);
				return -EINVAL;
			}
			break;
		case 'p':
			o->pin = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	return 0;
}

/* The filter as tc_hook_attach leaves it on clsact: Mercury's handle and priority. */
static const struct tc_hook_result clsact_filter = {
    .hook = MERCURY_HOOK_CLSACT,
    .created_clsact = true,
    .tc_handle = MERCURY_CLSACT_HANDLE,
    .tc_priority = MERCURY_CLSACT_PRIORITY,
};

static int cmd_attach(const char *dev, const struct options *o)
{
	struct tc_hook_result res;
	struct port_ecn_bpf *skel;
	char err[256] = "";
	int ifindex = (int)if_nametoindex(dev), r;

	if (!ifindex) {
		fprintf(stderr, "port_ecn: no interface %s here\n", dev);
		return 1;
	}
	if (!o->rate || !o->limit || !o->mark_above) {
		fprintf(stderr, "port_ecn attach: --rate, --limit and --mark-above are required\n");
		return 2;
	}
	if (o->mark_above >= o->limit) {
		fprintf(stderr,
			"port_ecn attach: --mark-above %" PRIu64 " must be below --limit %" PRIu64
			": the port would drop before it marks\n",
			o->mark_above, o->limit);
		return 2;
	}
	skel = port_ecn_bpf__open();
	if (!skel) {
		fprintf(stderr, "port_ecn: cannot open the BPF object: %s\n", strerror(errno));
		return 1;
	}
	skel->rodata->rate_bytes_per_s = o->rate;
	skel->rodata->burst_bytes = o->burst;
	skel->rodata->limit_bytes = o->limit;
	skel->rodata->mark_above_bytes = o->mark_above;
	r = port_ecn_bpf__load(skel);
	if (r) {
		fprintf(stderr, "port_ecn: cannot load the program: %s\n", strerror(-r));
		goto out;
	}
	if (o->pin && (r = bpf_map__pin(skel->maps.counters, o->pin))) {
		fprintf(stderr, "port_ecn: cannot pin the counters at %s: %s\n", o->pin,
			strerror(-r));
		goto out;
	}
	r = tc_hook_attach(bpf_program__fd(skel->progs.mercury_port_ecn), ifindex,
			   MERCURY_HOOK_CLSACT, NULL, &res, err, sizeof(err));
	if (r) {
		fprintf(stderr, "port_ecn: %s: %s\n", dev, err);
		if (o->pin)
			bpf_map__unpin(skel->maps.counters, o->pin);
	}
out:
	port_ecn_bpf__destroy(skel);
	return r ? 1 : 0;
}

static int cmd_detach(const char *dev)
{
	char err[256] = "";
	int ifindex = (int)if_nametoindex(dev);

	if (!ifindex) {
		fprintf(stderr, "port_ecn: no interface %s here\n", dev);
		return 1;
	}
	if (tc_hook_detach(ifindex, &clsact_filter, NULL, err, sizeof(err))) {
		fprintf(stderr, "port_ecn: %s: %s\n", dev, err);
		return 1;
	}
	return 0;
}

static int cmd_stats(const struct options *o)
{
	int ncpu = libbpf_num_possible_cpus(), fd;
	uint64_t sum[PORT_ECN_NR_COUNTERS] = {0};

	if (!o->pin) {
		fprintf(stderr, "port_ecn stats: --pin PATH is required\n");
		return 2;
	}
	fd = bpf_obj_get(o->pin);
	if (fd < 0 || ncpu <= 0) {
		fprintf(stderr, "port_ecn: cannot open the counters at %s: %s\n", o->pin,
			strerror(errno));
		return 1;
	}
	uint64_t *per_cpu = calloc((size_t)ncpu, sizeof(*per_cpu));

	for (uint32_t k = 0; per_cpu && k < PORT_ECN_NR_COUNTERS; k++)
		if (bpf_map_lookup_elem(fd, &k, per_cpu) == 0)
			for (int cpu = 0; cpu < ncpu; cpu++)
				sum[k] += per_cpu[cpu];
	free(per_cpu);
	close(fd);
	if (o->json) {
		struct json_object *j = json_object_new_object();

		for (int k = 0; k < PORT_ECN_NR_COUNTERS; k++)
			json_object_object_add(j, counter_names[k],
					       json_object_new_int64((int64_t)sum[k]));
		printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
		json_object_put(j);
	} else {
		for (int k = 0; k < PORT_ECN_NR_COUNTERS; k++)
			printf("%s %" PRIu64 "\n", counter_names[k], sum[k]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	const char *verb, *dev = NULL;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	verb = argv[1];
	if (strcmp(verb, "stats")) {
		if (argc < 3 || argv[2][0] == '-') {
			fprintf(stderr, "port_ecn %s: name the device\n", verb);
			return 2;
		}
		dev = argv[2];
	}
	optind = dev ? 3 : 2;
	if (parse_options(argc, argv, &o))
		return 2;
	if (optind < argc) {
		fprintf(stderr, "port_ecn: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	libbpf_set_print(NULL);
	if (!strcmp(verb, "attach"))
		return cmd_attach(dev, &o);
	if (!strcmp(verb, "detach"))
		return cmd_detach(dev);
	if (!strcmp(verb, "stats"))
		return cmd_stats(&o);
	fprintf(stderr, "port_ecn: unknown command '%s' (attach, detach, stats)\n", verb);
	return 2;
}
