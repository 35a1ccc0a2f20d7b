#!/bin/sh
# Rollout decode throughput (new tokens/s) of the Go engine next to a
# PyTorch reference doing the same generation with a KV cache, as ratios,
# in one run. From the repository root:
#
#   sh bench/rollout/bench.sh                  (make bench runs this)
#   THREADS="1 2" REPS=2 sh bench/rollout/bench.sh   (defaults: THREADS=1 REPS=3)
#
# Models: the tiny fixture testdata/models/qwen2-f32 (C=64, L=2, V=320) and
# the small model of testdata/bench/small (qwen2, C=512, L=8, V=8192, 28M
# parameters), generated once into $ARGRL_CACHE (default ~/.cache/argrl)
# by testdata/make_fixtures.py --small.
#
# Each row: B sequences, prompts of P tokens, N new tokens each (no stop
# ids: every sequence runs N steps), T=0.6, top-p 0.95, log-prob of each
# token; tokens/s = B·N / time of the whole call (prefill included), best
# of REPS calls after a warm-up call. Rows "64 = 8×8" are GRPO's shape: 8
# prompts × 8 samples; the Go engine prefills each prompt once and forks
# its cache, the reference repeats each prompt 8 times before its batched
# prefill (as Hugging Face generate(num_return_sequences=8) does). About
# 7 minutes on 2 busy cores.
#
# Threads: the Go side runs with GOMAXPROCS=t (the backend splits large
# matmuls over goroutines; with BENCH_TAGS=openblas, OpenBLAS runs single-threaded), the
# reference with torch.set_num_threads(t) (Debian python3-torch, OpenBLAS
# under it), for each t in THREADS (default 1: on a shared 2-core machine
# torch's OpenMP workers spin-wait and collapse when the cores are busy,
# which would flatter the Go side). Both sides use float32 weights and
# compute. Before timing, bench.py --check replays the Go
# engine's greedy generation on both models (same function: max log-prob
# difference and greedy agreement are printed).
set -eu
THREADS=${THREADS:-1}
REPS=${REPS:-3}
CACHE=${ARGRL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/argrl}
SMALL=$CACHE/bench-small
TINY=testdata/models/qwen2-f32
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$SMALL/model.safetensors" ]; then
	echo "bench/rollout: generating the small model into $SMALL ..." >&2
	$PY testdata/make_fixtures.py --small "$SMALL" >&2
fi
# The default (cgo-free) build is the one the train binary ships: its
# Go-assembly SGEMM is row-invariant and at least as fast as OpenBLAS here.
# BENCH_TAGS=openblas benchmarks the OpenBLAS build instead.
if [ -n "${BENCH_TAGS:-}" ]; then
	echo "bench/rollout: building the Go bench (-tags $BENCH_TAGS) ..." >&2
	CGO_LDFLAGS="${CGO_LDFLAGS:-} -lopenblas" go build -tags "$BENCH_TAGS" -o "$tmp/bench" ./bench/rollout
else
	echo "bench/rollout: building the Go bench (default build) ..." >&2
	go build -o "$tmp/bench" ./bench/rollout
fi

for m in "$TINY" "$SMALL"; do
	"$tmp/bench" -model "$m" -batch 2 -prompt 24 -new 24 -dump "$tmp/dump.json"
	$PY bench/rollout/bench.py --model "$m" --threads 1 --check "$tmp/dump.json" >>"$tmp/check.jsonl"
done

# row MODEL B G P N: one Go run and one reference run, alternating.
row() {
	for t in $THREADS; do
		echo "bench/rollout: $1 B=$2 G=$3 P=$4 N=$5 threads=$t ..." >&2
		GOMAXPROCS=$t "$tmp/bench" -model "$1" -batch "$2" -g "$3" -prompt "$4" -new "$5" -reps "$REPS" |
			sed "s/^{/{\"side\":\"go\",\"threads\":$t,/" >>"$tmp/rows.jsonl"
		$PY bench/rollout/bench.py --model "$1" --batch "$2" --group "$3" --prompt "$4" --new "$5" --threads "$t" --reps "$REPS" |
			sed 's/^{/{"side":"torch",/' >>"$tmp/rows.jsonl"
	done
}
for b in 1 8 64; do row "$TINY" $b 1 32 64; done
row "$TINY" 64 8 32 64
for b in 1 8 64; do row "$SMALL" $b 1 32 64; done
row "$SMALL" 64 8 32 64

$PY - "$tmp/check.jsonl" "$tmp/rows.jsonl" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    c = json.loads(l)
    print("reference check: %d greedy tokens, max |log-prob(Go) - log-prob(torch)| = %.1e, greedy agreement %.0f%%"
          % (c["tokens"], c["max_abs_logprob_diff"], 100 * c["greedy_agree"]))
rows = [json.loads(l) for l in open(sys.argv[2])]
go = {(r["model"], r["batch"], r["g"], r["threads"]): r for r in rows if r["side"] == "go"}
th = {(r["model"], r["batch"], r["g"], r["threads"]): r for r in rows if r["side"] == "torch"}
print()
print("| model | threads | B | prompts×G | P | N | Go tok/s | PyTorch tok/s | Go/PyTorch |")
print("|---|---|---|---|---|---|---|---|---|")
for k, g in go.items():
    t = th[k]
    name = {"qwen2-f32": "tiny (qwen2-f32)", "bench-small": "small (C512 L8)"}.get(g["model"], g["model"])
    print("| %s | %d | %d | %d×%d | %d | %d | %.0f | %.0f | %.2f× |" % (name, g["threads"], g["batch"], g["batch"] // g["g"], g["g"],
          g["prompt"], g["new"], g["tokens_per_s"], t["tokens_per_s"], g["tokens_per_s"] / t["tokens_per_s"]))
print()
print("Go: %s, GOMAXPROCS = threads; PyTorch %s, torch.set_num_threads(threads)." % (rows[0]["backend"], next(r["torch"] for r in rows if r["side"] == "torch")))
EOF
