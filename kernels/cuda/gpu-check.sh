#!/usr/bin/env bash
# gpu-check.sh (make gpu-check): the prepared check for the first machine
# with an NVIDIA GPU (compute capability >= 8.0), made to fit one call of
# the lent machine (docs/gpu.md): at most BUDGET seconds (420) in all, each
# step under its own timeout (cut to what is left), one summary table
# printed last, a partial one when time or a signal ends the run.
#
# Results, three files under 1 MiB each, in $OUT (runs/gpu-check when OUT
# is unset): gpu-check.json (every row), gpu-check.log (this script's
# output, cut to 1 MiB), summary.txt (the table). Everything big (the 7B
# checkpoint, run folders, step logs) goes to a temporary folder on local
# disk (WORK, default under $TMPDIR or /tmp), removed at the end unless
# KEEP_WORK=1.
#
#   0. the GPU (nvidia-smi) and what bin/train-cuda opened (train gpu-info)
#   1. build bin/train-cuda, bin/gpucheck (-tags argrl_cuda) and the CUDA
#      test binary, unless PREBUILT=1 (a machine without Go: make
#      gpu-check-build writes gpu-bundle/, which holds this script, the
#      binaries, the PTX, the tiny configs and test data)
#   2. the ceilings: device-to-device copy GB/s, cuBLAS bf16 GEMM TFLOP/s
#   3. the conformance suite on the GPU, f32 and bf16 (TestConformanceCUDA),
#      the GPU against the emulator, the PTX and launch-bounds checks
#   4. SFT, GRPO and PPO on the tiny configs: losses on cpu against cuda
#      and cuda-bf16, step by step
#   5. a Qwen2.5-7B-shaped checkpoint of random bf16 weights (15 GB, WORK)
#   6. on it, with cuda-bf16: load time, decode tokens/s at batch 64 and
#      256 with a 1,024-token context, decode eager against step graphs
#      (ARGRL_CUDA_GRAPHS=0 against the default) at batch 8 and 64, LoRA SFT tokens/s and MFU at T =
#      1,024 and 1,536, one GRPO step by phase with max |ρ − 1| at the
#      first mini-batch and the peak device memory
#   7. activation memory per token and layer against the plan (doc.go)
#   8. with two GPUs or more: the NCCL data-parallel check (skipped on one)
#
# A "predicted" column comes from `train plan --json` (docs/gpu.md) when the
# binary has that command; otherwise it shows "—".
#
# --dry-run runs every step on the emulator ("cuda-emu", "cuda-emu-bf16")
# at tiny shapes, without a GPU, and prints the same rows: the script
# itself is tested that way (cmd/gpucheck TestGPUCheckDryRun, make test).
#
# Needs the NVIDIA driver and cuBLAS (found as kernels/cuda/cudalib says:
# the loader's path, /usr/local/nvidia, CUDA toolkits, python3's nvidia pip
# wheels; ARGRL_LIBCUBLAS=path overrides), g++ (the emulator of the
# comparison), and Go unless PREBUILT=1.
# Environment: OUT, BIN (bin), BUDGET (420; 1200 for --dry-run), PREBUILT,
# WORK, KEEP_WORK.
set -uo pipefail
cd "$(dirname "$0")/../.."
dry=0
[[ "${1:-}" == "--dry-run" ]] && dry=1
BIN=${BIN:-bin}
OUT=${OUT:-runs/gpu-check}
# the bundle (no Go on the machine): the binaries come gzipped in bin/
for z in "$BIN"/*.gz; do
	[[ -f "$z" ]] || continue
	gunzip -f "$z" && chmod +x "${z%.gz}" || echo "gpu-check: cannot unpack $z" >&2
done
[[ -z "${PREBUILT:-}" ]] && ! command -v go >/dev/null && [[ -x "$BIN/gpucheck" ]] && PREBUILT=1
BUDGET=${BUDGET:-$((dry ? 1200 : 420))} # the dry run is not bound by the lent machine's limit
t0=$SECONDS
mkdir -p "$OUT" "$BIN" || exit 2
OUT=$(cd "$OUT" && pwd)
BIN=$(cd "$BIN" && pwd)
ROOT=$(pwd)
rm -f "$OUT"/gpu-check.json "$OUT"/gpu-check.log "$OUT"/summary.txt
if [[ -n "${WORK:-}" ]]; then
	mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
else
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/argrl-gpu-check.XXXXXX")
fi
ROWS=$WORK/rows
mkdir -p "$ROWS"
LOG=$WORK/gpu-check.log
G="$BIN/gpucheck"

# SCALE multiplies every step's timeout: the emulator on a busy CPU is
# slower than the GPU steps the timeouts are sized for (the budget still
# bounds the whole). RLSET shortens the dry run's tiny RL rollouts.
if ((dry)); then
	SCALE=4 RLSET="--set rollout.max_new_tokens=8"
	CMP="cuda-emu cuda-emu-bf16" BENCH=cuda-emu-bf16 SHAPE=tiny STEPS=1
	CEIL=(-copy-mib 8 -gemm 128 -reps 2)
	DECODE=(-batch 4,8 -prompt 24 -new 8 -graphs 2,4 -graph-prompt 12 -graph-new 6) SFT=(-b 2 -t 32,48 -steps 2 -lora 8)
	GRPO=(-g 4 -new 8 -prompts 1 -lora 8) MEMB=cuda-emu,cuda-emu-bf16
	CONF='TestEmulatedKernels/conformance/(forward|bf16)$|TestPTX|TestLaunchBounds|TestCeilings'
else
	SCALE=1 RLSET=""
	CMP="cuda cuda-bf16" BENCH=cuda-bf16 SHAPE=7b STEPS=3
	CEIL=(-copy-mib 4096 -gemm 8192 -reps 10)
	DECODE=(-batch 64,256 -prompt 896 -new 128 -graphs 8,64 -graph-prompt 128 -graph-new 64) SFT=(-b 4 -t 1024,1536 -steps 3 -lora 32)
	GRPO=(-g 8 -new 512 -prompts 2 -lora 32) MEMB=cuda,cuda-bf16
	CONF='TestConformanceCUDA|TestCUDAMatchesEmulator|TestPTX|TestLaunchBounds|TestDriverReport|TestAutoWithoutGPU'
fi
n=0

say() { printf '\n== [%3ds] %s\n' $((SECONDS - t0)) "$*"; }
left() { echo $((BUDGET - (SECONDS - t0) - 10)); }
# run NAME LIMIT CMD...: CMD under min(LIMIT, what is left of the budget,
# less 10 s for the table); sets why to what went wrong ("" if nothing).
run() {
	local name=$1 limit=$(($2 * SCALE))
	shift 2
	local l
	l=$(left)
	((l < limit)) && limit=$l
	say "$name (timeout ${limit}s)"
	why=""
	if ((limit <= 0)); then
		why="not run: the ${BUDGET}s budget is spent"
		return
	fi
	timeout -k 5 "$limit" "$@"
	local rc=$?
	((rc == 124 || rc == 137)) && why="timed out after ${limit}s (log above)"
	((rc != 0 && rc != 124 && rc != 137)) && why="exit status $rc (log above)"
}
# next NAME: f becomes the next step's row file (in table order)
next() {
	n=$((n + 1))
	f=$(printf '%s/%02d-%s.json' "$ROWS" "$n" "$1")
}
# settle NAME: a FAIL row (or "not run") for a step that wrote none
settle() {
	[[ -s "$f" ]] && return
	local st=FAIL
	[[ "$why" == "not run:"* ]] && st="not run"
	"$G" row -out "$f" -check "$1" -status "$st" -detail "${why:-no result (log above)}"
}

# finish: the table (partial when time ran out), the three result files,
# WORK removed; called once, at the end or on a signal.
finished=0
finish() {
	((finished)) && return
	finished=1
	local plan=()
	[[ -s "$WORK/plan.json" ]] && plan=(-plan "$WORK/plan.json")
	say "summary ($((SECONDS - t0)) s of the ${BUDGET}s budget; results in $OUT)"
	"$G" table -json "$OUT/gpu-check.json" "${plan[@]}" "$ROWS"/[0-9]*.json >"$OUT/summary.txt" 2>&1
	status=$?
	cat "$OUT/summary.txt"
	# the log, cut to 1 MiB (its head and tail), plus the table
	{
		if (($(stat -c %s "$LOG" 2>/dev/null || echo 0) > 1000000)); then
			head -c 500000 "$LOG"
			printf '\n[... cut to 1 MiB ...]\n'
			tail -c 450000 "$LOG"
		else
			cat "$LOG"
		fi
		cat "$OUT/summary.txt"
	} >"$OUT/gpu-check.log" 2>/dev/null
	[[ "${KEEP_WORK:-}" == 1 ]] || rm -rf "$WORK"
}
trap 'echo "gpu-check: interrupted; the table so far:"; finish; exit 143' TERM INT

# main: every step; its output goes to the screen and to $LOG
main() {
	say "GPU"
	if ((dry)); then
		echo "dry run: the emulator stands in for the GPU (backends ${CMP// /, })"
	elif ! nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv; then
		echo "gpu-check: nvidia-smi failed: no usable NVIDIA GPU (try --dry-run)" >&2
	fi
	ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
	((dry)) && ngpu=0

	if [[ "${PREBUILT:-}" != 1 ]]; then
		say "1 build"
		timeout 300 go build -tags argrl_cuda -o "$BIN/gpucheck" ./cmd/gpucheck || echo "FAILED: build gpucheck" >&2
		timeout 300 go build -tags argrl_cuda -o "$BIN/train-cuda" ./cmd/train || echo "FAILED: build train-cuda" >&2
		timeout 300 go test -tags argrl_cuda -c -o "$BIN/cuda.test" ./kernels/cuda || echo "FAILED: build the CUDA test binary" >&2
	fi
	for b in gpucheck train-cuda cuda.test; do
		if [[ ! -x "$BIN/$b" ]]; then
			echo "gpu-check: $BIN/$b is missing (build it, or make gpu-check-build elsewhere and set PREBUILT=1)" >&2
			return 2
		fi
	done

	next driver
	say "0 the binary's driver, cuBLAS and GPU (train-cuda gpu-info)"
	local info rc
	info=$(timeout 60 "$BIN/train-cuda" gpu-info 2>&1)
	rc=$?
	grep -vE '^cu[A-Za-z0-9_]+ ' <<<"$info" # the entry-point list is long: keep the summary lines
	local libs drv
	libs=$(grep -E '^loaded ' <<<"$info" | sed 's/^loaded //' | paste -sd ';' -)
	drv=$(head -1 <<<"$info")
	if ((rc == 0)); then
		"$G" row -out "$f" -check "driver and device" -status ok -value "$(grep '^device:' <<<"$info" | cut -c9-)" -detail "$drv; $libs"
	elif ((dry)); then
		"$G" row -out "$f" -check "driver and device" -status skipped -value "no GPU (dry run)" -detail "$(tail -1 <<<"$info")"
	else
		"$G" row -out "$f" -check "driver and device" -status FAIL -detail "$(tail -1 <<<"$info")"
	fi

	next ceilings
	run "2 ceilings: copy and bf16 GEMM" 60 "$G" ceilings -backend "$BENCH" "${CEIL[@]}" -out "$f" -save "$WORK/ceilings.json"
	settle "ceilings"

	next conformance
	local clog=$WORK/conformance.log
	run "3 conformance suite (f32, bf16) and GPU vs emulator" 150 bash -c "cd kernels/cuda && ARGRL_REQUIRE_GPU=$((1 - dry)) '$BIN/cuda.test' -test.v -test.count=1 -test.run '$CONF' >'$clog' 2>&1"
	grep -E '^\s*--- (PASS|FAIL|SKIP)|^(PASS|FAIL)$|device:|pool:|_test.go:' "$clog" | grep -vE '^\s{8,}--- PASS' | head -60
	local pass fail
	pass=$(grep -cE -- '--- PASS' "$clog")
	fail=$(grep -cE -- '--- FAIL' "$clog")
	"$G" row -out "$f" -check "conformance (f32, bf16) and GPU vs emulator" -status "$([[ -z "$why" ]] && echo ok || echo FAIL)" \
		-value "$pass passed, $fail failed" -detail "${why:+$why; }tests ${CONF//|/, }"

	local algo mode
	for algo in sft grpo ppo; do
		for mode in $CMP; do
			next "cmp-$algo-$mode"
			local common="--config configs/$algo-tiny.yaml --set optim.max_steps=$STEPS --set data.val= --set checkpoint.best_metric=loss"
			# RL samples greedily here: the bf16 modes attend on bf16 q, k, v,
			# which at temperature 0.6 changes which tokens are drawn (the
			# tiny PPO step's loss then differs by 4%, from the samples, not
			# the arithmetic); greedy picks keep the rollouts the same.
			[[ $algo != sft ]] && common+=" $RLSET --set rollout.temperature=0"
			# The reference is the CPU in float32 (model.compute: auto would
			# take bf16 products on a CPU with AVX512-BF16).
			local a=$WORK/cmp-$algo-cpu b=$WORK/cmp-$algo-$mode tol=0.01
			[[ $mode == *bf16* ]] && tol=0.05
			run "4 $algo-tiny, $STEPS steps, cpu vs $mode" 45 bash -c "set -o pipefail; rm -rf '$b' &&
				{ [[ -s '$a/metrics.jsonl' ]] || '$BIN/train-cuda' $algo $common --set model.backend=cpu --set model.compute=f32 --set run.dir='$a' 2>&1 | tail -2; } &&
				'$BIN/train-cuda' $algo $common --set model.backend=$mode --set run.dir='$b' 2>&1 | tail -3 &&
				'$G' compare -tol $tol -name '$algo-tiny: cpu vs $mode' -out '$f' '$a' '$b'"
			settle "$algo-tiny: cpu vs $mode"
		done
	done

	local M=$WORK/model-$SHAPE
	next model
	run "5 $SHAPE checkpoint (random bf16, in $WORK)" 150 "$G" model -shape "$SHAPE" -out "$f" "$M"
	settle "checkpoint $SHAPE"

	# the performance model's predictions for the same shapes, if the
	# binary has `train plan` (docs/gpu.md)
	if timeout 30 "$BIN/train-cuda" plan --json --model "$M" --gpu h200 >"$WORK/plan.json" 2>"$WORK/plan.err"; then
		echo "predictions: train plan --json ($(wc -c <"$WORK/plan.json") bytes)"
	else
		echo "predictions: none (train plan --json: $(head -1 "$WORK/plan.err"))"
		rm -f "$WORK/plan.json"
	fi

	next decode
	run "6a load, decode, eager vs graphs" 180 "$G" decode -model "$M" -backend "$BENCH" "${DECODE[@]}" -ceilings "$WORK/ceilings.json" -out "$f"
	settle "load and decode"
	next sft
	run "6b LoRA SFT" 120 "$G" sft -model "$M" -backend "$BENCH" "${SFT[@]}" -ceilings "$WORK/ceilings.json" -out "$f"
	settle "LoRA SFT"
	next grpo
	run "6c GRPO step" 150 "$G" grpo -model "$M" -backend "$BENCH" -run "$WORK/grpo-run" "${GRPO[@]}" -out "$f"
	settle "GRPO step"
	rm -rf "$M" # 15 GB: free the disk before the rest

	next memory
	run "7 activation memory per layer" 90 bash -c "rm -rf '$WORK/mem-a' '$WORK/mem-b' &&
		'$G' model -shape tiny '$WORK/mem-a' && '$G' model -shape tiny6 '$WORK/mem-b' &&
		'$G' memory -model '$WORK/mem-a,$WORK/mem-b' -backend $MEMB -out '$f'"
	settle "activation memory"

	next data-parallel
	if ((ngpu < 2)); then
		"$G" row -out "$f" -check "data-parallel NCCL (2+ GPUs)" -status skipped -value "$ngpu GPU(s)" \
			-detail "NCCL needs two GPUs (one rank per GPU); not run"
	elif [[ -x "$BIN/ncclcheck" ]] && command -v mpirun >/dev/null; then
		run "8 NCCL, 2 ranks" 120 timeout 110 mpirun --allow-run-as-root -np 2 "$BIN/ncclcheck"
		"$G" row -out "$f" -check "data-parallel NCCL (2+ GPUs)" -status "$([[ -z "$why" ]] && echo ok || echo FAIL)" \
			-value "$ngpu GPUs" -detail "${why:-2 ranks: all-reduce and broadcast of the CUDA backend's buffers match MPI's}"
	elif [[ "${PREBUILT:-}" != 1 ]]; then
		run "8 NCCL (dist/nccl-check.sh)" 240 env BIN="$BIN" dist/nccl-check.sh
		"$G" row -out "$f" -check "data-parallel NCCL (2+ GPUs)" -status "$([[ -z "$why" ]] && echo ok || echo FAIL)" \
			-value "$ngpu GPUs" -detail "${why:-dist/nccl-check.sh: 2 ranks}"
	else
		"$G" row -out "$f" -check "data-parallel NCCL (2+ GPUs)" -status "not run" -value "$ngpu GPUs" \
			-detail "needs bin/ncclcheck (make build with -tags argrl_cuda,argrl_mpi) and OpenMPI's mpirun"
	fi
}

main 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
finish
((rc != 0)) && exit "$rc"
exit "$status"
