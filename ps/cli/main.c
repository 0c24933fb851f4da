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

enum ps_cmd { CMD_NONE = 0, CMD_RUN, CMD_SERVE, CMD_LOCAL, CMD_IDEAL };

/* The command line: struct ps_config and what the command needs besides. */
struct cmdline {
	struct ps_config c;
	int cmd; /* enum ps_cmd */
	const char *profile, *layers;
	int nhosts;	       /* --hosts: addresses in c.hosts */
	uint64_t rate, uplink; /* bytes per second */
	double op_cost_us;
	int jobs;
	bool exit_with_parent, version;
};

static const struct cli_enum cmd_names[] = {
    {"run", CMD_RUN}, {"serve", CMD_SERVE}, {"local", CMD_LOCAL}, {"ideal", CMD_IDEAL}, {NULL, 0},
};
static const struct cli_enum mode_names[] = {
    {"fifo", PS_FIFO},
    {"partition", PS_PARTITION},
    {"mercury", PS_MERCURY},
    {NULL, 0},
};
static const struct cli_enum placement_names[] = {{"hash", 0}, {"balanced", 1}, {NULL, 0}};

#define C(member) CLI_FIELD(struct cmdline, c.member)
#define L(member) CLI_FIELD(struct cmdline, member)

/* One table: the parser, --help and tests/system/test_cli_docs.sh (common/cli_opts.h). */
/* clang-format off */
static const struct cli_opt ps_opts[] = {
    {.name = "command", .positional = true, .type = CLI_ENUM, L(cmd), .names = cmd_names},
    {.name = "profile", .type = CLI_STRING, L(profile), .arg = "F",
     .help = "model profile (models/*.prof)"},
    {.name = "mode", .type = CLI_ENUM, C(mode), .names = mode_names, .arg = "M",
     .help = "fifo, partition or mercury"},
    {.name = "nodes", .type = CLI_INT, C(nodes), .min = 1, .max = PS_MAX_NODES, .arg = "N",
     .help = "nodes in the cluster"},
    {.name = "rank", .type = CLI_INT, C(rank), .min = 0, .max = PS_MAX_NODES - 1, .arg = "R",
     .help = "this node's rank, below --nodes", .def = "0"},
    {.name = "hosts", .type = CLI_LIST, C(hosts), .items = PS_MAX_NODES,
     .count = CLI_SEEN(struct cmdline, nhosts), .arg = "IP0[:PORT],IP1,...",
     .help = "every node's address, rank order"},
    {.name = "port", .type = CLI_UINT, C(port), .min = 1, .max = 65535, .arg = "P",
     .help = "server port (local: P, P+1, ...)"},
    {.name = "conns", .type = CLI_INT, C(conns), .min = 1, .max = PS_MAX_CONNS, .arg = "K",
     .help = "connections per worker-server pair, mercury mode"},
    {.name = "dscp-queues", .type = CLI_INT, C(dscp_queues), .min = 0, .max = MERCURY_MAX_LEVELS,
     .arg = "Q",
     .help = "mercury: the switch ports serve the bands' DSCP (mercuryd attach --dscp) from Q "
	     "strict-priority queues, band b of --bands N in queue b * Q / N: every connection "
	     "carries the layers of one queue, max(--conns, queues used) connections (0: off)",
     .def = "0, off"},
    {.name = "rcvbuf", .type = CLI_INT, C(rcvbuf), .min = 0, .max = 64 << 20, .arg = "B",
     .help = "mercury: SO_RCVBUF of each data connection's receiver, a bound on its bytes "
	     "in flight so that N-to-1 pushes do not overflow a switch port (0: kernel "
	     "autotuning)",
     .def = "by --nodes: 0 (autotuning) up to 2, 16384 up to 4, then 65536 / N, at least 8192"},
    {.name = "bands", .type = CLI_INT, C(tag_levels), .min = 2, .max = MERCURY_MAX_LEVELS,
     .arg = "N",
     .help = "bands of mercuryd's interfaces (`attach --bands`): sockets follow its N - 2 "
	     "layer groups, mercury mode"},
    {.name = "chunk", .type = CLI_UINT, C(chunk), .min = 1, .max = UINT32_MAX, .arg = "N",
     .help = "aggregation chunk, parameters"},
    {.name = "part", .type = CLI_UINT, C(part), .min = 1, .max = UINT64_MAX, .arg = "N",
     .help = "partition size, parameters"},
    {.name = "credit", .type = CLI_UINT, C(credit), .min = 1, .max = UINT64_MAX, .arg = "N",
     .help = "partition credit, parameters in flight from push to pull"},
    {.name = "op-cost", .type = CLI_DOUBLE, L(op_cost_us), .dmin = 0, .dmax = 1e7, .arg = "US",
     .help = "start-up of each push op (a tensor, or a partition) in the framework's engine, "
	     "one after another, in microseconds of the real run: multiplied by --time-scale"},
    {.name = "bound", .type = CLI_UINT, C(bound), .arg = "N",
     .help = "split arrays above N parameters over all servers"},
    {.name = "split-all", .type = CLI_FLAG, C(split_all),
     .help = "split every array over all servers"},
    {.name = "placement", .type = CLI_ENUM, C(balanced), .names = placement_names,
     .arg = "hash|balanced",
     .help = "arrays not split: hash (on server key * 9973 % N, MXNet's default) or balanced "
	     "(on the server holding the fewest parameters so far, in forward order)"},
    {.name = "shrink", .type = CLI_UINT, C(shrink), .min = 1, .max = UINT32_MAX, .arg = "K",
     .help = "divide parameter counts by K (placement still by the originals)"},
    {.name = "time-scale", .type = CLI_DOUBLE, C(time_scale), .dmin = 1e-6, .dmax = 1e6, .arg = "S",
     .help = "multiply profile compute times by S"},
    {.name = "iters", .type = CLI_INT, C(iters), .min = 1, .max = 1000000, .arg = "N",
     .help = "measured iterations"},
    {.name = "warmup", .type = CLI_INT, C(warmup), .min = 0, .max = 1000000, .arg = "N",
     .help = "warm-up iterations, not measured"},
    {.name = "verify", .type = CLI_FLAG, C(verify),
     .help = "pseudo-random gradients, every pull checked bitwise"},
    {.name = "timeout", .type = CLI_DOUBLE, C(timeout_s), .dmin = 0.001, .dmax = 1e6, .arg = "S",
     .help = "error after S seconds without progress"},
    {.name = "timeline", .type = CLI_STRING, C(timeline), .arg = "FILE",
     .help = "per-layer compute/push/pull events (TSV)"},
    {.name = "rate", .type = CLI_RATE, L(rate), .arg = "R",
     .help = "ideal: per-node egress rate, e.g. 400mbit, 10gbit"},
    {.name = "uplink", .type = CLI_RATE, L(uplink), .arg = "R",
     .help = "ideal: two racks (the first half of the nodes in one) joined by an uplink of R "
	     "each way"},
    {.name = "slow-rank", .type = CLI_INT, C(slow_rank), .min = -1, .max = PS_MAX_NODES - 1,
     .arg = "R", .help = "tests: worker R is slow (see --slow-s)", .def = "none"},
    {.name = "slow-s", .type = CLI_DOUBLE, C(slow_s), .dmin = 0, .dmax = 3600, .arg = "S",
     .help = "tests: seconds added per backward layer on --slow-rank"},
    {.name = "die-rank", .type = CLI_INT, C(die_rank), .min = -1, .max = PS_MAX_NODES - 1,
     .arg = "R", .help = "tests: worker R drops its connections mid-iteration 1", .def = "none"},
    {.name = "sock-prio", .type = CLI_UINT, C(sock_prio), .arg = "P",
     .help = "connection k of K gets SO_PRIORITY P+8k/K: per-socket priority without "
	     "mercuryd (e.g. 0x4d450010, the htb leaves of Mercury's tree)"},
    {.name = "write-ahead", .type = CLI_FLAG, C(write_ahead),
     .help = "mercury: write the next iteration's pushes before this node's iteration has "
	     "ended (they keep the next-iteration band)"},
    {.name = "pulls-below", .type = CLI_SET, C(pulls_below), .set = 1,
     .help = "mercury, the default: tag each pull one layer group below its layer, so that "
	     "a layer's pushes go ahead of its pulls (the last group's stay alike)"},
    {.name = "pulls-alike", .type = CLI_SET, C(pulls_below), .set = 0,
     .help = "mercury: tag a layer's pulls as its pushes (the order before --pulls-below "
	     "became the default)"},
    {.name = "local-direct", .type = CLI_FLAG, C(local_direct),
     .help = "run, local: each node's worker and its own server exchange data through "
	     "memory, not loopback TCP (the worker library's default)"},
    {.name = "external-servers", .type = CLI_SET, C(role), .set = PS_ROLE_WORKER,
     .help = "run: the worker only; each node's `mercury-ps serve` holds its share"},
    {.name = "layers", .type = CLI_STRING, L(layers), .arg = "N,N,...",
     .help = "serve: the model as parameter counts per layer, forward order (instead of "
	     "--profile)"},
    {.name = "jobs", .type = CLI_INT, L(jobs), .min = 0, .max = INT_MAX, .arg = "J",
     .help = "serve: exit after J jobs", .def = "0, until SIGTERM"},
    {.name = "exit-with-parent", .type = CLI_FLAG, L(exit_with_parent),
     .help = "serve: end (as on SIGTERM) when the parent process ends"},
    {.name = "job", .type = CLI_UINT, C(job), .min = 1, .max = UINT32_MAX, .arg = "ID",
     .help = "the job id declared to mercuryd: two jobs of one user on a node need different "
	     "ids"},
    {.name = "weight", .type = CLI_UINT, C(weight), .min = 1, .max = MW_MAX_WEIGHT, .arg = "W",
     .help = "the job's weight against other jobs on the node: a job of weight w yields "
	     "floor(log2(w_max / w)) bands to the heaviest job"},
    {.name = "job-band", .type = CLI_INT, C(job_band), .min = 0, .max = MERCURY_MAX_LEVELS - 1,
     .arg = "B",
     .help = "fifo, partition: per-job priority, every byte of the job tagged at band B "
	     "(below bands - 2; plus its weight's shift)", .def = "none"},
    {.name = "version", .short_name = 'V', .type = CLI_FLAG, L(version),
     .help = "print the version"},
    {.type = CLI_END},
};
/* clang-format on */

