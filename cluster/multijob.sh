#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Two PS jobs sharing one emulated cluster (make bench-multijob; not in CI): both jobs have a
# process on every node (co-located server + worker, each job on its own port), every node
# runs one mercuryd that both jobs tag through, the fabric is cluster/lib.sh's default (full
# duplex, FIFO switch ports).
#
# Per pair of models (default ResNet-50 + VGG16 and BERT-base + Inception-v3, 4 nodes):
#   ideal        mercury-ps ideal of each job alone at the link rate R, and at R / 2: the
#                fair-share time (each job with half of every link; the ideal model knows
#                node egress only, so a lower bound)
#   alone        each job by itself, fifo and mercury: its best time is the smaller median
#   together     both jobs at once, REPEAT times in turn:
#     fifo          both untagged (one band)
#     partition     both ByteScheduler, each with its own (P, C) tuned alone (cluster/RESULTS.md,
#                   "ByteScheduler tuned on the full-duplex fabric"), divided by the shrink:
#                   tuning that no longer fits
#     jobprio       per-job priority (TensorLights' idea, one fixed order for the whole run):
#                   fifo, every byte of the first job in band 0, of the second in band 1
#                   (mercury-ps --job-band)
#     mercury       Mercury, equal weights (--job 1 --weight 1, --job 2 --weight 1)
#     mercury-2to1  Mercury, the first job weight 2, the second weight 1, job policy share
#                   (mercuryd attach --job-policy share: each job its own htb class, assured
#                   rate in proportion to its weight, layer priority inside it)
#     mercury-2to1-win  as mercury-2to1, and each job's window in proportion to its weight,
#                   adding up to the equal-weights pair's (--win-split "B1 B2", the two jobs'
#                   --rcvbuf: by default 10000 and 6400, which this kernel turns into windows
#                   of 8 and 4 segments of 1448 bytes, against 6 and 6 for 8192; measured with
#                   ss on a veth pair: a receive buffer is not a window in proportion). A FIFO
#                   switch port shares by window, not by the nodes' classes.
#     mercury-prio  Mercury, equal weights under the priority rule (mercuryd's default policy:
#                   both jobs' layer groups share bands by layer rank)
#     mercury-2to1-prio  the same weights under the priority rule (mercuryd's default: the
#                   lighter job one band lower; mercuryd attach --job-policy priority)
# Every setting but mercury-prio and mercury-2to1-prio runs under the job policy share; the
# nodes are re-attached (--force) when the policy changes between cells.
# Then the bulk case (the first pair): the same modes with a fixed-size bulk transfer
# (bench/link_bulk.py send --bytes, 4 TCP connections, untagged) from node 0 to node 1,
# started BULK_DELAY seconds after the jobs, and once alone. Untagged traffic is in the last
# band there (mercuryd's default: other traffic below every tagged byte; --bulk-band 0 puts
# it above instead, the emulation's usual setting).
#
# Both jobs of a pair use one shrink K (8; a byte on a shared link must stand for the same real
# bytes in both) and time scale SCALE / K. The slower job (alone) runs ITERS measured
# iterations, the faster one as many as last MARGIN times as long, so that both run during
# the whole measured window; multijob_report.py measures each job only over the overlap of
# the two runs (per-iteration forward-pass ends, fp_end, on one clock).
#
# Mercury's window bound is halved for two jobs (--rcvbuf B, default 8192 bytes: mercury-ps's
# 16 KiB at 4 nodes divided by the jobs that share the links; 0: no bound, the kernel autotunes), the
# rule of docs/fabric.md (window x
# connections x (N - 1) x jobs <= the port buffer): measured 2026-12-06, with 16 KiB each
# the share-policy cells put both jobs' windows on the switch ports at once and lost 7-8k
# packets and 140-150 timeouts a run, against 400 and 7 under the priority rule.
# The bound costs link use too (a window counts the bytes queued in the sender's own qdisc):
# cluster/RESULTS.md, "Why Mercury trails ByteScheduler on this pair", compares 4 KiB to
# 256 KiB on both fabrics.
#
# Usage: cluster/multijob.sh [--pairs "a+b c+d"] [--nodes N] [--repeat N] [--iters N]
#        [--shrink K] [--bulk-mb M] [--bulk-band last|0] [--no-bulk] [--rcvbuf B]
#        [--win-split "B1 B2"] [--quick] [--settings "S ..."] [--mercury-args "ARGS"]
#        [--job-ports] [--compute F] [--out DIR]
# --settings runs only those of the together settings (the ideal and alone runs always run),
# e.g. to compare one setting's variants (--rcvbuf) side by side. --mercury-args: more
# mercury-ps options for every Mercury job, alone and together (e.g. "--conns 2").
# --job-ports: every switch port queues by job (cluster/lib.sh CL_PORT_JOBS: one FIFO per job
# and one for the rest, served in turn), as a switch with a per-job ACL into DWRR queues.
# --compute F: every job's compute times (and the ideal's) multiplied by F (default 1). With F
# small (0.05) both jobs are bound by communication: both are backlogged nearly all the time,
# so the share each gets of the overlap is its share while both are backlogged (with the
# models' compute, a job computing leaves the links to the other and the share over the
# overlap mixes both). The scaled minimum RTO stays the default time scale's.
# A smoke of the script itself (about a minute): --pairs tiny+tiny --nodes 2 --shrink 1
# --repeat 1 --iters 3 --bulk-mb 20
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Job policy share takes at most 8 bands (HTB's prio levels under one class): every mode of
# this bench runs with 8, so the cells differ in their policy only.
export CL_BANDS=${CL_BANDS:-8}
. "$here/lib.sh"

PAIRS="resnet50+vgg16 bert_base+inception3" NODES=4 REPEAT=3 ITERS=8 SCALE=25 K=8 MARGIN=1.5
BULK=1 BULK_MB=200 BULK_BAND=last RCVBUF=8192 WIN_SPLIT="10000 6400" MERCURY_ARGS="" COMPUTE=1
OUT=${OUT:-$CL_ROOT/build/bench-multijob}
SETTINGS="fifo partition jobprio mercury mercury-prio mercury-2to1 mercury-2to1-win mercury-2to1-prio"
# ByteScheduler's best (P, C) per model alone, MXNet placement (cluster/RESULTS.md, issue 17)
# ByteScheduler's (P, C) per model: cluster/lib.sh's TUNED, tuned alone on the full-duplex
# fabric (until 2026-12-06 13:30 the egress-only fabric's)
while [ $# -gt 0 ]; do
	case $1 in
	--pairs) PAIRS=$2; shift ;;
	--nodes) NODES=$2; shift ;;
	--repeat) REPEAT=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--shrink) K=$2; shift ;;
	--bulk-mb) BULK_MB=$2; shift ;;
	--bulk-band) BULK_BAND=$2; shift ;;
	--no-bulk) BULK=0 ;;
	--rcvbuf) RCVBUF=$2; shift ;;
	--win-split) WIN_SPLIT=$2; shift ;;
	--settings) want_settings=$2; shift ;;
	--mercury-args) MERCURY_ARGS=$2; shift ;;
	--compute) COMPUTE=$2; shift ;;
	--job-ports) export CL_PORT_JOBS="9555 9655" ;; # run_jobs: job j listens on 9555 + 100 j
	--quick) PAIRS=resnet50+vgg16 REPEAT=1 ITERS=3 BULK_MB=50 ;;
	--out) OUT=$2; shift ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-multijob: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift
