#!/usr/bin/env bash
# gpu-check.sh (make gpu-check): the prepared check for the day a machine
# with an NVIDIA GPU (compute capability >= 8.0) is available. Budget: 10
# minutes; each step has its own timeout. Needs Go, the CUDA driver, and
# the cuBLAS runtime (libcublas11); nvcc is not needed (the PTX is
# committed and JIT-compiled by the driver).
#
#   1. build bin/train-cuda (-tags argrl_cuda) and bin/train
#   2. the conformance suite on the GPU, plus the emulator's extra shapes,
#      and a GPU-vs-emulator comparison of the same kernels
#   3. kernel throughput at Qwen2.5-7B shapes (GEMM, attention, log-softmax,
#      sampling)
#   4. [needs `train grpo` and the demo config, issues 7 and 8] a 20-step
#      GRPO on the tiny demo model with the CPU and the CUDA backend; the
#      losses are compared step by step (cmd/gpucheck), and the
#      rollout/training tokens/s and peak GPU memory are printed
#
# Environment: GRPO_CONFIG (default configs/demo/grpo.yaml), GRPO_STEPS (20),
# OUT (runs/gpu-check), BIN (bin).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-bin}
OUT=${OUT:-runs/gpu-check}
GRPO_CONFIG=${GRPO_CONFIG:-configs/demo/grpo.yaml}
GRPO_STEPS=${GRPO_STEPS:-20}
TAGS=argrl_cuda
t0=$(date +%s)
failed=()
step() { printf '\n== [%3ds] %s\n' $(($(date +%s) - t0)) "$*"; }
fail() { failed+=("$1"); echo "FAILED: $1" >&2; }

step "GPU"
if ! nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv; then
	echo "gpu-check: nvidia-smi failed: no usable NVIDIA GPU" >&2
	exit 2
fi
mkdir -p "$OUT" "$BIN"
OUT=$(cd "$OUT" && pwd)
BIN=$(cd "$BIN" && pwd)

step "1/4 build"
timeout 240 go build -tags $TAGS -o "$BIN/train-cuda" ./cmd/train || fail "build train-cuda"
timeout 120 go build -o "$BIN/train" ./cmd/train || fail "build train"
timeout 240 go test -tags $TAGS -c -o "$OUT/cuda.test" ./kernels/cuda || fail "build the CUDA test binary"

step "2/4 conformance suite on the GPU (kerneltest.RunAll + extra shapes + GPU vs emulator)"
if [[ -x "$OUT/cuda.test" ]]; then
	log="$OUT/conformance.log"
	(cd kernels/cuda && timeout 180 "$OUT/cuda.test" -test.v -test.count=1 \
		-test.run 'TestConformanceCUDA|TestCUDAMatchesEmulator|TestPTX' >"$log" 2>&1)
	rc=$?
	grep -E '^\s*--- (PASS|FAIL)|^(PASS|FAIL)$|device:|pool:|_test.go:' "$log" | grep -vE '^\s{8,}--- PASS' || true
	((rc == 0)) || fail "conformance on the GPU (full log: $log)"
fi

step "3/4 kernel throughput at 7B shapes"
if [[ -x "$OUT/cuda.test" ]]; then
	(cd kernels/cuda && timeout 150 "$OUT/cuda.test" -test.run '^$' -test.bench . -test.benchtime 5x 2>&1) ||
		fail "benchmarks"
fi

step "4/4 ${GRPO_STEPS}-step GRPO on the demo model, CPU vs CUDA [needs train grpo + $GRPO_CONFIG]"
if [[ ! -f "$GRPO_CONFIG" ]]; then
	fail "GRPO comparison: $GRPO_CONFIG does not exist yet (issues 7/8)"
else
	common=(--config "$GRPO_CONFIG" --set "optim.max_steps=$GRPO_STEPS")
	rm -rf "$OUT/cpu" "$OUT/cuda"
	nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 >"$OUT/mem.log" 2>/dev/null &
	smi=$!
	timeout 270 "$BIN/train" grpo "${common[@]}" --set model.backend=cpu --set "run.dir=$OUT/cpu" ||
		fail "train grpo on the CPU"
	timeout 150 "$BIN/train-cuda" grpo "${common[@]}" --set model.backend=cuda --set "run.dir=$OUT/cuda" ||
		fail "train grpo on CUDA"
	kill "$smi" 2>/dev/null
	wait "$smi" 2>/dev/null
	go run ./cmd/gpucheck "$OUT/cpu" "$OUT/cuda" || fail "CPU and CUDA GRPO losses differ"
	echo "peak GPU memory used during the runs: $(sort -n "$OUT/mem.log" | tail -1) MiB"
fi

step "done"
if ((${#failed[@]})); then
	printf 'gpu-check: %d step(s) failed:\n' ${#failed[@]}
	printf '  - %s\n' "${failed[@]}"
	exit 1
fi
echo "gpu-check: all steps passed"
