# SPDX-License-Identifier: BSD-2-Clause
# Emulated PS cluster: N network namespaces, each node's veth into a switch (bridges in a
# namespace of their own), each link full duplex at RATE_MBIT. Source it; it installs a trap
# that removes every namespace, pin and process it created, even on failure.
#
# Fabric (CL_FABRIC):
#   duplex    (default) both directions of every link are bottlenecks: the node's egress is
#             shaped by its own qdisc (below), and the switch port towards each node is a FIFO
#             of CL_PORT_BUF bytes drained at the node's rate (tbf), as a top-of-rack port in
#             front of a downlink is. N-to-1 traffic (every worker pushing to one server)
#             queues and drops there, as it does in a real cluster.
#   egress    the earlier emulation, kept for comparison: only node egress is shaped, the
#             switch ports are unshaped (infinitely fast downlinks, nothing ever queues).
#   tworack   duplex, with the nodes split over two switches joined by one uplink of
#             (nodes per rack x rate / CL_OVERSUB) in each direction, a FIFO of CL_PORT_BUF.
# Switch ports (CL_PORT_QUEUES): 1 = one FIFO (default); 4 or 8 = strict-priority queues
# chosen by the packet's DSCP (u32 on the DS field into an htb tree, as a switch with a
# DSCP-to-queue map and strict-priority scheduling does); the nodes' classifiers then write
# each packet's level as DSCP (mercuryd attach --dscp, cl_dscp_list).
#
# Per-job port queues (CL_PORT_JOBS="P1 P2 ...", FIFO ports only; off by default): each port
# serves one queue per job, the job's packets chosen by its TCP port (source or destination
# P_j: the PS's listening port), and one queue for everything else, in turn by weight
# (DWRR: htb classes of equal assured rate, one prio), as a switch with an ACL that puts a
# job's L4 port into a traffic class scheduled by DWRR does: jobs isolated from each other at
# every port, no order inside a job. Each queue is a FIFO of the port buffer divided by the
# jobs, so the jobs' queues hold what the FIFO port does (the rest's queue, empty without
# other traffic, is extra buffer beside it); CL_PORT_JOB_BUF=whole gives each queue the whole
# port buffer instead (a shared buffer lending a lone busy queue all of it; with every queue
# busy, more than the port holds: an upper bound).
# Pure ACKs first (CL_PORT_ACK_FIRST=1, FIFO or per-job ports): a queue served before the data
# for packets under 128 bytes (a switch's ACL on length, or a DSCP for control packets), so
# that a window-bound sender's ACKs do not wait behind the downlink's data; without
# CL_PORT_JOBS the data keep one FIFO of the port buffer below it.
#
# ECN-marking ports (CL_PORT_ECN=1, FIFO ports only): every switch port also marks CE on an
# ECN-capable packet that arrives while its queue holds more than CL_ECN_MARK bytes (default
# a quarter of the port buffer), as a ToR switch with WRED/ECN does (bench/port_ecn.c: this
# kernel has no marking qdisc); the nodes negotiate ECN (net.ipv4.tcp_ecn=1), so TCP halves
# its window on a mark instead of losing packets at the port.
#
# Port buffer: CL_PORT_BUF_REAL (2 MiB) is what one 10/25 GbE port of a shared-buffer ToR
# switch can hold under congestion (e.g. 32 MB shared by 32-48 ports, with dynamic
# thresholds letting a congested port take a few MB: docs/fabric.md). The emulation divides
# parameter counts by the model's shrink K and multiplies time by SCALE / K, so a real buffer
# of B bytes is B / K emulated bytes: the same share of a tensor, drained in the same scaled
# time. cluster_fabric_shrink K sets it per model; CL_PORT_BUF overrides it in bytes.
#
# Packet size on the wire (CL_NODE_GSO_MAX): a FIFO port's tbf passes a GSO packet whole
# only up to its 64 KiB burst and cuts a bigger one into MTU-sized packets, which a veth
# hands to the receiver one by one (it cannot coalesce them again at these rates, GRO on or
# off). Flows with big windows (fifo, ByteScheduler, DDP's gloo) then cost the receiving node
# ~5x the CPU a byte of Mercury's window-bounded ones, whose packets stay under 64 KiB: on
# this 2-core machine a resnet18 trainer in fifo mode computed at 1.49 s a step against 0.87
# (BENCHMARKS.md, "The FIFO port cut big packets"). A real NIC sends MTU frames and its
# receiver's GRO rebuilds them; here every node's e0 caps GSO packets at CL_NODE_GSO_MAX
# bytes (default 60000: with its headers a packet stays under the burst) so that every
# mode's packets pass whole. 0: the veth's 64 KiB, as every table measured before
# 2026-12-07 08:00.
#
# Shapers (identical htb tree in every mode, so that only scheduling differs):
#   mercuryd  `mercuryd attach e0 --qdisc htb --rate R` on every node; fifo/partition runs
#             leave every byte untagged (one band), mercury runs tag through libmercury
#             with a `mercuryd serve` per node.
#   tc        the same tree built with tc (root 4d45: htb, parent 4d45:1 rate=ceil=R, 8 leaves
#             4d45:10..17 rate 1mbit ceil R prio 0..7, default leaf 4d45:10); mercury runs use
#             --sock-prio (connection k -> leaf k): per-socket priority, no classifier.
set -uo pipefail