static const struct cli_command ps_cli = {
    .name = "",
    .operands = "run|serve|local|ideal",
    .opts = ps_opts,
};

static void usage(FILE *f, const struct cmdline *defaults)
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
	cli_print_options(f, ps_opts, defaults);
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
	/* the connections the run used: --conns, or one per switch queue with --dscp-queues */
	json_object_object_add(o, "conns", json_object_new_int(r->conns));
	json_object_object_add(o, "dscp_queues",
			       json_object_new_int(c->mode == PS_MERCURY ? c->dscp_queues : 0));
	json_object_object_add(o, "rcvbuf", json_object_new_int(ps_rcvbuf_of(c)));
	/* the window the bound gave on the wire: the kernel derives it from the buffer */
	json_object_object_add(o, "peer_window", json_object_new_int64(r->peer_window));
	/* which order the pulls ran in: the figures before its default changed ran alike */
	add_bool(o, "pulls_below", ps_pulls_ranked_below(c));
	json_object_object_add(o, "job", json_object_new_int64(c->job));
	json_object_object_add(o, "weight", json_object_new_int64(c->weight));
	json_object_object_add(o, "job_band", json_object_new_int(c->job_band));
	add_bool(o, "tagged", r->tagged);
	add_u64(o, "tags_fastpath", r->tags_fastpath);
	add_u64(o, "tags_service", r->tags_service);
	add_u64(o, "tag_errors", r->tag_errors);
	add_u64(o, "split_sockets", r->split_sockets);
	add_u64(o, "split_queues", r->split_queues);
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