done
if [ -n "${want_settings:-}" ]; then
	for s in $want_settings; do
		[[ " $SETTINGS " == *" $s "* ]] ||
			{ echo "bench-multijob: unknown setting '$s' (one of: $SETTINGS)" >&2; exit 2; }
	done
	SETTINGS=$want_settings
fi
for v in REPEAT ITERS NODES BULK_MB K; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "bench-multijob: --${v,,} takes a count >= 1" >&2; exit 2; }
done
# 0 is mercury-ps's own "no bound" (the kernel autotunes the window)
[[ $RCVBUF =~ ^(0|[1-9][0-9]*)$ ]] || { echo "bench-multijob: --rcvbuf takes a byte count >= 0 (0: autotuned windows)" >&2; exit 2; }
[[ $WIN_SPLIT =~ ^[1-9][0-9]*\ [1-9][0-9]*$ ]] || { echo "bench-multijob: --win-split takes two byte counts, the heavier job's first" >&2; exit 2; }
[[ $COMPUTE =~ ^[0-9]+(\.[0-9]+)?$ ]] && [ "$(echo "$COMPUTE > 0" | bc -l)" = 1 ] ||
	{ echo "bench-multijob: --compute takes a factor > 0 (1: the models' compute)" >&2; exit 2; }
case $BULK_BAND in last | 0) ;; *) echo "bench-multijob: --bulk-band is last or 0" >&2; exit 2 ;; esac
for p in $PAIRS; do
	[[ $p == *+* ]] && [ -f "$CL_ROOT/models/${p%%+*}.prof" ] && [ -f "$CL_ROOT/models/${p##*+}.prof" ] ||
		{ echo "bench-multijob: '$p' is not MODEL+MODEL of models/" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench-multijob: needs root (namespaces)" >&2; exit 77; }
[ -x "$PS_BIN" ] && [ -x "$MERCURYD" ] || { echo "bench-multijob: run make first" >&2; exit 1; }
RATE=$((10000 / SCALE))
TS=$(echo "$SCALE / $K" | bc -l)
CTS=$(echo "$TS * $COMPUTE" | bc -l) # the jobs' compute time scale
mkdir -p "$OUT"
: >"$OUT/results.jsonl"


# args_of SETTING J MODEL ITERS: job J's mercury-ps arguments in SETTING
args_of() {
	local s=$1 j=$2 m=$3 n=$4 a
	a="--iters $n --warmup 1 --shrink $K --time-scale $CTS --job $((j + 1))"
	case $s in
	fifo) ;;
	partition) a+=" $(tuned_of "$m" "$K")" ;;
	jobprio) a+=" --job-band $j" ;;
	mercury*)
		local w=1 b=$RCVBUF split
		[[ $s == mercury-2to1* ]] && w=$((j == 0 ? 2 : 1))
		[ "$s" = mercury-2to1-win ] && { read -ra split <<<"$WIN_SPLIT"; b=${split[$j]}; }
		a+=" --weight $w --rcvbuf $b $MERCURY_ARGS"
		;;
	esac
	echo "$a"
}
mode_of() { case $1 in fifo | jobprio) echo fifo ;; partition) echo partition ;; *) echo mercury ;; esac; }

