#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Real PyTorch training through Mercury on a 2-node emulated cluster (namespaces, 100 Mbit/s
# htb egress per node, mercuryd on every node), launched by torch.distributed.run: a small
# CNN (32x32, 16 images per worker, an LR scheduler stepped after every step, Adam with two
# parameter groups) trained in fifo, partition and mercury modes ends with
# the parameters of one process trained on the concatenated batches (and so does a mid-run
# checkpoint), and its loss falls; mercury mode's bytes are tagged. Faults: a worker with
# another model fails at HELLO on both nodes; a trainer killed mid-iteration gives the other
# a clear error in bounded time; without mercuryd training runs untagged with one warning.
# A run resumed from a checkpoint read on rank 0 alone (broadcast_optimizer_state) ends where
# the reference does.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP: no python3-torch (make deps)"; exit 77; }
CL_PFX=mqtt$$
. "$here/../../cluster/lib.sh"
[ -f "$CL_ROOT/build/libmercury-ps.so" ] || { echo "SKIP: build/libmercury-ps.so not built"; exit 77; }
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); return 1; fi; }
work=$(mktemp -d)
trap 'rm -rf "$work"; cluster_down' EXIT
train=$CL_ROOT/tests/torch/train_check.py
py() { OPENBLAS_NUM_THREADS=1 /usr/bin/python3 "$@"; }

# One worker on loopback, no cluster: a layer that a conditional branch skips in some
# iterations still gets every update, in order (its owed update is applied at the step()
# that finds it skipped), so the parameters end where plain PyTorch puts them.
# A static rendezvous on 127.0.0.1 and gloo on lo: a bare root may resolve neither
# "localhost" (--standalone's endpoint) nor its own host name.
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OPENBLAS_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo timeout 120 /usr/bin/python3 -m torch.distributed.run \
	--nnodes 1 --node_rank 0 --nproc_per_node 1 --master_addr 127.0.0.1 --master_port "$port" \
	--redirects 1 --tee 1 --log_dir "$work/unused" \
	"$here/../torch/unused_layer_check.py" >"$work/unused.log" 2>&1
rc=$?
check "a layer skipped by some forward passes: parameters as plain PyTorch's ($(grep -o 'max abs.*' "$work/unused.log"))" \
	"[ $rc -eq 0 ]" || tail -n 5 "$work/unused.log"

cluster_up 2 100 mercuryd || { echo "FAIL: cluster setup"; exit 1; }
serve_start || { echo "FAIL: mercuryd serve"; exit 1; }

# The third word: who serves each node's share (mercury.torch's servers=): the trainer's own
# threads, or a `mercury-ps serve` process the trainer starts (that one and the trainer then
# both tag through their node's mercuryd, as one job).
for cfg in "fifo sgd in-process" "partition sgd in-process" "mercury sgd process" \
	"mercury sgd in-process" "mercury adam in-process"; do
	set -- $cfg
	d=$work/$1-$2-$3
	mkdir -p "$d"
	py "$train" --reference --opt "$2" --out "$d" || { echo "FAIL: reference run"; exit 1; }
	# partition: small partitions under a credit, so every layer is cut and scheduled
	CL_TORCH_ENV="MERCURY_PS_SERVERS=$3" \
		run_torch "$d" "$train" --out "$d" --mode "$1" --opt "$2" --part 3000 --credit 6000
	rc=$?
	check "$1 $2 $3: both trainers finished" "[ $rc -eq 0 ]" || cat "$d"/node*.log
	check "$1 $2 $3: parameters (final and mid-run checkpoint) equal one process on the concatenated batches" \
		"py '$here/../torch/compare.py' '$d' 1e-5"
	check "$1 $2 $3: layers whose aggregates were already here shared an optimizer call" \
		"jq -e '.update_calls > 0 and .update_calls < .layer_updates' '$d/worker0.json' '$d/worker1.json' >/dev/null"
	if [ "$3" = process ]; then
		check "$1 $2 $3: each trainer's node was served by its own mercury-ps serve" \
			"grep -l 'mercury-ps: serve: node' '$d'/node0.log '$d'/node1.log | wc -l | grep -qx 2"
	fi
	if [ "$1" = mercury ]; then
		check "$1 $2: every trainer tagged through mercuryd" \
			"jq -e .tagged '$d/worker0.json' '$d/worker1.json' >/dev/null"
		[ -n "$CL_CG" ] && check "$1 $2: every tag took the fast path of the trainer's node" \
			"jq -e '.tag_counts[0] > 0 and .tag_counts[1] == 0' '$d/worker0.json' '$d/worker1.json' >/dev/null"
	fi
