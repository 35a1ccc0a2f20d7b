#!/bin/sh
# Activation recompute (model.recompute: layer) at Qwen2.5-0.5B's shape
# (random bf16 weights, bench/mkmodel): the activation memory of the SFT
# step's plan (graph.Stats.ActivationBytes: intermediates kept for the
# backward pass, and the LM head's chunk scratch) with and without
# recompute at B=4, T=1024, and the step-time cost of recomputing, as
# ratios. Run from the repository root (`make bench` does):
#
#   sh bench/sft/recompute.sh
#
# The step is BenchmarkSFTStep (trainer/sft_bench_test.go) with
# model.compute COMPUTE (default bf16) on THREADS threads (default nproc).
# At T=1024 the plan without recompute needs more memory than a shared
# 24 GB machine spares, so its size is read from the compiled plan
# (SFT_BENCH_PLAN_ONLY) while the recomputing step runs; the time cost is
# measured on both at T=TCOST (default 256), side by side, the median of
# STEPS timed steps (default 3) after a warm-up step.
set -eu
THREADS=${THREADS:-$(nproc)}
COMPUTE=${COMPUTE:-bf16}
TCOST=${TCOST:-256}
STEPS=${STEPS:-3}
MODEL=${TMPDIR:-/tmp}/argrl-qwen2.5-0.5b
go run ./bench/mkmodel -shape qwen2.5-0.5b -out "$MODEL" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bench RECOMPUTE T STEPS [PLAN_ONLY]: prints "activation-MB tokens/s".
bench() {
	SFT_BENCH_MODEL=$MODEL SFT_BENCH_COMPUTE=$COMPUTE SFT_BENCH_RECOMPUTE=$1 SFT_BENCH_B=4 SFT_BENCH_T=$2 \
		SFT_BENCH_PLAN_ONLY=${4:-0} GOMAXPROCS=$THREADS \
		go test ./trainer/ -run '^$' -bench '^BenchmarkSFTStep$' -benchtime "${3}x" >"$tmp/go.txt" 2>&1 ||
		{ cat "$tmp/go.txt" >&2; exit 1; }
	awk '/^BenchmarkSFTStep/ { t = "-"; for (i = 2; i < NF; i++) { if ($(i+1) == "tokens/s") t = $i; if ($(i+1) == "activation-MB") m = $i } print m, t }' "$tmp/go.txt"
}
echo "recompute: T=1024 plan without recompute ..." >&2
n1024=$(bench none 1024 1 1)
echo "recompute: T=1024 with recompute ..." >&2
l1024=$(bench layer 1024 1)
echo "recompute: T=$TCOST without and with recompute ..." >&2
nt=$(bench none "$TCOST" "$STEPS")
lt=$(bench layer "$TCOST" "$STEPS")
echo
echo "Activation recompute, Qwen2.5-0.5B shape, B=4, LoRA r=32 on all linears, model.compute $COMPUTE, $THREADS threads"
echo "| model.recompute | activations at T=1024 | step at T=1024 | activations at T=$TCOST | step at T=$TCOST |"
echo "|---|---|---|---|---|"
echo "$n1024 $nt" | awk '{ printf "| none | %.0f MB (plan; not run) | — | %.0f MB | %.2f s |\n", $1, $3, 4 * '"$TCOST"' / $4 }'
echo "$l1024 $lt" | awk '{ printf "| layer | %.0f MB | %.2f s | %.0f MB | %.2f s |\n", $1, 4096 / $2, $3, 4 * '"$TCOST"' / $4 }'
echo "$n1024 $l1024 $nt $lt" | awk '{ printf "layer / none: activation memory at T=1024 %.3f (target ≤ 0.25); step time at T='"$TCOST"' %.2f× (recompute costs %+.0f%%)\n", $3 / $1, $6 / $8, 100 * ($6 / $8 - 1) }'