CL_ROOT=${MERCURY_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
PS_BIN=${PS_BIN:-$CL_ROOT/build/mercury-ps}
MERCURYD=${MERCURYD:-$CL_ROOT/build/mercuryd}
PORT_ECN=${PORT_ECN:-$CL_ROOT/build/bench/port_ecn}
CL_PFX=${CL_PFX:-mc$$}
CL_PIN=/sys/fs/bpf/$CL_PFX
CL_RUN=/run/$CL_PFX
# Unprivileged-netns choices are limited to net.ipv4.tcp_allowed_congestion_control (here
# reno, bbr); reno is the loss-based one, the closest to the cubic of the paper era.
CL_CC=${CL_CC:-reno}
# Bands of the mercuryd htb tree (2..15; above 8 one leaf nests a second htb): 15 gives the
# policy 13 layer groups of the current iteration (ResNet-50 1.678 -> 1.655 s, BERT-base
# 1.793 -> 1.772 s against 8 bands; VGG16 2.19-2.22 -> 2.20-2.28 s, Inception-v3 at
# comm = compute 1.58 -> 1.63 s: BENCHMARKS.md, cluster/RESULTS.md).
CL_BANDS=${CL_BANDS:-15}
# Share of the VM's CPU time the hypervisor may take during a run before its timing is suspect
# (bench.sh runs such a cell again; report.py and demo.sh name it).
CL_STEAL_MAX=${STEAL_MAX:-0.05}
CL_FABRIC=${CL_FABRIC:-duplex}
# Band of untagged traffic (mercuryd attach --default-band; shaper mercuryd): 0, above every
# tag, so that fifo and partition runs (untagged) and pure ACKs go first. cluster/multijob.sh's
# bulk case sets the last band instead (mercuryd's own default): other traffic below training.
CL_DEFAULT_BAND=${CL_DEFAULT_BAND:-0}
CL_PORT_BUF_REAL=${CL_PORT_BUF_REAL:-2097152}
CL_PORT_QUEUES=${CL_PORT_QUEUES:-1}
CL_PORT_ECN=${CL_PORT_ECN:-0}
CL_PORT_JOBS=${CL_PORT_JOBS:-}
CL_PORT_JOB_BUF=${CL_PORT_JOB_BUF:-split}
CL_PORT_ACK_FIRST=${CL_PORT_ACK_FIRST:-0}
CL_NODE_GSO_MAX=${CL_NODE_GSO_MAX:-60000}
# bytes a FIFO port's tbf sends at once after an idle spell (64 KiB; settable only to show
# the packet cutting above: keep CL_NODE_GSO_MAX under it)
CL_PORT_BURST=${CL_PORT_BURST:-65536}
CL_ECN_MARK_SET=${CL_ECN_MARK:-} # an explicit threshold in bytes, whatever the port buffer
CL_OVERSUB=${CL_OVERSUB:-2}
CL_PORT_BUF_SET=${CL_PORT_BUF:-} # an explicit buffer in emulated bytes, whatever the shrink
CL_PORT_BUF=${CL_PORT_BUF:-$((CL_PORT_BUF_REAL / 2))}
CL_NODES=0
CL_SHAPER=tc
CL_PIDS=()
# The tag fast path (mercuryd shaper): serve_start has node i's mercuryd attach it to a
# cgroup v2 group of the node's own, and every PS or trainer process of node i runs in it,
# so their tags are one setsockopt each instead of a round trip to `mercuryd serve` (the
# path libmercury takes wherever it is attached). CL_FASTPATH=0: tags through the service.
CL_FASTPATH=${CL_FASTPATH:-1}
CL_CG="" # the cgroup v2 mount while the fast path is attached

cl_cg() { echo "$CL_CG/${CL_PFX}n$1"; }
# cl_exec_cg I: the command prefix that runs a command in node I's cgroup (none without the
# fast path); an exec chain, so that $! of `nsenter ... $(cl_exec_cg I) cmd &` is cmd.
cl_exec_cg() {
	[ -n "$CL_CG" ] && printf '%s\n' sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$(cl_cg "$1")"
}

# Per-model shrink K (parameters / K, compute x S / K): keeps one emulated iteration near 2 s.
shrink_of() {
	case $1 in vgg16 | bert_base) echo 8 ;; alexnet) echo 4 ;; tiny) echo 1 ;; *) echo 2 ;; esac
}

# ByteScheduler's best (P, C) per model under MXNet placement, tuned alone on the full-duplex
# fabric (`cluster/tune.sh --models "..." --cases mxnet --iters 6` at 372bb2c; cluster/RESULTS.md
# "ByteScheduler tuned on the full-duplex fabric"), MODEL:P:C in real bytes; TUNED overrides.
TUNED=${TUNED:-"resnet50:125000:2000000 vgg16:125000:1000000 alexnet:125000:1000000 inception3:125000:1000000 bert_base:125000:1000000"}
# Tuned again at 8 nodes (`cluster/tune.sh --nodes 8 --scale 50`, three grids at 16c4364, a
# fourth at 8be4c14, a fifth at 5e542b8; cluster/RESULTS.md "ByteScheduler tuned at 8
# nodes"; the per-op start-up cost at 0, so partitions cost only their headers): a credit that
# fits 4 nodes starves 8, where a round trip holds 7 servers' slices, and smaller partitions
# spread each tensor over more servers. Used on clusters of 8 nodes or more, one switch or two
# racks; a model not in it keeps its TUNED cell. TUNED_8N overrides.
TUNED_8N=${TUNED_8N:-"resnet50:15625:2000000 vgg16:15625:2000000"}
# Tuned again on two racks behind the 2:1 uplink (`CL_FABRIC=tworack cluster/tune.sh --models
# vgg16 --cases mxnet --nodes 8 --scale 50`, three grids at 70a9105; cluster/RESULTS.md
# "ByteScheduler re-tuned on two racks"): credit, not small partitions; the best cell at the
# grid's edge of credit. Over TUNED_8N on CL_FABRIC=tworack; ResNet-50 not re-tuned there.
TUNED_TWORACK=${TUNED_TWORACK:-"vgg16:125000:64000000"}
# tuned_of MODEL K -> "--part P --credit C" shrunk K times for this cluster's size
# (ByteScheduler's defaults, 1M and 4M, for a model in neither list)
tuned_of() {
	local e p=1000000 c=4000000 cells=$TUNED
	[ "${CL_NODES:-4}" -ge 8 ] && cells+=" $TUNED_8N"
	[ "${CL_FABRIC:-duplex}" = tworack ] && cells+=" $TUNED_TWORACK"
	for e in $cells; do [ "${e%%:*}" = "$1" ] && IFS=: read -r _ p c <<<"$e"; done
	echo --part $((p / $2)) --credit $((c / $2))
}

# model_params MODEL SCALE ITERS: the model's shrink and time scale (MODEL_K, MODEL_TS =
# SCALE / K), the nodes' minimum RTO scaled to it, and mercury-ps's run arguments
# (MODEL_ARGS: ITERS measured iterations after one warm-up). The port buffer is the
# caller's (cluster_fabric_shrink).
model_params() {
	MODEL_K=$(shrink_of "$1")
	MODEL_TS=$(echo "$2 / $MODEL_K" | bc -l)
	cluster_rto_scaled "$MODEL_TS" || return 1
	MODEL_ARGS=(--iters "$3" --warmup 1 --shrink "$MODEL_K" --time-scale "$MODEL_TS")
}

# model_ideal MODEL: `mercury-ps ideal`'s line for this cluster and model_params' scaling;
# on two racks the bound knows the uplink.
model_ideal() {
	local up=()
	[ "$CL_FABRIC" = tworack ] && up=(--uplink "${CL_UPLINK_MBIT}mbit")
	"$PS_BIN" ideal --profile "$CL_ROOT/models/$1.prof" --nodes "$CL_NODES" \
		--rate "${CL_RATE_MBIT}mbit" --shrink "$MODEL_K" --time-scale "$MODEL_TS" "${up[@]}"
}

# model_setup MODEL SCALE ITERS OUT_JSONL: model_params, and the ideal bound's line appended
# to OUT_JSONL ({label: "ideal", model, iter_s}).
model_setup() {
	model_params "$1" "$2" "$3" || return 1
	model_ideal "$1" | jq -c --arg m "$1" '{label: "ideal", model: $m, iter_s}' >>"$4"
}

