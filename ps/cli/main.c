// SPDX-License-Identifier: BSD-2-Clause
/*
 * mercury-ps: Mercury's reference parameter server.
 *   mercury-ps run    one node (server + worker) of a cluster, one process per node
 *   mercury-ps serve  the server role of one node alone, job after job, until SIGTERM
 *   mercury-ps local  N nodes as threads on 127.0.0.1 (quick checks)
 *   mercury-ps ideal  the paper's bound (ps/README.md) for a profile, cluster size and rate
 * Results are printed as one JSON object per node on stdout.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>
#include <json-c/json.h>

#include "ps.h"
#include "ideal.h"
#include "profile.h"
#include "cli_opts.h"
#include "version.h"
#include "json_out.h"
#include "serve_cmd.h"
#include "rate.h"
#include "mercury_abi.h"
#include "mercury_groups.h"
#include "mercury_wire.h"

/*
 * Payload bytes per byte a node's egress carries. A 1448-byte segment takes a 1514-byte frame
 * (MTU 1500, TCP timestamps), and the node that receives it owes a 66-byte pure ACK per
 * 64 KiB it receives (one per GRO packet of at most 64 KiB; the classifier's no_payload
 * count on the cluster: one per 57-58 KB on AlexNet and VGG16). A node receives what it
 * sends (a server's pushes in are its pulls out: ps_egress_bytes), so its ACKs scale with
 * its own egress.
 */
#define PS_MSS		   1448.0
#define PS_FRAME_BYTES	   1514.0
#define PS_ACK_BYTES	   66.0
#define PS_BYTES_PER_ACK   65536.0
#define PS_WIRE_EFFICIENCY (PS_MSS / (PS_FRAME_BYTES + PS_MSS * PS_ACK_BYTES / PS_BYTES_PER_ACK))

