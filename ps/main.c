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
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>
#include <json-c/json.h>

#include "ps.h"
#include "cli/json_out.h"
#include "cli/serve_cmd.h"
#include "rate.h"
#include "mercury_abi.h"

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
	    "Options:\n"
	    "  --port P          server port (default 9555; local: P, P+1, ...)\n"
	    "  --conns K         connections per worker-server pair, mercury mode (16)\n"
	    "  --rcvbuf B        mercury: SO_RCVBUF of each data connection's receiver, a bound\n"
	    "                    on its bytes in flight so that N-to-1 pushes do not overflow a\n"
	    "                    switch port (65536; 0: kernel autotuning)\n"
	    "  --bands N         bands of mercuryd's interfaces (`attach --bands`, 8): sockets\n"
	    "                    follow its N - 2 layer groups, mercury mode\n"
	    "  --chunk N         aggregation chunk, parameters (65536)\n"
	    "  --part N          partition size, parameters (1000000)\n"
	    "  --credit N        partition credit, parameters in flight from push to pull\n"
	    "                    (4000000)\n"
	    "  --op-cost US      start-up of each push op (a tensor, or a partition) in the\n"
	    "                    framework's engine, one after another, in microseconds of\n"
	    "                    the real run: multiplied by --time-scale (0)\n"
	    "  --bound N         split arrays above N parameters over all servers (1000000)\n"
	    "  --split-all       split every array over all servers\n"
	    "  --placement P     arrays not split: hash (on server key * 9973 %% N, MXNet's\n"
	    "                    default) or balanced (on the server holding the fewest\n"
	    "                    parameters so far, in forward order) (hash)\n"
	    "  --shrink K        divide parameter counts by K (placement still by the originals)\n"
	    "  --time-scale S    multiply profile compute times by S\n"
	    "  --iters N         measured iterations (5), --warmup N (1)\n"
	    "  --verify          pseudo-random gradients, every pull checked bitwise\n"
	    "  --timeout S       error after S seconds without progress (60)\n"
	    "  --timeline FILE   per-layer compute/push/pull events (TSV)\n"
	    "  --rate R          ideal: per-node egress rate, e.g. 400mbit, 10gbit\n"
	    "  --slow-rank R --slow-s S   add S seconds per backward layer on worker R (tests)\n"
	    "  --die-rank R      worker R drops its connections mid-iteration 1 (tests)\n"
	    "  --sock-prio P     connection k of K gets SO_PRIORITY P+8k/K: per-socket priority "
	    "without\n"
	    "                    mercuryd (e.g. 0x4d450010, the htb leaves of Mercury's tree)\n"
	    "  --write-ahead     mercury: write the next iteration's pushes before this node's\n"
	    "                    iteration has ended (they keep the next-iteration band)\n"
	    "  --local-direct    run, local: each node's worker and its own server exchange data\n"
	    "                    through memory, not loopback TCP (the worker library's default)\n"
	    "  --external-servers  run: the worker only; each node's `mercury-ps serve` holds\n"
	    "                    its share\n"
	    "  --layers N,N,...  serve: the model as parameter counts per layer, forward order\n"
	    "                    (instead of --profile)\n"
	    "  --jobs J          serve: exit after J jobs (0: until SIGTERM, the default)\n"
	    "  --exit-with-parent  serve: end (as on SIGTERM) when the parent process ends\n"
	    "serve prints one JSON object per job (all its workers said goodbye, or it failed)\n"
	    "and goes on with the next; SIGTERM or SIGINT ends it, exit status 0.\n");
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

static int run_ideal(const struct ps_config *c, const struct ps_profile *p, double rate_Bps)
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
	struct ps_ideal_in in = {L, N, fwd, bwd, eg, rate_Bps * PS_WIRE_EFFICIENCY};
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
	return 0;
}