cl_ns() { echo "${CL_PFX}n$1"; }
cl_in() { local i=$1; shift; nsenter --net=/var/run/netns/"$(cl_ns "$i")" "$@"; }
cl_ip() { echo "10.99.0.$(($1 + 1))"; }

cluster_down() {
	local p i
	for p in "${CL_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${CL_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	CL_PIDS=()
	for ((i = 0; i < CL_NODES; i++)); do
		[ "$CL_SHAPER" = mercuryd ] &&
			cl_in "$i" "$MERCURYD" --pin-root "$CL_PIN/n$i" detach e0 >/dev/null 2>&1
		ip netns del "$(cl_ns "$i")" 2>/dev/null
		[ -n "$CL_CG" ] && rmdir "$(cl_cg "$i")" 2>/dev/null
	done
	CL_CG=""
	ip netns del "${CL_PFX}sw" 2>/dev/null
	rm -rf "$CL_PIN" "$CL_RUN" 2>/dev/null
	CL_NODES=0
	true
}
# A signal ends the script (its EXIT trap tears down); a trap on TERM alone would run
# cluster_down and carry on with the next run on a cluster that is gone.
trap cluster_down EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# cluster_up N RATE_MBIT SHAPER
cluster_up() {
	local n=$1 rate=$2 i
	CL_SHAPER=$3
	CL_RATE_MBIT=$rate
	case $CL_FABRIC in duplex | egress | tworack) ;; *)
		echo "cluster: CL_FABRIC is duplex, egress or tworack, not '$CL_FABRIC'" >&2
		return 1 ;;
	esac
	case $CL_PORT_QUEUES in 1 | 2 | 4 | 8) ;; *)
		echo "cluster: CL_PORT_QUEUES is 1 (FIFO), 2, 4 or 8, not '$CL_PORT_QUEUES'" >&2
		return 1 ;;
	esac
	if [ "$CL_PORT_ECN" = 1 ] && { [ "$CL_PORT_QUEUES" -gt 1 ] || [ "$CL_FABRIC" = egress ]; }; then
		echo "cluster: CL_PORT_ECN=1 marks FIFO switch ports: not with CL_PORT_QUEUES=$CL_PORT_QUEUES or CL_FABRIC=$CL_FABRIC" >&2
		return 1
	fi
	if port_by_class; then
		local p
		case $CL_PORT_JOB_BUF in split | whole) ;; *)
			echo "cluster: CL_PORT_JOB_BUF is split or whole, not '$CL_PORT_JOB_BUF'" >&2
			return 1 ;;
		esac
		if [ "$CL_PORT_QUEUES" -gt 1 ] || [ "$CL_PORT_ECN" = 1 ] || [ "$CL_FABRIC" = egress ]; then
			echo "cluster: CL_PORT_JOBS and CL_PORT_ACK_FIRST queue FIFO switch ports: not with CL_PORT_QUEUES=$CL_PORT_QUEUES, CL_PORT_ECN=$CL_PORT_ECN or CL_FABRIC=$CL_FABRIC" >&2
			return 1
		fi
		for p in $CL_PORT_JOBS; do
			[[ $p =~ ^[0-9]+$ ]] && [ "$p" -ge 1 ] && [ "$p" -le 65535 ] || {
				echo "cluster: CL_PORT_JOBS is a list of TCP ports (one per job), not '$CL_PORT_JOBS'" >&2
				return 1
			}
		done
	fi
	ip netns add "${CL_PFX}sw" || return 1
	cl_sw ip link add br0 type bridge || return 1
	cl_sw ip link set br0 up
	if [ "$CL_FABRIC" = tworack ]; then
		cl_sw ip link add br1 type bridge || return 1
		cl_sw ip link set br1 up
		cl_sw ip link add u0 type veth peer name u1 || return 1
		cl_sw ip link set u0 master br0 up
		cl_sw ip link set u1 master br1 up
	fi
	for ((i = 0; i < n; i++)); do
		ip netns add "$(cl_ns "$i")" || return 1
		CL_NODES=$((i + 1))
		ip link add e0 netns "$(cl_ns "$i")" type veth peer name "s$i" \
			netns "${CL_PFX}sw" || return 1
		cl_sw ip link set "s$i" master "br$(cl_rack "$i" "$n")" up
		port_shape "s$i" "$rate" || return 1
		cl_in "$i" ip addr add "$(cl_ip "$i")/24" dev e0
		cl_in "$i" ip link set e0 up
		cl_in "$i" ip link set lo up
		if [ "$CL_NODE_GSO_MAX" != 0 ]; then
			cl_in "$i" ip link set dev e0 gso_max_size "$CL_NODE_GSO_MAX" || {
				echo "cluster: cannot cap node $i's GSO packets at $CL_NODE_GSO_MAX bytes (CL_NODE_GSO_MAX)" >&2
				return 1
			}
		fi
		# Results must not depend on the host's defaults: set and report them.
		cl_in "$i" sysctl -qw net.ipv4.tcp_congestion_control="$CL_CC" || {
			echo "cluster: cannot set congestion control $CL_CC" >&2
			return 1
		}
		# A connection whose tensors were preempted for a while must not restart from a
		# small window (the usual setting for training clusters; the same in every mode).
		cl_in "$i" sysctl -qw net.ipv4.tcp_slow_start_after_idle=0
		cl_node_ecn "$i" || return 1
		shaper_attach "$i" "$rate" || return 1
	done
	if [ "$CL_FABRIC" = tworack ]; then
		CL_UPLINK_MBIT=$(((n + 1) / 2 * rate / CL_OVERSUB))
		port_shape u0 "$CL_UPLINK_MBIT" && port_shape u1 "$CL_UPLINK_MBIT" || return 1
	fi
	local cc
	cc=$(cl_in 0 sysctl -n net.ipv4.tcp_congestion_control)
	echo "cluster: $n nodes ($CL_PFX), links ${rate} Mbit/s, $(fabric_desc), shaper $CL_SHAPER, congestion control $cc, slow start after idle off"
}

# cl_node_ecn I: node I asks for ECN on its connections where the ports mark (CL_PORT_ECN=1),
# else only accepts it (the kernel's default)
cl_node_ecn() { cl_in "$1" sysctl -qw net.ipv4.tcp_ecn="$([ "$CL_PORT_ECN" = 1 ] && echo 1 || echo 2)"; }
cl_sw() { nsenter --net=/var/run/netns/"${CL_PFX}sw" "$@"; }
# cl_rack I N: the switch (0 or 1) node I of N hangs off.
cl_rack() { [ "$CL_FABRIC" = tworack ] && [ "$1" -ge $((($2 + 1) / 2)) ] && echo 1 || echo 0; }