# job_policy P: every node's e0 under job policy P (share|priority), re-attached if it differs
POLICY=priority # what cluster_up attaches with (mercuryd's default)
job_policy() {
	local i
	[ "$1" = "$POLICY" ] && return 0
	for ((i = 0; i < NODES; i++)); do
		CL_JOB_POLICY=$1 shaper_attach "$i" "$RATE" || return 1
	done
	POLICY=$1
}

# cell PAIR CASE SETTING ITERS_A ITERS_B [bulk spec]: both jobs (or one: ITERS of the other 0)
cell() {
	local pair=$1 case=$2 s=$3 na=$4 nb=$5 bulk=${6:-} one j models
	read -ra models <<<"${pair/+/ }"
	# A cell under another policy than its label says would be a wrong figure: stop.
	job_policy "$(case $s in *-prio) echo priority ;; *) echo share ;; esac)" ||
		{ echo "bench-multijob: $pair $case $s: cannot set the job policy" >&2; exit 1; }
	MJ_MODEL=() MJ_MODE=() MJ_ARGS=()
	for j in 0 1; do
		local n=$na
		[ "$j" = 1 ] && n=$nb
		[ "$n" -gt 0 ] || continue
		MJ_MODEL+=("${models[$j]}")
		MJ_MODE+=("$(mode_of "$s")")
		MJ_ARGS+=("$(args_of "$s" "$j" "${models[$j]}" "$n")")
	done
	one=$(mktemp)
	MJ_BULK=$bulk run_jobs "$one" "$pair/$case/$s" ||
		echo "bench-multijob: $pair $case $s: a process failed (kept, ok false)" >&2
	jq -c --arg p "$pair" --arg c "$case" --arg s "$s" --argjson r "$REP" \
		--arg alone "$([ "$na" -gt 0 ] && [ "$nb" -gt 0 ] || echo 1)" --argjson f "$COMPUTE" \
		'. + {pair: $p, case: $c, setting: $s, rep: $r, alone: ($alone == "1"), compute: $f}' \
		"$one" >>"$OUT/results.jsonl"
	rm -f "$one"
}