/* One table feeds getopt_long, --help and tests/system/test_cli_docs.sh (common/cli_opts.h). */
/* clang-format off */
static const struct cli_opt ps_opts[] = {
    {"profile", 'p', "F", "model profile (models/*.prof)"},
    {"mode", 'm', "M", "fifo, partition or mercury (mercury)"},
    {"nodes", 'n', "N", "nodes in the cluster, 1 to 16 (1)"},
    {"rank", 'r', "R", "this node's rank, 0 to nodes - 1 (0)"},
    {"hosts", 'H', "IP0[:PORT],IP1,...", "every node's address, rank order"},
    {"port", 'P', "P", "server port, 1 to 65535 (9555; local: P, P+1, ...)"},
    {"conns", 'k', "K", "connections per worker-server pair, mercury mode, 1 to 16 (4)"},
    {"rcvbuf", 'F', "B", "mercury: SO_RCVBUF of each data connection's receiver, a bound\n"
			 "on its bytes in flight so that N-to-1 pushes do not overflow a\n"
			 "switch port, 0 to 67108864 (16384; 0: kernel autotuning)"},
    {"bands", 'B', "N", "bands of mercuryd's interfaces (`attach --bands`, 2 to 16, 8):\n"
			"sockets follow its N - 2 layer groups, mercury mode"},
    {"chunk", 'c', "N", "aggregation chunk, parameters (65536)"},
    {"part", 'x', "N", "partition size, parameters (1000000)"},
    {"credit", 'C', "N", "partition credit, parameters in flight from push to pull\n"
			 "(4000000)"},
    {"op-cost", 'O', "US", "start-up of each push op (a tensor, or a partition) in the\n"
			   "framework's engine, one after another, in microseconds of the\n"
			   "real run: multiplied by --time-scale (0)"},
    {"bound", 'b', "N", "split arrays above N parameters over all servers (1000000)"},
    {"split-all", 'a', NULL, "split every array over all servers"},
    {"placement", 'G', "hash|balanced", "arrays not split: hash (on server key * 9973 % N,\n"
					"MXNet's default) or balanced (on the server holding the\n"
					"fewest parameters so far, in forward order) (hash)"},
    {"shrink", 's', "K", "divide parameter counts by K (placement still by the originals)"},
    {"time-scale", 't', "S", "multiply profile compute times by S (1)"},
    {"iters", 'i', "N", "measured iterations (5)"},
    {"warmup", 'w', "N", "warm-up iterations, not measured (1)"},
    {"verify", 'v', NULL, "pseudo-random gradients, every pull checked bitwise"},
    {"timeout", 'T', "S", "error after S seconds without progress (60)"},
    {"timeline", 'l', "FILE", "per-layer compute/push/pull events (TSV)"},
    {"rate", 'R', "R", "ideal: per-node egress rate, e.g. 400mbit, 10gbit"},
    {"uplink", 'U', "R", "ideal: two racks (the first half of the nodes in one) joined by\n"
			 "an uplink of R each way"},
    {"slow-rank", 'S', "R", "tests: worker R is slow (see --slow-s)"},
    {"slow-s", 'D', "S", "tests: seconds added per backward layer on --slow-rank"},
    {"die-rank", 'X', "R", "tests: worker R drops its connections mid-iteration 1"},
    {"sock-prio", 'Q', "P", "connection k of K gets SO_PRIORITY P+8k/K: per-socket priority\n"
			    "without mercuryd (e.g. 0x4d450010, the htb leaves of Mercury's\n"
			    "tree)"},
    {"write-ahead", 'W', NULL, "mercury: write the next iteration's pushes before this node's\n"
			       "iteration has ended (they keep the next-iteration band)"},
    {"local-direct", 'M', NULL, "run, local: each node's worker and its own server exchange\n"
				"data through memory, not loopback TCP (the worker library's\n"
				"default)"},
    {"external-servers", 'E', NULL, "run: the worker only; each node's `mercury-ps serve`\n"
				    "holds its share"},
    {"layers", 'L', "N,N,...", "serve: the model as parameter counts per layer, forward\n"
			       "order (instead of --profile)"},
    {"jobs", 'J', "J", "serve: exit after J jobs (0: until SIGTERM, the default)"},
    {"exit-with-parent", 'Z', NULL, "serve: end (as on SIGTERM) when the parent process ends"},
    {"job", 'j', "ID", "the job id declared to mercuryd, 1 to 4294967295 (1): two jobs of\n"
		       "one user on a node need different ids"},
    {"weight", 'g', "W", "the job's weight against other jobs on the node, 1 to 1000 (1):\n"
			 "a job of weight w yields floor(log2(w_max / w)) bands to the\n"
			 "heaviest job"},
    {"job-band", 'y', "B", "fifo, partition: per-job priority, every byte of the job tagged\n"
			   "at band B (0 to bands - 3; plus its weight's shift)"},
    {"version", 'V', NULL, "print the version"},
    {NULL, 0, NULL, NULL},
};
/* clang-format on */
static const struct cli_command ps_cli = {.name = "", .opts = ps_opts};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: mercury-ps run   --profile F --mode fifo|partition|mercury --nodes N --rank R\n"
	    "                        --hosts IP0[:PORT],IP1,... [options]\n"
	    "       mercury-ps serve --profile F|--layers N,N,.. --mode M --nodes N --rank R\n"
	    "                        --hosts ... [--jobs J] [options]\n"
	    "       mercury-ps local --profile F --mode M --nodes N [options]\n"
	    "       mercury-ps ideal --profile F --nodes N --rate R [--shrink K --time-scale S]\n"
	    "                        [--mode partition --part P: under partition's placement]\n"
	    "       mercury-ps --version\n\n"
	    "Mercury's reference parameter server: run, serve, local and ideal print one JSON\n"
	    "object per node (serve: per job) on stdout.\n\n"
	    "Options:\n");
	cli_print_options(f, ps_opts);
	fprintf(
	    f, "  --help                  this text\n\n"
	       "serve prints one JSON object per job (all its workers said goodbye, or it failed)\n"
	       "and goes on with the next; SIGTERM or SIGINT ends it, exit status 0.\n\n"
	       "Exit status:\n"
	       "  0  success\n"
	       "  1  the run failed (its JSON says why) or a pull did not verify\n"
	       "  2  usage error: unknown command or option, a bad or out-of-range value\n\n"
	       "See mercury-ps(1).\n");
}

/* A checked number for option --name, or a usage error naming it and its range. */
static bool opt_long(const char *name, const char *arg, long min, long max, long *out)
{
	int r = cli_parse_long(arg, min, max, out);

	if (r)
		fprintf(stderr, "mercury-ps: --%s '%s': %s; give %ld to %ld\n", name, arg,
			r == -ERANGE ? "out of range" : "not a number", min, max);
	return r == 0;
}