fabric_desc() {
	local ports="FIFO ports of $CL_PORT_BUF bytes" gso=""
	[ "$CL_NODE_GSO_MAX" != 0 ] && gso=", GSO packets of at most $CL_NODE_GSO_MAX bytes"
	[ "$CL_PORT_ECN" = 1 ] && ports+=", ECN marked above $(cl_ecn_mark) bytes"
	[ "$CL_PORT_QUEUES" -gt 1 ] &&
		ports="$CL_PORT_QUEUES strict-priority DSCP queues of $CL_PORT_BUF bytes per port"
	if [ -n "$CL_PORT_JOBS" ]; then
		ports="per-job DWRR port queues (TCP ports ${CL_PORT_JOBS// /, }, and the rest: $(($(port_jobs) + 1)) queues of $(port_job_buf) bytes)"
	fi
	[ "$CL_PORT_ACK_FIRST" = 1 ] && ports+=", packets under 128 bytes first"
	case $CL_FABRIC in
	egress) echo "egress-only fabric (unshaped switch ports)" ;;
	duplex) echo "full duplex, $ports$gso" ;;
	tworack) echo "two racks, ${CL_UPLINK_MBIT:-?} Mbit/s uplink (${CL_OVERSUB}:1), full duplex, $ports$gso" ;;
	esac
}

# The DSCP the nodes' classifiers write for band B of CL_BANDS (CL_PORT_QUEUES > 1):
# 32 + B, an unused block of values in the emulation (docs/fabric.md for real networks).
cl_dscp_of() { echo $((32 + $1)); }
cl_dscp_list() {
	local b l=""
	for ((b = 0; b < CL_BANDS; b++)); do l+="${l:+,}$(cl_dscp_of "$b")"; done
	echo "$l"
}
# The switch queue (0 = served first) of band B: bands spread evenly over the queues (the
# same rule as mercury-ps --dscp-queues, ps_band_queues_even).
cl_queue_of() { echo $(($1 * CL_PORT_QUEUES / CL_BANDS)); }
# The ECN marking threshold of a port (CL_PORT_ECN=1), in bytes.
cl_ecn_mark() { echo "${CL_ECN_MARK_SET:-$((CL_PORT_BUF / 4))}"; }

# port_shape DEV RATE_MBIT: the switch side of a link, DEV's egress in the switch namespace,
# is a FIFO (tbf) or CL_PORT_QUEUES strict-priority queues (htb leaves prio 0..Q-1, each a
# bfifo of the port buffer, chosen by u32 on the DS field; unknown DSCP, e.g. untagged
# traffic, goes to the last queue, as on a switch configured as docs/switch-dscp.md says:
# best effort below Mercury's strict queues; CL_PORT_UNMARKED=top: queue 0. The nodes' pure
# ACKs carry band 0's DSCP: mercuryd attach --control first).
port_shape() {
	local dev=$1 rate=$2 q b cls unmarked=10
	[ "$CL_FABRIC" = egress ] && return 0
	cl_sw tc qdisc del dev "$dev" root 2>/dev/null
	cl_sw "$PORT_ECN" detach "$dev" 2>/dev/null
	if port_by_class && [ "$CL_PORT_QUEUES" -le 1 ]; then
		port_shape_jobs "$dev" "$rate"
		return
	fi
	if [ "$CL_PORT_QUEUES" -le 1 ]; then
		# CL_PORT_SEGMENT=1: a peak rate just above the rate with a 1514-byte bucket makes
		# tbf cut every GSO packet into MTU-sized ones, so a full port drops packets one
		# by one as a switch does, not 64 KB at a time
		local seg=()
		[ "${CL_PORT_SEGMENT:-0}" = 1 ] && seg=(peakrate "$((rate * 105 / 100))mbit" mtu 1514)
		cl_sw tc qdisc add dev "$dev" root handle 5: tbf rate "${rate}mbit" burst "$CL_PORT_BURST" \
			limit "$CL_PORT_BUF" "${seg[@]}" || return 1
		[ "$CL_PORT_ECN" = 1 ] || return 0
		# the marking program models this tbf: the same rate, burst and limit
		cl_sw "$PORT_ECN" attach "$dev" --rate "${rate}mbit" --burst "$CL_PORT_BURST" \
			--limit "$CL_PORT_BUF" --mark-above "$(cl_ecn_mark)" || return 1
		return 0
	fi
	[ "${CL_PORT_UNMARKED:-last}" = last ] && unmarked=$((10 + CL_PORT_QUEUES - 1))
	cl_sw tc qdisc add dev "$dev" root handle 5: htb default "$unmarked" || return 1
	cl_sw tc class add dev "$dev" parent 5: classid 5:1 htb rate "${rate}mbit" ceil "${rate}mbit" quantum 60000 \
		burst 64k cburst 64k || return 1
	for ((q = 0; q < CL_PORT_QUEUES; q++)); do
		cls=5:$((10 + q))
		cl_sw tc class add dev "$dev" parent 5:1 classid "$cls" htb rate 1mbit \
			ceil "${rate}mbit" burst 64k cburst 64k prio "$q" || return 1
		cl_sw tc qdisc add dev "$dev" parent "$cls" bfifo limit "$CL_PORT_BUF" || return 1
	done
	for ((b = 0; b < CL_BANDS; b++)); do
		cls=5:$((10 + $(cl_queue_of "$b")))
		cl_sw tc filter add dev "$dev" parent 5: protocol ip prio 1 u32 \
			match ip dsfield $(($(cl_dscp_of "$b") << 2)) 0xfc flowid "$cls" || return 1
		cl_sw tc filter add dev "$dev" parent 5: protocol ipv6 prio 2 u32 \
			match ip6 priority $(($(cl_dscp_of "$b") << 2)) 0xfc flowid "$cls" || return 1
	done
}