int main(int argc, char **argv)
{
	/* one option a line */
	/* clang-format off */
	static const struct option opts[] = {
	    {"profile", 1, 0, 'p'},
	    {"mode", 1, 0, 'm'},
	    {"nodes", 1, 0, 'n'},
	    {"rank", 1, 0, 'r'},
	    {"hosts", 1, 0, 'H'},
	    {"port", 1, 0, 'P'},
	    {"conns", 1, 0, 'k'},
	    {"rcvbuf", 1, 0, 'F'},
	    {"chunk", 1, 0, 'c'},
	    {"part", 1, 0, 'x'},
	    {"credit", 1, 0, 'C'},
	    {"bound", 1, 0, 'b'},
	    {"split-all", 0, 0, 'a'},
	    {"placement", 1, 0, 'G'},
	    {"shrink", 1, 0, 's'},
	    {"time-scale", 1, 0, 't'},
	    {"iters", 1, 0, 'i'},
	    {"warmup", 1, 0, 'w'},
	    {"verify", 0, 0, 'v'},
	    {"timeout", 1, 0, 'T'},
	    {"timeline", 1, 0, 'l'},
	    {"rate", 1, 0, 'R'},
	    {"slow-rank", 1, 0, 'S'},
	    {"slow-s", 1, 0, 'D'},
	    {"die-rank", 1, 0, 'X'},
	    {"sock-prio", 1, 0, 'Q'},
	    {"bands", 1, 0, 'B'},
	    {"write-ahead", 0, 0, 'W'},
	    {"local-direct", 0, 0, 'M'},
	    {"op-cost", 1, 0, 'O'},
	    {"external-servers", 0, 0, 'E'},
	    {"layers", 1, 0, 'L'},
	    {"jobs", 1, 0, 'J'},
	    {"exit-with-parent", 0, 0, 'Z'},
	    {"help", 0, 0, 'h'},
	    {0, 0, 0, 0},
	};
	/* clang-format on */
	struct ps_config c;
	struct ps_profile prof;
	const char *profile = NULL, *cmd;
	char hosts[1024] = "", err[256];
	uint64_t rate = 0; /* bytes per second */
	double op_cost_us = 0;
	const char *layers = NULL;
	int o, nhosts = 0, jobs = 0;
	bool exit_with_parent = false;

	ps_config_defaults(&c);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	optind = 2;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			profile = optarg;
			break;
		case 'm':
			if (ps_mode_from_name(optarg, &c.mode)) {
				fprintf(stderr,
					"mercury-ps: unknown mode '%s': use fifo, partition "
					"or mercury\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			c.nodes = atoi(optarg);
			break;
		case 'r':
			c.rank = atoi(optarg);
			break;
		case 'H':
			snprintf(hosts, sizeof(hosts), "%s", optarg);
			break;
		case 'P':
			c.port = (uint16_t)atoi(optarg);
			break;
		case 'k':
			c.conns = atoi(optarg);
			break;
		case 'F': {
			char *end;
			long v = strtol(optarg, &end, 0);
			if (*optarg == '\0' || *end || v < 0 || v > (64L << 20)) {
				fprintf(stderr,
					"mercury-ps: --rcvbuf '%s': give bytes, 0 to 67108864 "
					"(0: the kernel's autotuning)\n",
					optarg);
				return 2;
			}
			c.rcvbuf = (int)v;
			break;
		}
		case 'B':
			c.tag_levels = atoi(optarg);
			if (c.tag_levels < 2 || c.tag_levels > MERCURY_MAX_LEVELS) {
				fprintf(stderr, "mercury-ps: --bands '%s': give 2 to %d\n", optarg,
					MERCURY_MAX_LEVELS);
				return 2;
			}
			break;
		case 'c':
			c.chunk = strtoull(optarg, NULL, 0);
			break;
		case 'x':
			c.part = strtoull(optarg, NULL, 0);
			break;
		case 'C':
			c.credit = strtoull(optarg, NULL, 0);
			break;
		case 'b':
			c.bound = strtoull(optarg, NULL, 0);
			break;
		case 'a':
			c.split_all = true;
			break;
		case 'G':
			if (strcmp(optarg, "hash") && strcmp(optarg, "balanced")) {
				fprintf(
				    stderr,
				    "mercury-ps: unknown placement '%s': use hash or balanced\n",
				    optarg);
				return 2;
			}
			c.balanced = !strcmp(optarg, "balanced");
			break;
		case 's':
			c.shrink = strtoull(optarg, NULL, 0);
			break;
		case 't':
			c.time_scale = atof(optarg);
			break;
		case 'i':
			c.iters = atoi(optarg);
			break;
		case 'w':
			c.warmup = atoi(optarg);
			break;
		case 'v':
			c.verify = true;
			break;
		case 'T':
			c.timeout_s = atof(optarg);
			break;
		case 'l':
			c.timeline = optarg;
			break;
		case 'R':
			if (parse_rate(optarg, &rate)) {
				fprintf(stderr, "mercury-ps: bad rate '%s': use e.g. 400mbit\n",
					optarg);
				return 2;
			}
			break;
		case 'S':
			c.slow_rank = atoi(optarg);
			break;
		case 'D':
			c.slow_s = atof(optarg);
			break;
		case 'X':
			c.die_rank = atoi(optarg);
			break;
		case 'Q':
			c.sock_prio = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'W':
			c.write_ahead = true;
			break;
		case 'M':
			c.local_direct = true;
			break;
		case 'O':
			op_cost_us = atof(optarg);
			if (!(op_cost_us >= 0 && op_cost_us < 1e7)) {
				fprintf(stderr,
					"mercury-ps: --op-cost '%s': give microseconds >= 0\n",
					optarg);
				return 2;
			}
			break;
		case 'E':
			c.role = PS_ROLE_WORKER;
			break;
		case 'L':
			layers = optarg;
			break;
		case 'Z':
			exit_with_parent = true;
			break;
		case 'J':
			jobs = atoi(optarg);
			if (jobs < 0) {
				fprintf(stderr, "mercury-ps: --jobs '%s': give a count >= 0\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!profile == !layers || (layers && strcmp(cmd, "serve"))) {
		fprintf(stderr, "mercury-ps: give --profile (see models/)%s\n",
			strcmp(cmd, "serve") ? "" : " or --layers, not both");
		return 2;
	}
	c.op_cost_s = op_cost_us * 1e-6 * c.time_scale;
	if (c.shrink < 1 || c.part < 1 || c.chunk < 1) {
		fprintf(stderr, "mercury-ps: --shrink, --part and --chunk must be >= 1\n");
		return 2;
	}
	if (layers ? ps_profile_from_list(layers, &prof, err, sizeof(err))
		   : ps_profile_load(profile, &prof, err, sizeof(err))) {
		fprintf(stderr, "mercury-ps: %s\n", err);
		return 1;
	}
	if (!strcmp(cmd, "ideal")) {
		if (rate <= 0) {
			fprintf(stderr, "mercury-ps: ideal needs --rate (e.g. 400mbit)\n");
			return 2;
		}
		return run_ideal(&c, &prof, (double)rate);
	}
	int total = c.warmup + c.iters + 1, rc = 0;
	if (!strcmp(cmd, "local")) {
		struct local_arg *a = calloc(c.nodes > 0 ? c.nodes : 1, sizeof(*a));
		pthread_t th[PS_MAX_NODES];

		if (c.nodes < 1 || c.nodes > PS_MAX_NODES || !a) {
			fprintf(stderr, "mercury-ps: --nodes must be 1..%d\n", PS_MAX_NODES);
			return 2;
		}
		for (int i = 0; i < c.nodes; i++)
			snprintf(c.hosts[i], sizeof(c.hosts[i]), "127.0.0.1:%u", c.port + i);
		for (int i = 0; i < c.nodes; i++) {
			a[i].cfg = c;
			a[i].cfg.rank = i;
			if (c.timeline && i > 0)
				a[i].cfg.timeline = NULL;
			a[i].prof = &prof;
			a[i].res.fp_end = calloc(total, sizeof(double));
			pthread_create(&th[i], NULL, local_node, &a[i]);
		}
		for (int i = 0; i < c.nodes; i++) {
			pthread_join(th[i], NULL);
			a[i].res.cpu_s = cpu_seconds() / c.nodes;
			print_result(&a[i].cfg, &prof, a[i].rc, &a[i].res, a[i].err);
			if (a[i].rc || a[i].res.mismatches)
				rc = 1;
			free(a[i].res.fp_end);
		}
		free(a);
		ps_profile_free(&prof);
		return rc;
	}
	if (strcmp(cmd, "run") && strcmp(cmd, "serve")) {
		fprintf(stderr,
			"mercury-ps: unknown command '%s': use run, serve, local or ideal\n", cmd);
		return 2;
	}
	nhosts = split_hosts(hosts, &c);
	if (nhosts != c.nodes) {
		fprintf(stderr, "mercury-ps: --hosts lists %d addresses for --nodes %d\n", nhosts,
			c.nodes);
		return 2;
	}
	if (c.rank < 0 || c.rank >= c.nodes) {
		fprintf(stderr, "mercury-ps: --rank %d: give 0 to %d\n", c.rank, c.nodes - 1);
		return 2;
	}
	if (!strcmp(cmd, "serve")) {
		rc = ps_serve_command(&c, &prof, jobs, exit_with_parent);
		ps_profile_free(&prof);
		return rc;
	}
	struct ps_result res = {0};
	res.fp_end = calloc(total, sizeof(double));
	rc = ps_node_run(&c, &prof, &res, err, sizeof(err));
	res.cpu_s = cpu_seconds();
	print_result(&c, &prof, rc, &res, err);
	free(res.fp_end);
	ps_profile_free(&prof);
	return rc || res.mismatches ? 1 : 0;
}