static bool opt_u64(const char *name, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	int r = cli_parse_u64(arg, min, max, out);

	if (r)
		fprintf(stderr, "mercury-ps: --%s '%s': %s; give %llu to %llu\n", name, arg,
			r == -ERANGE ? "out of range" : "not a number", (unsigned long long)min,
			(unsigned long long)max);
	return r == 0;
}

static bool opt_double(const char *name, const char *arg, double min, double max, double *out)
{
	int r = cli_parse_double(arg, min, max, out);

	if (r)
		fprintf(stderr, "mercury-ps: --%s '%s': %s; give %g to %g\n", name, arg,
			r == -ERANGE ? "out of range" : "not a number", min, max);
	return r == 0;
}

static int split_hosts(char *list, struct ps_config *c)
{
	int n = 0;

	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		if (n == PS_MAX_NODES)
			return -E2BIG;
		snprintf(c->hosts[n++], sizeof(c->hosts[0]), "%s", tok);
	}
	return n;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

static const char *ps_placement_name(const struct ps_config *c)
{
	return c->balanced ? "balanced" : "hash";
}

static void print_result(const struct ps_config *c, const struct ps_profile *p, int rc,
			 const struct ps_result *r, const char *err)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "model", json_object_new_string(p->model));
	json_object_object_add(o, "mode", json_object_new_string(ps_mode_name(c->mode)));
	json_object_object_add(o, "rank", json_object_new_int(c->rank));
	json_object_object_add(o, "nodes", json_object_new_int(c->nodes));
	add_bool(o, "ok", rc == 0);
	if (rc) {
		json_object_object_add(o, "error", json_object_new_string(err));
		print_json(o);
		return;
	}
	/* Forward-pass ends (CLOCK_MONOTONIC, the same clock in every namespace) bounding the
	 * measured iterations, so a cluster-wide time can be taken across nodes. */
	add_double(o, "t_start", r->fp_end[c->warmup]);
	add_double(o, "t_end", r->fp_end[c->warmup + c->iters]);
	add_double(o, "iter_s", r->iter_s);
	struct json_object *ends = json_object_new_array(); /* every iteration's, warm-up first */
	for (int i = 0; i <= c->warmup + c->iters; i++)
		json_object_array_add(ends, json_object_new_double(r->fp_end[i]));
	json_object_object_add(o, "fp_end", ends);
	add_u64(o, "bytes_sent", r->bytes_sent);
	add_bool(o, "verify", c->verify);
	add_u64(o, "pulls_checked", r->pulls_checked);
	add_u64(o, "mismatches", r->mismatches);
	add_double(o, "cpu_s", r->cpu_s);
	json_object_object_add(o, "iters", json_object_new_int(c->iters));
	add_u64(o, "shrink", c->shrink);
	add_double(o, "time_scale", c->time_scale);
	add_bool(o, "split_all", c->split_all);
	json_object_object_add(o, "placement", json_object_new_string(ps_placement_name(c)));
	add_u64(o, "part", c->part);
	add_u64(o, "credit", c->credit);
	add_double(o, "op_cost_s", c->op_cost_s);
	add_u64(o, "max_inflight", r->max_inflight);
	json_object_object_add(o, "conns",
			       json_object_new_int(c->mode != PS_MERCURY   ? 1
						   : c->conns < p->nlayers ? c->conns
									   : p->nlayers));
	json_object_object_add(o, "rcvbuf",
			       json_object_new_int(c->mode == PS_MERCURY ? c->rcvbuf : 0));
	json_object_object_add(o, "job", json_object_new_int64(c->job));
	json_object_object_add(o, "weight", json_object_new_int64(c->weight));
	json_object_object_add(o, "job_band", json_object_new_int(c->job_band));
	add_bool(o, "tagged", r->tagged);
	add_u64(o, "tags_fastpath", r->tags_fastpath);
	add_u64(o, "tags_service", r->tags_service);
	add_u64(o, "tag_errors", r->tag_errors);
	add_u64(o, "split_sockets", r->split_sockets);
	print_json(o);
}

struct local_arg {
	struct ps_config cfg;
	const struct ps_profile *prof;
	struct ps_result res;
	int rc;
	char err[256];
};