# Whether the FIFO ports are queued by class (per job, or ACKs first): port_shape_jobs.
port_by_class() { [ -n "$CL_PORT_JOBS" ] || [ "$CL_PORT_ACK_FIRST" = 1 ]; }
# The jobs of CL_PORT_JOBS, and the bytes each of their port queues holds.
port_jobs() { wc -w <<<"$CL_PORT_JOBS"; }
port_job_buf() {
	local jobs
	jobs=$(port_jobs)
	[ "$CL_PORT_JOB_BUF" = whole ] || [ "$jobs" = 0 ] && jobs=1
	echo $((CL_PORT_BUF / jobs))
}
# port_shape_jobs DEV RATE_MBIT: one FIFO per job of CL_PORT_JOBS (u32 on its TCP port, either
# direction) and one for the rest (the htb default), served in turn: equal assured rates and
# quanta, each may borrow the whole rate; with CL_PORT_ACK_FIRST a queue above them.
port_shape_jobs() {
	local dev=$1 rate=$2 p q=0 nq cls data=$(($2 * 1000))
	nq=$(($(port_jobs) + 1))
	# The ACK queue is assured a tenth of the rate: a data leaf assured the whole rate keeps
	# the parent's tokens spent, and a leaf that must borrow would be held to its own rate
	# (measured: ACKs held to 1 Mbit/s made Mercury alone 2.76-2.82 s, against 2.23-2.24).
	[ "$CL_PORT_ACK_FIRST" = 1 ] && data=$((data * 9 / 10))
	cl_sw tc qdisc add dev "$dev" root handle 5: htb default $((10 + nq - 1)) || return 1
	cl_sw tc class add dev "$dev" parent 5: classid 5:1 htb rate "${rate}mbit" ceil "${rate}mbit" \
		quantum 60000 burst 64k cburst 64k || return 1
	for ((q = 0; q < nq; q++)); do
		cls=5:$((10 + q))
		cl_sw tc class add dev "$dev" parent 5:1 classid "$cls" htb rate "$((data / nq))kbit" \
			ceil "${rate}mbit" quantum 60000 burst 64k cburst 64k prio 1 || return 1
		cl_sw tc qdisc add dev "$dev" parent "$cls" bfifo limit "$(port_job_buf)" || return 1
	done
	if [ "$CL_PORT_ACK_FIRST" = 1 ]; then
		cl_sw tc class add dev "$dev" parent 5:1 classid 5:9 htb rate "$((rate * 100))kbit" ceil "${rate}mbit" \
			quantum 60000 burst 64k cburst 64k prio 0 || return 1
		cl_sw tc qdisc add dev "$dev" parent 5:9 bfifo limit "$CL_PORT_BUF" || return 1
		# IPv4 total length below 128: the top 9 bits of the 16-bit field at offset 2 are 0
		cl_sw tc filter add dev "$dev" parent 5: protocol ip prio 1 u32 \
			match ip protocol 6 0xff match u16 0 0xff80 at 2 flowid 5:9 || return 1
	fi
	q=0
	for p in $CL_PORT_JOBS; do
		cls=5:$((10 + q))
		cl_sw tc filter add dev "$dev" parent 5: protocol ip prio 2 u32 \
			match ip protocol 6 0xff match ip sport "$p" 0xffff flowid "$cls" || return 1
		cl_sw tc filter add dev "$dev" parent 5: protocol ip prio 2 u32 \
			match ip protocol 6 0xff match ip dport "$p" 0xffff flowid "$cls" || return 1
		q=$((q + 1))
	done
}

# cluster_ports Q: every switch port becomes a FIFO (Q = 1) or Q strict-priority DSCP queues
# between runs (the nodes must write DSCP: CL_DSCP=1 at cluster_up).
cluster_ports() {
	local i
	CL_PORT_QUEUES=$1
	for ((i = 0; i < CL_NODES; i++)); do port_shape "s$i" "$CL_RATE_MBIT" || return 1; done
	if [ "$CL_FABRIC" = tworack ]; then
		port_shape u0 "$CL_UPLINK_MBIT" && port_shape u1 "$CL_UPLINK_MBIT" || return 1
	fi
}

# cluster_ecn 0|1: FIFO switch ports without or with ECN marking (CL_PORT_ECN) between runs,
# the nodes asking for ECN on their connections only where the ports mark.
cluster_ecn() {
	local i
	CL_PORT_ECN=$1
	for ((i = 0; i < CL_NODES; i++)); do cl_node_ecn "$i" || return 1; done
	cluster_ports 1
}

# cluster_fabric_shrink K: the port buffer for a model shrunk K times (CL_PORT_BUF_REAL / K
# emulated bytes, unless CL_PORT_BUF was given), applied to every switch port.
cluster_fabric_shrink() {
	[ -n "$CL_PORT_BUF_SET" ] || CL_PORT_BUF=$((CL_PORT_BUF_REAL / $1))
	[ "$CL_FABRIC" = egress ] && return 0
	cluster_ports "$CL_PORT_QUEUES"
}