done
# Resuming as users do: rank 0 alone reads the reference's mid-run checkpoint (model, Adam's
# state, the scheduler), the other rank starts elsewhere; mt.broadcast_parameters and
# mt.broadcast_optimizer_state make them one job that ends where the reference does.
d=$work/resume
mkdir -p "$d"
cp "$work"/mercury-adam-in-process/reference* "$d"/
run_torch "$d" "$train" --out "$d" --mode mercury --opt adam --resume
rc=$?
check "resumed on rank 0 alone: both trainers finished" "[ $rc -eq 0 ]" || cat "$d"/node*.log
check "resumed on rank 0 alone: the broadcast state ends where the reference does" \
	"py '$here/../torch/compare.py' '$d' 1e-5 --resumed"

bands=$(cl_in 0 "$MERCURYD" --pin-root "$CL_PIN/n0" -j status e0 |
	jq '[.interfaces[0].per_band[] | select(.bytes > 100000)] | length')
check "mercury: the trainers' bytes spread over several bands ($bands)" "[ '${bands:-0}' -ge 2 ]"

d=$work/layout
start=$(date +%s)
run_torch "$d" "$train" --out "$d" --mode mercury --hidden-on 1:32 --no-broadcast --timeout 20
rc=$?
took=$(($(date +%s) - start))
check "another model on one worker: both trainers fail" "[ $rc -ne 0 ]"
check "another model: each trainer says the model layout differs" \
	"grep -l 'model layout' '$d'/node0.log '$d'/node1.log | wc -l | grep -qx 2" ||
	grep -h 'mercury-ps\|Error' "$d"/node0.log "$d"/node1.log | sort -u
check "another model: refused in ${took}s (< 15 s, below the 20 s stall timeout)" "[ $took -lt 15 ]"

d=$work/kill
mkdir -p "$d"
start=$(date +%s)
run_torch "$d" "$train" --out "$d" --mode mercury --steps 400 --timeout 30 &
launch=$!
for ((i = 0; i < 300; i++)); do
	[ "$(cat "$d/progress1" 2>/dev/null)" -ge 3 ] 2>/dev/null && break
	sleep 0.1
done
victim=$(cat "$d/pid1" 2>/dev/null)
killed=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
wait $launch
rc=$?
took=$(($(date +%s) - killed))
check "trainer 1 killed mid-run: the run fails" "[ -n '$victim' ] && [ $rc -ne 0 ]"
check "trainer 1 killed: trainer 0 names the lost peer" \
	"grep -qE 'server 1 went away|worker 1 disconnected|node 1 disconnected' '$d'/node0.log"
check "trainer 1 killed: trainer 0 stopped ${took}s later (< 20 s, below the 30 s stall timeout)" "[ $took -lt 20 ]"

d=$work/nodaemon
CL_TORCH_ENV="MERCURY_SOCKET=/nonexistent/mercury.sock" run_torch "$d" "$train" --out "$d" --mode mercury --steps 4
rc=$?
check "no mercuryd: training still finishes" "[ $rc -eq 0 ]"
check "no mercuryd: untagged" "jq -e '.tagged == false' '$d/worker0.json' >/dev/null"
warns=$(grep -c 'cannot use mercuryd' "$d"/node0.log)
check "no mercuryd: one warning ($warns)" "[ '$warns' -eq 1 ]"

[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
echo "$fails check(s) failed"
exit 1