static void *local_node(void *p)
{
	struct local_arg *a = p;

	a->rc = ps_node_run(&a->cfg, a->prof, &a->res, a->err, sizeof(a->err));
	return NULL;
}

static int run_ideal(const struct ps_config *c, const struct ps_profile *p, double rate_Bps,
		     double uplink_Bps)
{
	int L = p->nlayers, N = c->nodes;
	uint64_t *orig = calloc(L, sizeof(uint64_t)), *len = calloc(L, sizeof(uint64_t));
	double *fwd = calloc(L, sizeof(double)), *bwd = calloc(L, sizeof(double));
	double *eg = calloc((size_t)N * L, sizeof(double)), comm, comp;
	struct ps_placement pl;

	if (!orig || !len || !fwd || !bwd || !eg)
		return 1;
	for (int l = 0; l < L; l++) {
		orig[l] = p->layers[l].params;
		len[l] = orig[l] / c->shrink ? orig[l] / c->shrink : 1;
		fwd[l] = p->layers[l].fwd_s * c->time_scale;
		bwd[l] = p->layers[l].bwd_s * c->time_scale;
	}
	/* --mode partition: the bound under partition's own placement (each partition a tensor) */
	if (ps_place(orig, len, L, N, c->bound, c->split_all, c->balanced,
		     c->mode == PS_PARTITION ? c->part : 0, &pl))
		return 1;
	ps_egress_bytes(&pl, N, eg);
	double *up = uplink_Bps > 0 ? calloc(2 * (size_t)L, sizeof(double)) : NULL;
	if (up)
		ps_uplink_bytes(&pl, N, up);
	struct ps_ideal_in in = {
	    L, N, fwd, bwd, eg, rate_Bps * PS_WIRE_EFFICIENCY, up, uplink_Bps * PS_WIRE_EFFICIENCY};
	double t = ps_ideal_iteration(&in, &comm, &comp);
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "model", json_object_new_string(p->model));
	json_object_object_add(o, "mode", json_object_new_string("ideal"));
	json_object_object_add(o, "nodes", json_object_new_int(N));
	add_bool(o, "ok", true);
	add_double(o, "iter_s", t);
	add_double(o, "comm_only_s", comm);
	add_double(o, "compute_only_s", comp);
	add_double(o, "rate_Bps", rate_Bps);
	if (uplink_Bps > 0)
		add_double(o, "uplink_Bps", uplink_Bps);
	add_double(o, "wire_efficiency", PS_WIRE_EFFICIENCY);
	add_bool(o, "split_all", c->split_all);
	json_object_object_add(o, "placement", json_object_new_string(ps_placement_name(c)));
	print_json(o);
	ps_placement_free(&pl);
	free(orig);
	free(len);
	free(fwd);
	free(bwd);
	free(eg);
	free(up);
	return 0;
}

enum { OPT_TAKEN = -1, OPT_NOT_MINE = -2, OPT_USAGE = 2 };

/* What the command line says besides struct ps_config. */
struct cmdline {
	const char *cmd, *profile, *layers;
	char hosts[1024];
	uint64_t rate, uplink; /* bytes per second */
	double op_cost_us;
	int jobs;
	bool exit_with_parent;
};