shaper_attach() {
	local i=$1 rate=$2 b
	if [ "$CL_SHAPER" = mercuryd ]; then
		# One pin root per node: every node's interface is called e0, and with a shared
		# pin root attach on node 1.. would find node 0's pins and leave e0 unshaped.
		# CL_DSCP_GUARD: the fabric order guard (mercuryd attach --dscp-guard; its
		# default when unset); CL_ATTACH_FORCE=1 re-attaches (cluster_dscp_guard).
		local dscp=()
		[ "$CL_PORT_QUEUES" -gt 1 ] || [ "${CL_DSCP:-0}" = 1 ] && dscp=(--dscp "$(cl_dscp_list)")
		[ ${#dscp[@]} -gt 0 ] && [ -n "${CL_DSCP_GUARD:-}" ] && dscp+=(--dscp-guard "$CL_DSCP_GUARD")
		# CL_JOB_POLICY (share|priority): re-attach with that job policy (--force: the
		# other policy's attach is replaced; the same one is left as it is).
		local policy=()
		[ -n "${CL_JOB_POLICY:-}" ] && policy=(--job-policy "$CL_JOB_POLICY" --force)
		# -q: the rise-bound warning is expected here (tcp_limit_output_bytes is left at
		# its default on every node, for results comparable with the other shapers).
		cl_in "$i" "$MERCURYD" -q --pin-root "$CL_PIN/n$i" attach e0 --qdisc htb \
			--bands "$CL_BANDS" --rate "${rate}mbit" --default-band "$CL_DEFAULT_BAND" \
			"${dscp[@]}" "${policy[@]}" ${CL_ATTACH_FORCE:+--force} >/dev/null || {
			echo "cluster: mercuryd attach failed on node $i" >&2
			return 1
		}
	else
		cl_in "$i" tc qdisc add dev e0 root handle 4d45: htb default 10 || return 1
		cl_in "$i" tc class add dev e0 parent 4d45: classid 4d45:1 htb rate "${rate}mbit" \
			ceil "${rate}mbit" burst 64k cburst 64k || return 1
		for ((b = 0; b < 8; b++)); do
			cl_in "$i" tc class add dev e0 parent 4d45:1 \
				classid "4d45:$(printf %x $((0x10 + b)))" htb rate 1mbit \
				ceil "${rate}mbit" burst 64k cburst 64k prio "$b" || return 1
		done
	fi
	# Every node must really be shaped.
	local classes
	classes=$(cl_in "$i" tc class show dev e0) # (grep -q in a pipe: SIGPIPE under pipefail)
	[[ $classes == *"class htb 4d45:1 root rate ${rate}Mbit"* ]] || {
		echo "cluster: node $i's egress is not shaped at ${rate} Mbit/s" >&2
		return 1
	}
}

# cluster_dscp_guard MODE: the fabric order guard of every node's classifier (on, off or a
# bound: mercuryd attach --dscp-guard) between runs; the nodes must write DSCP.
cluster_dscp_guard() {
	local i CL_ATTACH_FORCE=1
	CL_DSCP_GUARD=$1
	for ((i = 0; i < CL_NODES; i++)); do shaper_attach "$i" "$CL_RATE_MBIT" || return 1; done
}

# cluster_rto_min MS: TCP's retransmission-timeout floor (200 ms) does not scale with the
# emulated time, so a flow preempted for a scaled-up while would time out where the real one
# would not. Every run scales it with the network's time scale (the same in every mode).
cluster_rto_min() {
	local i
	for ((i = 0; i < CL_NODES; i++)); do
		cl_in "$i" ip route change 10.99.0.0/24 dev e0 proto kernel scope link \
			src "$(cl_ip "$i")" rto_min "${1}ms" || return 1
	done
}

# cluster_rto_scaled TS: the 200 ms floor multiplied by the run's time scale TS.
cluster_rto_scaled() {
	cluster_rto_min "$(printf %.0f "$(echo "200 * $1" | bc -l)")"
}

# Starts `mercuryd serve` in every node (mercuryd shaper, mercury mode).
serve_start() {
	local i
	mkdir -p "$CL_RUN"
	for ((i = 0; i < CL_NODES; i++)); do
		# nsenter execs the daemon, so $! is the daemon itself (killed by PID at teardown)
		nsenter --net=/var/run/netns/"$(cl_ns "$i")" "$MERCURYD" --pin-root "$CL_PIN/n$i" serve \
			--socket "$CL_RUN/n$i.sock" >"$CL_RUN/serve$i.log" 2>&1 &
		CL_PIDS+=($!)
	done
	for ((i = 0; i < 50; i++)); do
		[ -S "$CL_RUN/n$((CL_NODES - 1)).sock" ] && break
		sleep 0.1
	done
	[ -S "$CL_RUN/n$((CL_NODES - 1)).sock" ] ||
		{ echo "cluster: mercuryd serve did not come up (see $CL_RUN/serve*.log)" >&2; return 1; }
	fastpath_start
	return 0
}

# Attaches the tag fast path on every node (CL_FASTPATH=1, a cgroup v2 hierarchy mounted);
# where it cannot, says why once and leaves tags to the service.
fastpath_start() {
	local i mnt err
	[ "$CL_FASTPATH" = 1 ] && [ "$CL_SHAPER" = mercuryd ] || return 0
	mnt=${MERCURY_CGROUP2:-$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)}
	[ -n "$mnt" ] || { echo "cluster: no cgroup v2 mounted: tags go through mercuryd serve" >&2; return 0; }
	CL_CG=$mnt
	for ((i = 0; i < CL_NODES; i++)); do
		if ! mkdir "$(cl_cg "$i")" 2>/dev/null ||
			! err=$(cl_in "$i" "$MERCURYD" --pin-root "$CL_PIN/n$i" fastpath attach \
				--cgroup "$(cl_cg "$i")" 2>&1); then
			echo "cluster: no tag fast path on node $i (${err:-mkdir $(cl_cg "$i") failed}): tags go through mercuryd serve" >&2
			for ((; i >= 0; i--)); do
				cl_in "$i" "$MERCURYD" --pin-root "$CL_PIN/n$i" fastpath detach >/dev/null 2>&1
				rmdir "$(cl_cg "$i")" 2>/dev/null
			done
			CL_CG=""
			return 0
		fi
	done
}

# Kernel counters of node i: "OutSegs RetransSegs tx_bytes(e0) TCPTimeouts
# TCPSpuriousRtxHostQueues InCEPkts" (TCPSpuriousRtxHostQueues: retransmissions TCP dropped
# because the original was still queued in the node itself, e.g. waiting in a starved band: a
# timer, not a loss; InCEPkts: packets received with CE, marked by an ECN port).
counters() {
	cl_in "$1" awk '
		/^Tcp:/ { if (!h) { for (k = 1; k <= NF; k++) col[$k] = k; h = 1 }
			  else { out = $col["OutSegs"]; re = $col["RetransSegs"] } }
		END { print out, re }' /proc/net/snmp | tr '\n' ' '
	cl_in "$1" awk -F'[: ]+' '$2 == "e0" { print $11 }' /proc/net/dev | tr '\n' ' '
	cl_in "$1" awk '
		/^TcpExt:/ { if (!h) { for (k = 1; k <= NF; k++) col[$k] = k; h = 1 }
			     else { to = $col["TCPTimeouts"]; held = $col["TCPSpuriousRtxHostQueues"] } }
		/^IpExt:/ { if (!hi) { for (k = 1; k <= NF; k++) ic[$k] = k; hi = 1 }
			    else { ce = $ic["InCEPkts"] } }
		END { print to, held, ce + 0 }' /proc/net/netstat
}

# counters_before DIR / counters_after DIR: every node's counters, the switch drops (per
# port, and their sum: one reading of the switch) and, after, the fabric, into DIR as
# collect.py reads them (c0.<node>, swports0, swdrop0; c1.<node>, swports1, swdrop1, fabric).
counters_before() {
	local i
	for ((i = 0; i < CL_NODES; i++)); do counters "$i" >"$1/c0.$i"; done
	switch_port_drops >"$1/swports0"
	port_drops_total <"$1/swports0" >"$1/swdrop0"
}
counters_after() {
	local i
	for ((i = 0; i < CL_NODES; i++)); do counters "$i" >"$1/c1.$i"; done
	switch_port_drops >"$1/swports1"
	port_drops_total <"$1/swports1" >"$1/swdrop1"
	fabric_desc >"$1/fabric"
}

# Drops so far per switch port, as JSON {"port": drops}: s<i> is the port towards node i, u0
# and u1 the two ends of the uplink between racks (u0 sends rack 0's traffic to rack 1). A
# root qdisc counts its children's drops too: only roots.
switch_port_drops() {
	[ "$CL_FABRIC" = egress ] && { echo '{}'; return; }
	cl_sw tc -s -j qdisc show | jq -c '[.[] | select(.root) | {(.dev): .drops}] | add // {}'
}
# The sum of switch_port_drops' JSON on stdin; switch_drops: all ports' drops so far.
port_drops_total() { jq '[.[]] | add // 0'; }
switch_drops() { switch_port_drops | port_drops_total; }

# "busy total steal" jiffies of this VM: steal is CPU time the hypervisor gave to someone
# else; a run with much of it is timed on a descheduled CPU (veth backlogs stall and reorder).
cpu_busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8, $9 }' /proc/stat; }

