#!/usr/bin/env bash
# gpu-check.sh (make gpu-check): the prepared check for the first machine
# with an NVIDIA GPU (compute capability >= 8.0). One command; at most
# BUDGET seconds (default 600: 10 minutes) in all, and every step has its
# own timeout, so one failure does not hide the rest; one summary table
# at the end (cmd/gpucheck table), also written to $OUT/summary.txt.
#
#   0. the GPU (nvidia-smi) and what bin/train-cuda resolved (train gpu-info)
#   1. build bin/train-cuda, bin/gpucheck (-tags argrl_cuda) and the CUDA
#      test binary, unless PREBUILT=1 (a machine without Go: `make
#      gpu-check-build` elsewhere writes them, stripped, and
#      bin/gpu-check.tar.gz, ≈ 26 MB, to bring and unpack into bin/)
#   2. the conformance suite on the GPU (kerneltest.RunAll, the extra
#      shapes), the GPU-vs-emulator kernel comparison, the PTX checks
#   3. SFT and PPO on the tiny configs, 3 steps each, on the CPU and on the
#      GPU ("cuda", the f32 path): the losses compared step by step
#   4. a Qwen2.5-7B-shaped checkpoint with random bf16 weights, written
#      here (15 GB; nothing is downloaded)
#   5. on it, with "cuda-bf16" (tensor cores, bf16 activations): decode
#      tokens/s at batch 64 and 256; LoRA SFT tokens/s and MFU; one GRPO
#      step (G = 8, 512-token responses) split by phase; the pool's peak
#      and the device's memory after each
#   6. activation memory per token and layer (two depths of a miniature of
#      the 7B shape) against the plan in kernels/cuda/doc.go
#   7. with two GPUs or more: the data-parallel check (a later issue: its
#      row says "not built yet")
#
# --dry-run runs every step on the emulator ("cuda-emu", "cuda-emu-bf16")
# at tiny shapes, without a GPU: the script itself is tested that way
# (cmd/gpucheck TestGPUCheckDryRun, in make test).
#
# Needs the NVIDIA driver, cuBLAS (libcublas.so.13, .12 or .11; or
# ARGRL_LIBCUBLAS=path), g++ (the emulator of the comparison), and Go
# unless PREBUILT=1; nvcc is not needed (the PTX is committed).
# Environment: OUT (runs/gpu-check), BIN (bin), BUDGET (600), PREBUILT.
set -uo pipefail
cd "$(dirname "$0")/../.."
dry=0
[[ "${1:-}" == "--dry-run" ]] && dry=1
BIN=${BIN:-bin}
OUT=${OUT:-runs/gpu-check}
BUDGET=${BUDGET:-600}
t0=$SECONDS
mkdir -p "$OUT" "$BIN"
OUT=$(cd "$OUT" && pwd)
BIN=$(cd "$BIN" && pwd)
rm -f "$OUT"/[0-9]*.json

if ((dry)); then
	CMP=cuda-emu BENCH=cuda-emu-bf16 SHAPE=tiny STEPS=2
	DECODE=(-batch 4,8 -prompt 16 -new 8) SFT=(-b 2 -t 32 -steps 2 -lora 8)
	GRPO=(-g 4 -new 8 -prompts 1 -lora 8) MEMB=cuda-emu,cuda-emu-bf16
	CONF='TestEmulatedKernels/conformance/forward$|TestPTX'
else
	CMP=cuda BENCH=cuda-bf16 SHAPE=7b STEPS=3
	DECODE=(-batch 64,256 -prompt 128 -new 128) SFT=(-b 4 -t 1024 -steps 3 -lora 32)
	GRPO=(-g 8 -new 512 -prompts 2 -lora 32) MEMB=cuda,cuda-bf16
	CONF='TestConformanceCUDA|TestCUDAMatchesEmulator|TestPTX|TestDriverReport'
fi
G="$BIN/gpucheck"
n=0