/* The cluster and its transport: nodes, hosts, connections, placement, bands. */
static int net_opt(int o, struct ps_config *c, struct cmdline *m)
{
	long v;

	switch (o) {
	case 'n':
		if (!opt_long("nodes", optarg, 1, PS_MAX_NODES, &v))
			return OPT_USAGE;
		c->nodes = (int)v;
		return OPT_TAKEN;
	case 'r':
		if (!opt_long("rank", optarg, 0, PS_MAX_NODES - 1, &v))
			return OPT_USAGE;
		c->rank = (int)v;
		return OPT_TAKEN;
	case 'H':
		snprintf(m->hosts, sizeof(m->hosts), "%s", optarg);
		return OPT_TAKEN;
	case 'P':
		if (!opt_long("port", optarg, 1, 65535, &v))
			return OPT_USAGE;
		c->port = (uint16_t)v;
		return OPT_TAKEN;
	case 'k':
		if (!opt_long("conns", optarg, 1, PS_MAX_CONNS, &v))
			return OPT_USAGE;
		c->conns = (int)v;
		return OPT_TAKEN;
	case 'F': /* 0: the kernel's autotuning */
		if (!opt_long("rcvbuf", optarg, 0, 64L << 20, &v))
			return OPT_USAGE;
		c->rcvbuf = (int)v;
		return OPT_TAKEN;
	case 'B':
		if (!opt_long("bands", optarg, 2, MERCURY_MAX_LEVELS, &v))
			return OPT_USAGE;
		c->tag_levels = (int)v;
		return OPT_TAKEN;
	case 'c':
		if (!opt_u64("chunk", optarg, 1, UINT32_MAX, &c->chunk))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'x':
		if (!opt_u64("part", optarg, 1, UINT64_MAX, &c->part))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'C':
		if (!opt_u64("credit", optarg, 1, UINT64_MAX, &c->credit))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'b':
		if (!opt_u64("bound", optarg, 0, UINT64_MAX, &c->bound))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'a':
		c->split_all = true;
		return OPT_TAKEN;
	case 'G':
		if (strcmp(optarg, "hash") && strcmp(optarg, "balanced")) {
			fprintf(stderr,
				"mercury-ps: unknown placement '%s': use hash or balanced\n",
				optarg);
			return OPT_USAGE;
		}
		c->balanced = !strcmp(optarg, "balanced");
		return OPT_TAKEN;
	default:
		return OPT_NOT_MINE;
	}
}

/* The run: profile, mode, scale, length, rates, output. */
static int run_opt(int o, struct ps_config *c, struct cmdline *m)
{
	long v;

	switch (o) {
	case 'p':
		m->profile = optarg;
		return OPT_TAKEN;
	case 'm':
		if (ps_mode_from_name(optarg, &c->mode)) {
			fprintf(stderr,
				"mercury-ps: unknown mode '%s': use fifo, partition "
				"or mercury\n",
				optarg);
			return OPT_USAGE;
		}
		return OPT_TAKEN;
	case 's':
		if (!opt_u64("shrink", optarg, 1, UINT32_MAX, &c->shrink))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 't':
		if (!opt_double("time-scale", optarg, 1e-6, 1e6, &c->time_scale))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'i':
		if (!opt_long("iters", optarg, 1, 1000000, &v))
			return OPT_USAGE;
		c->iters = (int)v;
		return OPT_TAKEN;
	case 'w':
		if (!opt_long("warmup", optarg, 0, 1000000, &v))
			return OPT_USAGE;
		c->warmup = (int)v;
		return OPT_TAKEN;
	case 'v':
		c->verify = true;
		return OPT_TAKEN;
	case 'T':
		if (!opt_double("timeout", optarg, 0.001, 1e6, &c->timeout_s))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'l':
		c->timeline = optarg;
		return OPT_TAKEN;
	case 'U':
		if (parse_rate(optarg, &m->uplink)) {
			fprintf(stderr, "mercury-ps: bad --uplink '%s': use e.g. 800mbit\n",
				optarg);
			return OPT_USAGE;
		}
		return OPT_TAKEN;
	case 'R':
		if (parse_rate(optarg, &m->rate)) {
			fprintf(stderr, "mercury-ps: bad rate '%s': use e.g. 400mbit\n", optarg);
			return OPT_USAGE;
		}
		return OPT_TAKEN;
	default:
		return OPT_NOT_MINE;
	}
}