# run_ps OUT_JSONL LABEL MODEL MODE [mercury-ps args...]: one run on every node; appends
# one summary line (JSON) to OUT_JSONL.
run_ps() {
	local out=$1 label=$2 model=$3 mode=$4 i hosts="" t0 t1 cpu0 cpu1 rc=0 cg=()
	shift 4
	for ((i = 0; i < CL_NODES; i++)); do hosts+="${hosts:+,}$(cl_ip "$i"):9555"; done
	local tmp
	tmp=$(mktemp -d)
	local extra=()
	if [ "$mode" = mercury ] && [ "$CL_SHAPER" = tc ]; then extra+=(--sock-prio 0x4d450010); fi
	if [ "$mode" = mercury ] && [ "$CL_SHAPER" = mercuryd ]; then extra+=(--bands "$CL_BANDS"); fi
	# DSCP switch ports: connections by switch queue (mercury-ps --dscp-queues, the queues of
	# cl_queue_of), so that no socket's bytes sit in two strict-priority queues of a port;
	# CL_DSCP_CONNS=0 keeps the connections by layer group only (--conns as given).
	if [ "$mode" = mercury ] && [ "$CL_SHAPER" = mercuryd ] && [ "$CL_PORT_QUEUES" -gt 1 ] &&
		[ "${CL_DSCP_CONNS:-1}" = 1 ] && [[ " $* " != *" --dscp-queues "* ]]; then
		extra+=(--dscp-queues "$CL_PORT_QUEUES")
	fi
	counters_before "$tmp"
	cpu0=$(cpu_busy_jiffies)
	t0=$(date +%s.%N)
	local pids=()
	for ((i = 0; i < CL_NODES; i++)); do
		# nsenter and env exec: $! is timeout(1), which passes a TERM on to the PS
		mapfile -t cg < <(cl_exec_cg "$i")
		nsenter --net=/var/run/netns/"$(cl_ns "$i")" "${cg[@]}" env MERCURY_SOCKET="$CL_RUN/n$i.sock" \
			MERCURY_BANDS="$CL_BANDS" \
			timeout 600 "$PS_BIN" run \
			--profile "$CL_ROOT/models/$model.prof" --mode "$mode" --nodes "$CL_NODES" \
			--rank "$i" --hosts "$hosts" "${extra[@]}" "$@" \
			--timeline "$tmp/tl.$i" >"$tmp/out.$i" 2>"$tmp/err.$i" &
		pids+=($!)
	done
	local saved=("${CL_PIDS[@]}")
	CL_PIDS+=("${pids[@]}")
	for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
	CL_PIDS=("${saved[@]}")
	t1=$(date +%s.%N)
	cpu1=$(cpu_busy_jiffies)
	counters_after "$tmp"
	if [ -n "${CL_KEEP_TIMELINES:-}" ]; then
		cp "$tmp/tl.0" "$CL_KEEP_TIMELINES/$label.$model.tl" 2>/dev/null
		[ -n "${CL_KEEP_ALL_NODES:-}" ] && for ((i = 0; i < CL_NODES; i++)); do
			cp "$tmp/tl.$i" "$CL_KEEP_TIMELINES/$label.$model.tl.$i" 2>/dev/null
		done
	fi
	if [ $rc -ne 0 ]; then
		echo "cluster: $label $model failed:" >&2
		cat "$tmp"/err.* >&2
	elif [ -s "$tmp/err.0" ]; then
		sed "s/^/cluster: node 0: /" "$tmp/err.0" | sort -u | head -n 3 >&2
	fi
	/usr/bin/python3 "$CL_ROOT/cluster/collect.py" "$tmp" "$CL_NODES" "$label" "$model" \
		"$mode" "$t0" "$t1" "$cpu0" "$cpu1" "$CL_RATE_MBIT" "$CL_SHAPER" "$CL_CC" >>"$out"
	rm -rf "$tmp"
	return $rc
}

# run_cell OUT_JSONL LABEL MODEL MODE [mercury-ps args...]: run_ps, repeated (STEAL_RETRIES,
# 2, times at most) while the hypervisor took more than CL_STEAL_MAX of the VM's CPU time
# during it; keeps its last try and records how many it took and which repetition ($REP) of
# the cell it is.
STEAL_RETRIES=${STEAL_RETRIES:-2}
REP=0
run_cell() {
	local out=$1 one try steal
	shift
	one=$(mktemp)
	for ((try = 0; ; try++)); do
		: >"$one"
		run_ps "$one" "$@"
		steal=$(jq -r '.host_steal // 0' "$one")
		if [ "$try" -ge "$STEAL_RETRIES" ] || [ "$(echo "$steal <= $CL_STEAL_MAX" | bc -l)" = 1 ]; then
			break
		fi
		echo "cluster: $1 $2: host steal $steal, running it again" >&2
	done
	jq -c --argjson tries "$((try + 1))" --argjson rep "$REP" '. + {runs: $tries, rep: $rep}' \
		"$one" >>"$out"
	rm -f "$one"
}

CL_PY=${CL_PY:-/usr/bin/python3}
# A trainer's glibc keeps freed memory in its heap instead of unmapping big blocks (bench-torch's
# MALLOC_TUNED=1, the trace's): PyTorch's activations are not faulted back in every step.
CL_TORCH_MALLOC_ENV="MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=1073741824"
# link_reference RATE: one JSON line, what node 0's egress sends in bulk (8 TCP connections to
# node 1, 3 s), counted as a trainer counts a run's bytes (bench/link_bulk.py): the 100 % of a
# run's link use.
link_reference() {
	local bulk pid
	cl_in 1 "$CL_PY" "$CL_ROOT/bench/link_bulk.py" serve --bind "$(cl_ip 1)" --seconds 3 &
	pid=$!
	bulk=$(cl_in 0 "$CL_PY" "$CL_ROOT/bench/link_bulk.py" send --to "$(cl_ip 1)" --seconds 3 \
		--iface e0)
	wait "$pid"
	[ -n "$bulk" ] || { echo "cluster: the bulk link reference failed" >&2; return 1; }
	jq -c --argjson rate "$1" '. + {"label": "bulk", "mode": "bulk", "rate_mbit": $rate}' <<<"$bulk"
}

# run_torch DIR SCRIPT [args...]: one training process per node, launched by PyTorch's own
# launcher (torch.distributed.run, static rendezvous at node 0) inside the node's namespace,
# with node i's mercuryd socket. Logs in DIR/node<i>.log (launcher) and DIR/logs<i>/ (the
# trainer's stdout/stderr). Returns non-zero when any node's launcher does.
run_torch() {
	local dir=$1 script=$2 i rc=0 pids=() cg=() dq=0
	shift 2
	mkdir -p "$dir"
	# DSCP switch ports: mercury.torch's connections by switch queue, as run_ps's
	[ "$CL_PORT_QUEUES" -gt 1 ] && [ "${CL_DSCP_CONNS:-1}" = 1 ] && dq=$CL_PORT_QUEUES
	for ((i = 0; i < CL_NODES; i++)); do
		# Debian's torch 1.13 on Python 3.11 cannot parse the default --redirects; one
		# thread per trainer: two of them share this machine's two cores.
		mapfile -t cg < <(cl_exec_cg "$i")
		nsenter --net=/var/run/netns/"$(cl_ns "$i")" "${cg[@]}" env MERCURY_SOCKET="$CL_RUN/n$i.sock" \
			MERCURY_BANDS="$CL_BANDS" MERCURY_DSCP_QUEUES="$dq" \
			OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=e0 ${CL_TORCH_ENV:-} \
			timeout "${CL_TORCH_TIMEOUT:-300}" "$CL_PY" -m torch.distributed.run \
			--nnodes "$CL_NODES" --node_rank "$i" --nproc_per_node 1 \
			--master_addr "$(cl_ip 0)" --master_port 29500 \
			--redirects 1 --tee 1 --log_dir "$dir/logs$i" \
			"$script" "$@" >"$dir/node$i.log" 2>&1 &
		pids+=($!)
	done
	local saved=("${CL_PIDS[@]}")
	CL_PIDS+=("${pids[@]}")
	for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
	CL_PIDS=("${saved[@]}")
	return $rc
}

