#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Every GPU check of mercury.torch in one command, on a machine with CUDA (run from anywhere;
# PY: the python3 with a CUDA torch, default python3 on PATH). Builds libmercury-ps if build/
# lacks it (a C compiler is enough), then: tests/gpu/run.sh (2 ranks on one GPU against the
# single-process reference, fp32, AMP and fp16), and examples/train_torch.py on the GPU with
# 2 ranks (resnet18, with and without clipping: the loss must fall), each timed. Exit status
# 0 when all pass; paste the output into BENCHMARKS.md.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export PY=${PY:-python3}
fails=0
echo "== machine"
nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
"$PY" -c 'import torch' 2>/dev/null || { echo "SKIP: no torch for $PY"; exit 77; }
"$PY" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda,
    torch.cuda.get_device_name(0) if torch.cuda.is_available() else "NO CUDA")' || exit 1
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
	{ echo "SKIP: no CUDA"; exit 77; }
git log -1 --format='commit %h %s' 2>/dev/null
echo "== build"
if [ ! -f build/libmercury-ps.so ]; then
	make -j"$(nproc)" build/libmercury-ps.so >/tmp/gpu-check-build.$$ 2>&1 ||
		{ tail -n 20 /tmp/gpu-check-build.$$; echo "FAIL: build"; exit 1; }
fi
ls -l build/libmercury-ps.so build/libmercury.so

echo "== tests/gpu/run.sh"
start=$(date +%s.%N)
bash tests/gpu/run.sh || fails=$((fails + 1))
printf 'took %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"

if "$PY" -c 'import torchvision' 2>/dev/null; then
	for clip in 0 1.0; do
		echo "== examples/train_torch.py: resnet18, 2 ranks on one GPU, --clip $clip"
		port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		log=$(mktemp -d)
		start=$(date +%s.%N)
		GLOO_SOCKET_IFNAME=lo MERCURY_PS_PORT=$((port + 1)) timeout 300 "$PY" -m torch.distributed.run \
			--nnodes 1 --node_rank 0 --nproc_per_node 2 --master_addr 127.0.0.1 \
			--master_port "$port" --redirects 1 --tee 1 --log_dir "$log" \
			examples/train_torch.py --steps 30 --batch 32 --image 64 --mode fifo \
			--clip "$clip" >"$log/out" 2>&1
		rc=$?
		printf 'rc %d, %.1f s for 30 steps (launch included)\n' "$rc" "$(echo "$(date +%s.%N) - $start" | bc)"
		first=$(grep -ho 'step 0 loss [0-9.]*' -r "$log" | head -1 | awk '{print $4}')
		last=$(grep -ho 'step 29 loss [0-9.]*' -r "$log" | head -1 | awk '{print $4}')
		echo "rank 0 loss: step 0 ${first:-?}, step 29 ${last:-?}"
		if [ $rc -ne 0 ] || [ -z "$last" ] || ! awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'; then
			echo "FAIL: example --clip $clip"
			tail -n 20 "$log/out"
			fails=$((fails + 1))
		fi
		rm -rf "$log"
	done
else
	echo "(no torchvision: the example is skipped)"
fi
[ $fails -eq 0 ] && { echo "gpu-check: all passed"; exit 0; }
echo "gpu-check: $fails failed"
exit 1