/* Faults, the job, the role and how the process lives. */
static int job_opt(int o, struct ps_config *c, struct cmdline *m)
{
	long v;
	uint64_t u;

	switch (o) {
	case 'S':
		if (!opt_long("slow-rank", optarg, -1, PS_MAX_NODES - 1, &v))
			return OPT_USAGE;
		c->slow_rank = (int)v;
		return OPT_TAKEN;
	case 'D':
		if (!opt_double("slow-s", optarg, 0, 3600, &c->slow_s))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'X':
		if (!opt_long("die-rank", optarg, -1, PS_MAX_NODES - 1, &v))
			return OPT_USAGE;
		c->die_rank = (int)v;
		return OPT_TAKEN;
	case 'Q':
		if (!opt_u64("sock-prio", optarg, 0, UINT32_MAX, &u))
			return OPT_USAGE;
		c->sock_prio = (uint32_t)u;
		return OPT_TAKEN;
	case 'W':
		c->write_ahead = true;
		return OPT_TAKEN;
	case 'M':
		c->local_direct = true;
		return OPT_TAKEN;
	case 'O':
		if (!opt_double("op-cost", optarg, 0, 1e7, &m->op_cost_us))
			return OPT_USAGE;
		return OPT_TAKEN;
	case 'E':
		c->role = PS_ROLE_WORKER;
		return OPT_TAKEN;
	case 'L':
		m->layers = optarg;
		return OPT_TAKEN;
	case 'Z':
		m->exit_with_parent = true;
		return OPT_TAKEN;
	case 'J':
		if (!opt_long("jobs", optarg, 0, INT_MAX, &v))
			return OPT_USAGE;
		m->jobs = (int)v;
		return OPT_TAKEN;
	case 'j':
	case 'g':
	case 'y': {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(optarg, &end, 10);
		if (o == 'j' &&
		    (!*optarg || *end || *optarg == '-' || errno || v < 1 || v > UINT32_MAX)) {
			fprintf(stderr, "mercury-ps: --job '%s': give a job id, 1 to 4294967295\n",
				optarg);
			return OPT_USAGE;
		}
		if (o == 'g' &&
		    (!*optarg || *end || *optarg == '-' || errno || v < 1 || v > MW_MAX_WEIGHT)) {
			fprintf(stderr, "mercury-ps: --weight '%s': give 1 to %d\n", optarg,
				MW_MAX_WEIGHT);
			return OPT_USAGE;
		}
		if (o == 'y' &&
		    (!*optarg || *end || *optarg == '-' || errno || v >= MERCURY_MAX_LEVELS)) {
			fprintf(stderr,
				"mercury-ps: --job-band '%s': give a band, 0 to bands - 3\n",
				optarg);
			return OPT_USAGE;
		}
		if (o == 'j')
			c->job = (uint32_t)v;
		else if (o == 'g')
			c->weight = (uint32_t)v;
		else
			c->job_band = (int)v;
		return OPT_TAKEN;
	}
	default:
		return OPT_NOT_MINE;
	}
}

/* The options' combinations, once all are read: -1 when they fit, else the exit status. */
static int check_args(struct ps_config *c, const struct cmdline *m)
{
	if (!m->profile == !m->layers || (m->layers && strcmp(m->cmd, "serve"))) {
		fprintf(stderr, "mercury-ps: give --profile (see models/)%s\n",
			strcmp(m->cmd, "serve") ? "" : " or --layers, not both");
		return 2;
	}
	if (c->job_band >= 0 && c->mode == PS_MERCURY) {
		fprintf(stderr, "mercury-ps: --job-band is per-job priority for --mode fifo or "
				"partition (mercury mode tags by layer)\n");
		return 2;
	}
	if (c->job_band >= 0 &&
	    (unsigned)c->job_band >= mercury_current_groups((unsigned)c->tag_levels)) {
		fprintf(stderr,
			"mercury-ps: --job-band %d: with --bands %d the job bands are 0 to %u\n",
			c->job_band, c->tag_levels,
			mercury_current_groups((unsigned)c->tag_levels) - 1);
		return 2;
	}
	c->op_cost_s = m->op_cost_us * 1e-6 * c->time_scale;
	if (c->shrink < 1 || c->part < 1 || c->chunk < 1) {
		fprintf(stderr, "mercury-ps: --shrink, --part and --chunk must be >= 1\n");
		return 2;
	}
	return -1;
}