/* The options' combinations, once all are read: -1 when they fit, else the exit status. */
static int check_args(struct cmdline *m)
{
	struct ps_config *c = &m->c;

	if (m->cmd == CMD_NONE) {
		fprintf(stderr, "mercury-ps: give a command: run, serve, local or ideal (see "
				"mercury-ps --help)\n");
		return 2;
	}
	if (!m->profile == !m->layers || (m->layers && m->cmd != CMD_SERVE)) {
		fprintf(stderr, "mercury-ps: give --profile (see models/)%s\n",
			m->cmd != CMD_SERVE ? "" : " or --layers, not both");
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
	return -1;
}

/* The command line: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct cmdline *m)
{
	struct cmdline defaults;
	char err[256];
	int r;

	memset(m, 0, sizeof(*m));
	ps_config_defaults(&m->c);
	defaults = *m;
	if (argc < 2) {
		usage(stderr, &defaults);
		return 2;
	}
	r = cli_parse(&ps_cli, argc, argv, m, NULL, err, sizeof(err));
	if (r == CLI_HELP) {
		usage(stdout, &defaults);
		return 0;
	}
	if (r) {
		fprintf(stderr, "mercury-ps: %s\n", err);
		return 2;
	}
	if (m->version) {
		printf("mercury-ps %s\n", MERCURY_VERSION);
		return 0;
	}
	return check_args(m);
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
	char err[256];
	int rc;

	if (m->nhosts != c->nodes) {
		fprintf(stderr, "mercury-ps: --hosts lists %d addresses for --nodes %d\n",
			m->nhosts, c->nodes);
		return 2;
	}
	if (c->rank < 0 || c->rank >= c->nodes) {
		fprintf(stderr, "mercury-ps: --rank %d: give 0 to %d\n", c->rank, c->nodes - 1);
		return 2;
	}
	if (m->cmd == CMD_SERVE) {
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
	struct cmdline m;
	struct ps_config *c = &m.c;
	struct ps_profile prof;
	char err[256];
	int r;

	cli_prog = "mercury-ps";
	if ((r = parse_args(argc, argv, &m)) >= 0)
		return r;
	if (m.layers ? ps_profile_from_list(m.layers, &prof, err, sizeof(err))
		     : ps_profile_load(m.profile, &prof, err, sizeof(err))) {
		fprintf(stderr, "mercury-ps: %s\n", err);
		return 1;
	}
	if (m.cmd == CMD_IDEAL) {
		if (m.rate <= 0) {
			fprintf(stderr, "mercury-ps: ideal needs --rate (e.g. 400mbit)\n");
			return 2;
		}
		return run_ideal(c, &prof, (double)m.rate, (double)m.uplink);
	}
	int total = c->warmup + c->iters + 1;
	if (m.cmd == CMD_LOCAL)
		return run_local(c, &prof, total);
	return run_node(c, &prof, &m, total);
}
