#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# mercury.torch on a GPU (skipped without CUDA): 2 ranks sharing one GPU over loopback, every
# scenario of tests/torch/api_check.py (op=Average and op=Sum, SGD and Adam, clipping through
# synchronize()/skip_synchronize(), backward_passes_per_step=2, the Horovod-style call) plus
# amp (autocast fp16 with GradScaler) and half (an fp16 model), the model, data and the
# single-process reference on the GPU; gradients staged through pinned host memory on a side
# stream. PY: the python3 with a CUDA torch (default: python3 on PATH).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PY=${PY:-python3}
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
	{ echo "SKIP: no CUDA in $PY's torch"; exit 77; }
# 9 scenarios and 6 construction errors, on each of the 2 ranks
MERCURY_TEST_DEVICE=cuda EXPECT=30 bash "$here/../integration/test_torch_api.sh"