/* The options after the command: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct ps_config *c, struct cmdline *m)
{
	int o, r;

	optind = 2;
	while ((o = cli_getopt(&ps_cli, argc, argv, "hV")) != -1) {
		r = net_opt(o, c, m);
		if (r == OPT_NOT_MINE)
			r = run_opt(o, c, m);
		if (r == OPT_NOT_MINE)
			r = job_opt(o, c, m);
		if (r == OPT_TAKEN)
			continue;
		if (r != OPT_NOT_MINE)
			return r;
		if (o == 'h') {
			usage(stdout);
			return 0;
		}
		if (o == 'V') {
			printf("mercury-ps %s\n", MERCURY_VERSION);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	return check_args(c, m);
}

/* mercury-ps local: every node a thread on 127.0.0.1. */
static int run_local(struct ps_config *c, struct ps_profile *prof, int total)
{
	int rc = 0;
	struct local_arg *a = calloc(c->nodes > 0 ? c->nodes : 1, sizeof(*a));
	pthread_t th[PS_MAX_NODES];

	if (c->nodes < 1 || c->nodes > PS_MAX_NODES || !a) {
		fprintf(stderr, "mercury-ps: --nodes must be 1..%d\n", PS_MAX_NODES);
		return 2;
	}
	for (int i = 0; i < c->nodes; i++)
		snprintf(c->hosts[i], sizeof(c->hosts[i]), "127.0.0.1:%u", c->port + i);
	for (int i = 0; i < c->nodes; i++) {
		a[i].cfg = *c;
		a[i].cfg.rank = i;
		if (c->timeline && i > 0)
			a[i].cfg.timeline = NULL;
		a[i].prof = prof;
		a[i].res.fp_end = calloc(total, sizeof(double));
		pthread_create(&th[i], NULL, local_node, &a[i]);
	}
	for (int i = 0; i < c->nodes; i++) {
		pthread_join(th[i], NULL);
		a[i].res.cpu_s = cpu_seconds() / c->nodes;
		print_result(&a[i].cfg, prof, a[i].rc, &a[i].res, a[i].err);
		if (a[i].rc || a[i].res.mismatches)
			rc = 1;
		free(a[i].res.fp_end);
	}
	free(a);
	ps_profile_free(prof);
	return rc;
}

/* mercury-ps run and serve: this process is node --rank of --hosts. */
static int run_node(struct ps_config *c, struct ps_profile *prof, struct cmdline *m, int total)
{
	int nhosts = split_hosts(m->hosts, c), rc;
	char err[256];

	if (nhosts != c->nodes) {
		fprintf(stderr, "mercury-ps: --hosts lists %d addresses for --nodes %d\n", nhosts,
			c->nodes);
		return 2;
	}
	if (c->rank < 0 || c->rank >= c->nodes) {
		fprintf(stderr, "mercury-ps: --rank %d: give 0 to %d\n", c->rank, c->nodes - 1);
		return 2;
	}
	if (!strcmp(m->cmd, "serve")) {
		rc = ps_serve_command(c, prof, m->jobs, m->exit_with_parent);
		ps_profile_free(prof);
		return rc;
	}
	struct ps_result res = {0};
	res.fp_end = calloc(total, sizeof(double));
	rc = ps_node_run(c, prof, &res, err, sizeof(err));
	res.cpu_s = cpu_seconds();
	print_result(c, prof, rc, &res, err);
	free(res.fp_end);
	ps_profile_free(prof);
	return rc || res.mismatches ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct ps_config c;
	struct ps_profile prof;
	struct cmdline m = {0};
	char err[256];
	int r;

	cli_prog = "mercury-ps";
	ps_config_defaults(&c);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("mercury-ps %s\n", MERCURY_VERSION);
		return 0;
	}
	m.cmd = argv[1];
	if (strcmp(m.cmd, "run") && strcmp(m.cmd, "serve") && strcmp(m.cmd, "local") &&
	    strcmp(m.cmd, "ideal")) {
		fprintf(stderr,
			"mercury-ps: unknown command '%s': use run, serve, local or ideal (see "
			"mercury-ps --help)\n",
			m.cmd);
		return 2;
	}
	if ((r = parse_args(argc, argv, &c, &m)) >= 0)
		return r;
	if (m.layers ? ps_profile_from_list(m.layers, &prof, err, sizeof(err))
		     : ps_profile_load(m.profile, &prof, err, sizeof(err))) {
		fprintf(stderr, "mercury-ps: %s\n", err);
		return 1;
	}
	if (!strcmp(m.cmd, "ideal")) {
		if (m.rate <= 0) {
			fprintf(stderr, "mercury-ps: ideal needs --rate (e.g. 400mbit)\n");
			return 2;
		}
		return run_ideal(&c, &prof, (double)m.rate, (double)m.uplink);
	}
	int total = c.warmup + c.iters + 1;
	if (!strcmp(m.cmd, "local"))
		return run_local(&c, &prof, total);
	return run_node(&c, &prof, &m, total);
}