say() { printf '\n== [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
# run NAME LIMIT CMD...: CMD under min(LIMIT, what is left of the budget,
# less 15 s for the table); sets why to what went wrong ("" if nothing).
run() {
	local name=$1 limit=$2
	shift 2
	local l=$((BUDGET - (SECONDS - t0) - 15))
	((l < limit)) && limit=$l
	say "$name (timeout ${limit}s)"
	why=""
	if ((limit <= 0)); then
		why="not run: the ${BUDGET}s budget is spent"
		return
	fi
	timeout "$limit" "$@"
	local rc=$?
	((rc == 124)) && why="timed out after ${limit}s (log above)"
	((rc != 0 && rc != 124)) && why="exit status $rc (log above)"
}
# settle FILE NAME: a FAIL row for a step that wrote no result
settle() {
	[[ -s "$1" ]] || "$G" row -out "$1" -check "$2" -status FAIL -detail "${why:-no result (log above)}"
}
# next NAME: f becomes the next step's result file (in table order)
next() {
	n=$((n + 1))
	f=$(printf '%s/%02d-%s.json' "$OUT" "$n" "$1")
}

say "GPU"
if ((dry)); then
	echo "dry run: the emulator stands in for the GPU (backends $CMP, $BENCH)"
else
	if ! nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv; then
		echo "gpu-check: nvidia-smi failed: no usable NVIDIA GPU (try --dry-run)" >&2
		exit 2
	fi
	# cuBLAS outside the loader's path (a CUDA toolkit under /usr/local,
	# or the nvidia-cublas Python wheel): point ARGRL_LIBCUBLAS at it, and
	# the loader at its directory for libcublasLt
	if [[ -z "${ARGRL_LIBCUBLAS:-}" ]] && ! ldconfig -p 2>/dev/null | grep -qE 'libcublas\.so\.1[123] '; then
		lib=$(ls /usr/local/cuda*/lib64/libcublas.so.1[321] /usr/local/cuda*/targets/*/lib/libcublas.so.1[321] \
			"$(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__))' 2>/dev/null)"/lib/libcublas.so.1[321] \
			2>/dev/null | head -1)
		if [[ -n "$lib" ]]; then
			export ARGRL_LIBCUBLAS=$lib LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
			echo "cuBLAS: $lib"
		fi
	fi
fi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)

if [[ "${PREBUILT:-}" != 1 ]]; then
	say "1 build"
	timeout 300 go build -tags argrl_cuda -o "$BIN/gpucheck" ./cmd/gpucheck || echo "FAILED: build gpucheck" >&2
	timeout 300 go build -tags argrl_cuda -o "$BIN/train-cuda" ./cmd/train || echo "FAILED: build train-cuda" >&2
	timeout 300 go test -tags argrl_cuda -c -o "$BIN/cuda.test" ./kernels/cuda || echo "FAILED: build the CUDA test binary" >&2
fi
for b in gpucheck train-cuda cuda.test; do
	if [[ ! -x "$BIN/$b" ]]; then
		echo "gpu-check: $BIN/$b is missing (build it, or make gpu-check-build elsewhere and set PREBUILT=1)" >&2
		exit 2
	fi
done

next driver
say "0 the binary's driver and cuBLAS (train-cuda gpu-info)"
info=$(timeout 60 "$BIN/train-cuda" gpu-info 2>&1)
rc=$?
echo "$info" | grep -v '^cu' # the entry-point list is long: keep the summary lines
drv=$(head -1 <<<"$info")
if ((rc == 0)); then
	"$G" row -out "$f" -check "driver and device" -status ok -value "$(grep '^device:' <<<"$info" | cut -c9-)" -detail "$drv"
elif ((dry)); then
	"$G" row -out "$f" -check "driver and device" -status skipped -value "no GPU (dry run)" -detail "$drv; $(tail -1 <<<"$info")"
else
	"$G" row -out "$f" -check "driver and device" -status FAIL -detail "$(tail -1 <<<"$info")"
fi

next conformance
log=$OUT/conformance.log
run "2 conformance suite and GPU vs emulator" 240 bash -c "cd kernels/cuda && ARGRL_REQUIRE_GPU=$((1 - dry)) '$BIN/cuda.test' -test.v -test.count=1 -test.run '$CONF' >'$log' 2>&1"
grep -E '^\s*--- (PASS|FAIL|SKIP)|^(PASS|FAIL)$|device:|pool:|_test.go:' "$log" | grep -vE '^\s{8,}--- PASS' | head -60
pass=$(grep -cE -- '--- PASS' "$log")
fail=$(grep -cE -- '--- FAIL' "$log")
"$G" row -out "$f" -check "conformance and GPU vs emulator" -status "$([[ -z "$why" ]] && echo ok || echo FAIL)" \
	-value "$pass passed, $fail failed" -detail "${why:+$why; }tests ${CONF//|/, }; log $log"

for algo in sft ppo; do
	next "cmp-$algo"
	common="--config configs/$algo-tiny.yaml --set optim.max_steps=$STEPS --set data.val= --set checkpoint.best_metric=loss"
	a=$OUT/cmp-$algo-cpu b=$OUT/cmp-$algo-$CMP
	run "3 $algo-tiny, $STEPS steps, cpu vs $CMP" 150 bash -c "set -o pipefail; rm -rf '$a' '$b' &&
		'$BIN/train-cuda' $algo $common --set model.backend=cpu --set run.dir='$a' 2>&1 | tail -2 &&
		'$BIN/train-cuda' $algo $common --set model.backend=$CMP --set run.dir='$b' 2>&1 | tail -3 &&
		'$G' compare -tol 0.01 -name '$algo-tiny: cpu vs $CMP' -out '$f' '$a' '$b'"
	settle "$f" "$algo-tiny: cpu vs $CMP"
done

M=$OUT/model-$SHAPE
next model
run "4 $SHAPE checkpoint" 180 bash -c "rm -rf '$M' && '$G' model -shape $SHAPE -out '$f' '$M'"
settle "$f" "checkpoint $SHAPE"

next decode
run "5a decode" 180 "$G" decode -model "$M" -backend "$BENCH" "${DECODE[@]}" -out "$f"
settle "$f" "decode"
next sft
run "5b LoRA SFT" 180 "$G" sft -model "$M" -backend "$BENCH" "${SFT[@]}" -out "$f"
settle "$f" "LoRA SFT"
next grpo
run "5c GRPO step" 300 bash -c "rm -rf '$OUT/grpo-run' && '$G' grpo -model '$M' -backend $BENCH -run '$OUT/grpo-run' ${GRPO[*]} -out '$f'"
settle "$f" "GRPO step"

next memory
run "6 activation memory per layer" 120 bash -c "rm -rf '$OUT/mem-a' '$OUT/mem-b' &&
	'$G' model -shape tiny '$OUT/mem-a' && '$G' model -shape tiny6 '$OUT/mem-b' &&
	'$G' memory -model '$OUT/mem-a,$OUT/mem-b' -backend $MEMB -out '$f'"
settle "$f" "activation memory"

next data-parallel
if ((ngpu >= 2)); then
	"$G" row -out "$f" -check "data-parallel (2+ GPUs)" -status "not built yet" -value "$ngpu GPUs" \
		-detail "the data-parallel issue's check; no data-parallel training exists yet"
else
	"$G" row -out "$f" -check "data-parallel (2+ GPUs)" -status skipped -value "$ngpu GPU(s)" \
		-detail "needs two GPUs; not built yet either (the data-parallel issue)"
fi

say "summary ($((SECONDS - t0)) s of the ${BUDGET}s budget)"
"$G" table "$OUT"/[0-9]*.json | tee "$OUT/summary.txt"
exit "${PIPESTATUS[0]}"