# run_jobs OUT_JSONL LABEL: several PS jobs at once on every node (cluster/multijob.sh). Job j
# is MJ_MODEL[j] in MJ_MODE[j] with mercury-ps arguments MJ_ARGS[j] (one string, split on
# blanks) and server port 9555 + 100 j; every job's process of node i runs in node i's
# namespace and cgroup and tags through node i's one mercuryd. With MJ_BULK="SRC DST BYTES
# DELAY" a fixed-size bulk transfer (bench/link_bulk.py send --bytes, 4 connections, untagged)
# runs from node SRC to node DST beside them, starting DELAY seconds after the jobs. Appends
# one line per job (collect.py's summary of that job, its index in "job_index"; the kernel
# counters are the whole cluster's over the whole run, shared by every job's line) and, with
# MJ_BULK, one line with mode "bulk". Returns non-zero when any process failed.
run_jobs() {
	local out=$1 label=$2 j i rc=0 t0 t1 cpu0 cpu1 tmp pids=() cg=() bulk_pids=()
	local njobs=${#MJ_MODEL[@]}
	tmp=$(mktemp -d)
	counters_before "$tmp"
	cpu0=$(cpu_busy_jiffies)
	t0=$(date +%s.%N)
	for ((j = 0; j < njobs; j++)); do
		local port=$((9555 + 100 * j)) hosts="" extra=() args=()
		read -ra args <<<"${MJ_ARGS[$j]}"
		for ((i = 0; i < CL_NODES; i++)); do hosts+="${hosts:+,}$(cl_ip "$i"):$port"; done
		[ "$CL_SHAPER" = mercuryd ] && extra+=(--bands "$CL_BANDS")
		mkdir -p "$tmp/j$j"
		for ((i = 0; i < CL_NODES; i++)); do
			mapfile -t cg < <(cl_exec_cg "$i")
			nsenter --net=/var/run/netns/"$(cl_ns "$i")" "${cg[@]}" \
				env MERCURY_SOCKET="$CL_RUN/n$i.sock" MERCURY_BANDS="$CL_BANDS" \
				timeout 600 "$PS_BIN" run --profile "$CL_ROOT/models/${MJ_MODEL[$j]}.prof" \
				--mode "${MJ_MODE[$j]}" --nodes "$CL_NODES" --rank "$i" --hosts "$hosts" \
				--port "$port" "${extra[@]}" "${args[@]}" \
				>"$tmp/j$j/out.$i" 2>"$tmp/j$j/err.$i" &
			pids+=($!)
		done
	done
	if [ -n "${MJ_BULK:-}" ]; then
		local src dst bytes delay
		read -r src dst bytes delay <<<"$MJ_BULK"
		cl_in "$dst" "$CL_PY" "$CL_ROOT/bench/link_bulk.py" serve --bind "$(cl_ip "$dst")" \
			--port 29612 --conns 4 --seconds 600 &
		bulk_pids+=($!)
		cl_in "$src" "$CL_PY" "$CL_ROOT/bench/link_bulk.py" send --to "$(cl_ip "$dst")" \
			--port 29612 --conns 4 --bytes "$bytes" --delay "$delay" >"$tmp/bulk" 2>"$tmp/bulk.err" &
		bulk_pids+=($!)
	fi
	local saved=("${CL_PIDS[@]}")
	CL_PIDS+=("${pids[@]}" "${bulk_pids[@]}")
	for p in "${pids[@]}" "${bulk_pids[@]:1}"; do wait "$p" || rc=1; done
	# the receiver has exited once the transfer is complete; after a failed one it would
	# wait for connections until its timeout
	[ ${#bulk_pids[@]} -gt 0 ] && { kill "${bulk_pids[0]}" 2>/dev/null; wait "${bulk_pids[0]}"; }
	CL_PIDS=("${saved[@]}")
	t1=$(date +%s.%N)
	cpu1=$(cpu_busy_jiffies)
	counters_after "$tmp"
	for ((j = 0; j < njobs; j++)); do
		cp "$tmp"/c[01].* "$tmp"/swdrop* "$tmp"/swports* "$tmp/fabric" "$tmp/j$j/"
		if ! jq -es 'length > 0 and all(.[]; .ok)' "$tmp/j$j"/out.* >/dev/null 2>&1; then
			echo "cluster: $label job $j (${MJ_MODEL[$j]}) failed:" >&2
			cat "$tmp/j$j"/err.* >&2
		fi
		/usr/bin/python3 "$CL_ROOT/cluster/collect.py" "$tmp/j$j" "$CL_NODES" "$label" \
			"${MJ_MODEL[$j]}" "${MJ_MODE[$j]}" "$t0" "$t1" "$cpu0" "$cpu1" "$CL_RATE_MBIT" \
			"$CL_SHAPER" "$CL_CC" |
			jq -c --argjson j "$j" --slurpfile n <(cat "$tmp/j$j"/out.* 2>/dev/null) \
				'. + {job_index: $j, job: ($n[0].job // null), weight: ($n[0].weight // null),
				      job_band: ($n[0].job_band // null),
				      bytes_sent: ([$n[] | .bytes_sent // 0] | add),
				      total_iters: ([$n[0].fp_end // [] | length] | .[0] - 1)}' >>"$out"
	done
	if [ -n "${MJ_BULK:-}" ]; then
		if [ -s "$tmp/bulk" ]; then
			jq -c --arg l "$label" --arg s "$src" --arg d "$dst" \
				'. + {label: $l, mode: "bulk", ok: true, src: ($s | tonumber), dst: ($d | tonumber)}' \
				"$tmp/bulk" >>"$out"
		else
			echo "cluster: $label: the bulk transfer failed: $(cat "$tmp/bulk.err")" >&2
			jq -nc --arg l "$label" '{label: $l, mode: "bulk", ok: false}' >>"$out"
			rc=1
		fi
	fi
	rm -rf "$tmp"
	return $rc
}
