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
#
# Qwen2.5-0.5B's shape (random bf16 weights, bench/mkmodel, generated into
# $ARGRL_CACHE/bench-qwen2.5-0.5b) runs GRPO's shape, B = 64 = 8 prompts ×
# G = 8, with N05 new tokens (default 32), REPS05 timed calls (default 1)
# on THREADS05 threads both sides (default nproc), in float32 and in bf16
# (model.compute bf16; PyTorch under bf16 autocast with bf16 weights, its
# fastest mode here). GFLOP/s counts the decode's matmul work, 2·(weights
# read per token) plus attention (4·D·Hq·context), and is also given as a
# share of the machine's multiply-add peak (bench/peak: f32 FMA for f32
# rows, bf16 dot products for bf16 rows).
set -eu
THREADS=${THREADS:-1}
REPS=${REPS:-3}
THREADS05=${THREADS05:-$(nproc)}
N05=${N05:-32}
REPS05=${REPS05:-1}
CACHE=${ARGRL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/argrl}
SMALL=$CACHE/bench-small
Q05=$CACHE/bench-qwen2.5-0.5b
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

# row MODEL B G P N [DTYPE THREADS REPS]: one Go run and one reference run,
# alternating.
row() {
	dt=${6:-f32}
	for t in ${7:-$THREADS}; do
		echo "bench/rollout: $1 B=$2 G=$3 P=$4 N=$5 $dt threads=$t ..." >&2
		GOMAXPROCS=$t "$tmp/bench" -model "$1" -batch "$2" -g "$3" -prompt "$4" -new "$5" -reps "${8:-$REPS}" -compute "$dt" |
			sed "s/^{/{\"side\":\"go\",\"threads\":$t,/" >>"$tmp/rows.jsonl"
		$PY bench/rollout/bench.py --model "$1" --batch "$2" --group "$3" --prompt "$4" --new "$5" --threads "$t" --reps "${8:-$REPS}" --dtype "$dt" |
			sed 's/^{/{"side":"torch",/' >>"$tmp/rows.jsonl"
	done
}
for b in 1 8 64; do row "$TINY" $b 1 32 64; done
row "$TINY" 64 8 32 64
for b in 1 8 64; do row "$SMALL" $b 1 32 64; done
row "$SMALL" 64 8 32 64
go run ./bench/mkmodel -shape qwen2.5-0.5b -out "$Q05" >&2
for dt in f32 bf16; do row "$Q05" 64 8 32 "$N05" "$dt" "$THREADS05" "$REPS05"; done
GOMAXPROCS=$THREADS05 go run ./bench/peak -threads "$THREADS05" >"$tmp/peak.json"

$PY - "$tmp/check.jsonl" "$tmp/rows.jsonl" "$tmp/peak.json" "$TINY" "$SMALL" "$Q05" <<'EOF'
import json, os, sys
for l in open(sys.argv[1]):
    c = json.loads(l)
    print("reference check: %d greedy tokens, max |log-prob(Go) - log-prob(torch)| = %.1e, greedy agreement %.0f%%"
          % (c["tokens"], c["max_abs_logprob_diff"], 100 * c["greedy_agree"]))
rows = [json.loads(l) for l in open(sys.argv[2])]
peak = json.load(open(sys.argv[3]))
dirs = {os.path.basename(os.path.normpath(d)): d for d in sys.argv[4:]}

def flops(model, P, N):
    """Matmul GFLOP per decoded token: 2·(linear + LM-head weights) + attention at the mean context."""
    c = json.load(open(os.path.join(dirs[model], "config.json")))
    C, F, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    Hq = c["num_attention_heads"]; Hkv = c.get("num_key_value_heads", Hq); D = c.get("head_dim") or C // Hq
    lin = 2 * C * Hq * D + 2 * C * Hkv * D + 3 * C * F
    return (2 * L * lin + 2 * C * V + L * 4 * D * Hq * (P + N / 2)) / 1e9

key = lambda r: (r["model"], r["batch"], r["g"], r["threads"], r.get("compute", r.get("dtype", "f32")))
go = {key(r): r for r in rows if r["side"] == "go"}
th = {key(r): r for r in rows if r["side"] == "torch"}
print()
print("| model | compute | threads | B | prompts×G | P | N | Go tok/s | PyTorch tok/s | Go/PyTorch | Go GFLOP/s (share of peak) | PyTorch GFLOP/s (share) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for k, g in go.items():
    t = th[k]
    name = {"qwen2-f32": "tiny (qwen2-f32)", "bench-small": "small (C512 L8)", "bench-qwen2.5-0.5b": "Qwen2.5-0.5B shape"}.get(g["model"], g["model"])
    f = flops(g["model"], g["prompt"], g["new"])
    kind = "bf16" if k[4] == "bf16" else "f32"
    pk = peak[kind + "_1"] if g["threads"] == 1 else peak[kind] * g["threads"] / peak["threads"]
    print("| %s | %s | %d | %d | %d×%d | %d | %d | %.0f | %.1f | %.2f× | %.0f (%.0f%%) | %.0f (%.0f%%) |" % (name, k[4], g["threads"], g["batch"], g["batch"] // g["g"], g["g"],
          g["prompt"], g["new"], g["tokens_per_s"], t["tokens_per_s"], g["tokens_per_s"] / t["tokens_per_s"],
          f * g["tokens_per_s"], 100 * f * g["tokens_per_s"] / pk, f * t["tokens_per_s"], 100 * f * t["tokens_per_s"] / pk))
print()
print("Go: %s, GOMAXPROCS = threads; PyTorch %s, torch.set_num_threads(threads). Peak (bench/peak, %d threads): f32 %.0f, bf16 %.0f GFLOP/s."
      % (rows[0]["backend"], next(r["torch"] for r in rows if r["side"] == "torch"), peak["threads"], peak["f32"], peak["bf16"]))
EOF
