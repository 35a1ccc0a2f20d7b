#!/bin/sh
# Sequence packing against today's padding (issue 34), in one run. Run from
# the repository root (`make bench` does):
#
#   sh bench/pack/bench.sh
#
# BenchmarkPacking (trainer/pack_bench_test.go) on Qwen2.5-0.5B's shape
# (random bf16 weights, bench/mkmodel, written to $TMPDIR at bench time):
# tokens/s of an SFT epoch (N records in steps of B from the Batcher,
# bucket_window 64: today's length-bucketed batches) and of a GRPO step's
# training phase (P prompts × G 8 rollouts in group order, micro-batches
# of 8 rows today), on log-normal lengths (median 450, σ 0.6, in
# [16, 2048]), padded (data.packing: false) against packed with
# optim.micro_tokens TOKENS. The padding fractions are counted from the
# micro-batches' graphs (no timing); the speed-up is the ratio of the
# median times of the two layouts, run alternately REPS times each in one
# process after a warm-up run each.
# MODEL=small uses testdata/bench/small (28M parameters) instead.
# N, B, P, TOKENS, REPS, THREADS, COMPUTE override 32, 8, 2, 8192, 2, nproc, bf16;
# PLAN_ONLY=1 prints the padding fractions only.
set -eu
N=${N:-32}
B=${B:-8}
P=${P:-2}
TOKENS=${TOKENS:-8192}
THREADS=${THREADS:-$(nproc)}
COMPUTE=${COMPUTE:-bf16}
PLAN_ONLY=${PLAN_ONLY:-0}
REPS=${REPS:-2}
case ${MODEL:-0.5b} in
small) DIR=$PWD/testdata/bench/small name="small (C 512, L 8, V 8192)" ;;
*)
	DIR=${TMPDIR:-/tmp}/argrl-qwen2.5-0.5b name="Qwen2.5-0.5B shape"
	go run ./bench/mkmodel -shape qwen2.5-0.5b -out "$DIR" >&2
	;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# bench WORK: prints "padded-tokens/s packed-tokens/s padded-pad-% packed-pad-% speedup" ("-" for times with PLAN_ONLY=1).
bench() {
	PACK_BENCH_MODEL=$DIR PACK_BENCH_WORK=$1 PACK_BENCH_PLAN_ONLY=$PLAN_ONLY PACK_BENCH_N=$N PACK_BENCH_B=$B \
		PACK_BENCH_P=$P PACK_BENCH_TOKENS=$TOKENS PACK_BENCH_REPS=$REPS PACK_BENCH_COMPUTE=$COMPUTE GOMAXPROCS=$THREADS \
		go test ./trainer/ -run '^$' -bench '^BenchmarkPacking$' -benchtime 1x -timeout 180m >"$tmp/go.txt" 2>&1 ||
		{ cat "$tmp/go.txt" >&2; exit 1; }
	awk '/^BenchmarkPacking/ { a = "-"; b = "-"; s = "-"; for (i = 2; i < NF; i++) { k = $(i+1);
		if (k == "padded-tokens/s") a = $i; if (k == "packed-tokens/s") b = $i; if (k == "padded-pad-%") pa = $i;
		if (k == "packed-pad-%") pb = $i; if (k == "speedup") s = $i } print a, b, pa, pb, s }' "$tmp/go.txt"
}

echo "Packing, $name, model.compute $COMPUTE, $THREADS threads; lengths log-normal (median 450, σ 0.6)"
echo "| workload | layout | padding | tokens/s | packed / padded |"
echo "|---|---|---|---|---|"
for work in sft grpo; do
	case $work in
	sft) what="SFT epoch, $N records, steps of $B" ;;
	grpo) what="GRPO training phase, $P × 8 rollouts" ;;
	esac
	echo "pack: $work, padded and packed alternately ..." >&2
	r=$(bench $work)
	echo "$r" | awk -v w="$what" -v k="$TOKENS" '{ printf "| %s | padded (today) | %.1f%% | %s | |\n", w, $3, $1;
		printf "| %s | packed, micro_tokens %s | %.1f%% | %s | %s |\n", w, k, $4, $2, ($5 == "-") ? "-" : sprintf("**%.2f×**", $5) }'
done