# median iteration time of a job alone so far (best of its alone settings)
alone_s() {
	jq -s --arg p "$1" --arg m "$2" '[.[] | select(.pair == $p and .alone and .model == $m and .ok)
		| {s: .setting, t: .iter_s}] | group_by(.s)
		| map(map(.t) | sort | .[(length - 1) / 2 | floor]) | min' "$OUT/results.jsonl"
}

pair_cells() {
	local pair=$1 case=$2 bulk=${3:-} a b ta tb na nb s
	a=${pair%%+*} b=${pair##*+}
	if [ "$case" = plain ]; then
		for m in "$a" "$b"; do
			for r in "$RATE" "$((RATE / 2))"; do
				"$PS_BIN" ideal --profile "$CL_ROOT/models/$m.prof" --nodes "$NODES" \
					--rate "${r}mbit" --shrink "$K" --time-scale "$CTS" |
					jq -c --arg p "$pair" --arg s "ideal-$([ "$r" = "$RATE" ] && echo full || echo half)" \
						--argjson r "$r" '. + {pair: $p, case: "plain", setting: $s, rate_mbit: $r}' \
						>>"$OUT/results.jsonl"
			done
		done
		for ((REP = 0; REP < REPEAT; REP++)); do
			for s in fifo mercury; do
				cell "$pair" plain "$s" "$ITERS" 0
				cell "$pair" plain "$s" 0 "$ITERS"
			done
		done
	fi
	ta=$(alone_s "$pair" "$a") tb=$(alone_s "$pair" "$b")
	if [ "$ta" = null ] || [ "$tb" = null ]; then
		echo "bench-multijob: $pair: no alone time, skipping it together" >&2
		return 1
	fi
	# the slower job ITERS iterations, the faster as many as last MARGIN times as long
	if [ "$(echo "$ta >= $tb" | bc -l)" = 1 ]; then
		na=$ITERS nb=$(printf %.0f "$(echo "$MARGIN * $ITERS * $ta / $tb + 0.5" | bc -l)")
	else
		nb=$ITERS na=$(printf %.0f "$(echo "$MARGIN * $ITERS * $tb / $ta + 0.5" | bc -l)")
	fi
	echo "bench-multijob: $pair ($case): alone $ta / $tb s an iteration: $na and $nb iterations together" >&2
	if [ -n "$bulk" ]; then
		REP=0
		cell "$pair" bulk bulk-alone 0 0 "${bulk% *} 0"
	fi
	for ((REP = 0; REP < REPEAT; REP++)); do
		for s in $SETTINGS; do cell "$pair" "$case" "$s" "$na" "$nb" "$bulk"; done
	done
	REP=0
}

start=$(date +%s)
cluster_up "$NODES" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
serve_start || exit 1
cluster_rto_scaled "$TS" || exit 1
cluster_fabric_shrink "$K" || exit 1
for pair in $PAIRS; do
	pair_cells "$pair" plain
	echo "bench-multijob: $pair done ($(($(date +%s) - start)) s)" >&2
done
cluster_down
if [ "$BULK" = 1 ]; then
	pair=${PAIRS%% *}
	band=0
	[ "$BULK_BAND" = last ] && band=$((CL_BANDS - 1))
	POLICY=priority
	CL_DEFAULT_BAND=$band cluster_up "$NODES" "$RATE" mercuryd 2> >(grep -v quantum >&2) || exit 1
	serve_start || exit 1
	cluster_rto_scaled "$TS" || exit 1
	cluster_fabric_shrink "$K" || exit 1
	# start once the jobs are past their set-up and warm-up: two slow iterations alone
	ts=$(alone_s "$pair" "${pair%%+*}") tb=$(alone_s "$pair" "${pair##*+}")
	delay=$(printf %.1f "$(echo "1 + 2 * ($ts > $tb) * $ts + 2 * ($ts <= $tb) * $tb" | bc -l)")
	pair_cells "$pair" bulk "0 1 $((BULK_MB * 1000000)) $delay"
	cluster_down
	echo "bench-multijob: bulk case done ($(($(date +%s) - start)) s)" >&2
fi
/usr/bin/python3 "$here/multijob_report.py" "$OUT/results.jsonl" | tee "$OUT/results.md"
