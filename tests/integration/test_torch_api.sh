#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mercury.torch's Horovod/BytePS API on 2 trainers over loopback (no cluster, no mercuryd:
# fifo mode, untagged): op=Average and op=Sum with SGD and Adam (two parameter groups), an
# LR scheduler attached to the DistributedOptimizer, clip_grad_norm_ between synchronize() and
# step() inside skip_synchronize(), backward_passes_per_step=2, the Horovod-style call without
# model=, every rank started apart: the parameters equal one process trained on the
# concatenated batches (tests/torch/api_check.py); wrong constructions fail at construction.
# tests/gpu/run.sh runs it on a GPU: MERCURY_TEST_DEVICE=cuda, PY (its python3), EXPECT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=${PY:-/usr/bin/python3}
# 7 scenarios and 7 construction errors, on each of the 2 ranks
EXPECT=${EXPECT:-28}
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIP: no python3-torch (make deps)"; exit 77; }
[ -f "$root/build/libmercury-ps.so" ] || { echo "SKIP: build/libmercury-ps.so not built"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A static rendezvous on 127.0.0.1 and gloo on lo; PS ports right above the launcher's.
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OPENBLAS_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo MERCURY_PS_PORT=$((port + 1)) \
	MERCURY_SOCKET=/nonexistent/mercury.sock timeout 240 "$PY" -m torch.distributed.run \
	--nnodes 1 --node_rank 0 --nproc_per_node 2 --master_addr 127.0.0.1 --master_port "$port" \
	--redirects 1 --tee 1 --log_dir "$work/logs" "$root/tests/torch/api_check.py" >"$work/out.log" 2>&1
rc=$?
out=$(find "$work/logs" -name stdout.log -exec cat {} +)
echo "$out" | grep -E '^(ok|FAIL)' | sort
oks=$(echo "$out" | grep -c '^ok ')
fails=$(echo "$out" | grep -c '^FAIL')
if [ $rc -eq 0 ] && [ "$fails" -eq 0 ] && [ "$oks" -eq "$EXPECT" ]; then
	echo "all checks passed"
	exit 0
fi
echo "FAIL: launcher rc $rc, $oks ok lines ($EXPECT expected), $fails FAIL lines"
echo "$out" | grep -v -E '^(ok|FAIL)' | tail -n 30
tail -n 20 "$work/out.log"
exit 1
