#!/bin/sh
# The rollout engine (issue 33: paged KV cache, continuous batching with
# chunked prefill, packed bf16 weights) against the engine of commit
# f0bb46a (before it), both built here from the same bench program
# (bench/engine/main.go, which uses only the API both share), and against
# PyTorch bf16 autocast (bench/rollout/bench.py) on the same cores. From
# the repository root:
#
#   sh bench/engine/bench.sh                      (make bench runs this)
#   N=32 REPS=1 sh bench/engine/bench.sh           (shorter)
#   B256=0 sh bench/engine/bench.sh                (without the B = 256 row)
#
# Model: Qwen2.5-0.5B's shape with random bf16 weights (bench/mkmodel, in
# $ARGRL_CACHE/bench-qwen2.5-0.5b). Both engines with model.compute bf16,
# GOMAXPROCS = THREADS (default nproc), PyTorch torch.set_num_threads
# THREADS. Rows (prompts of P = 128 tokens, N = 128 new tokens):
#   - B = 1, one sequence;
#   - B = 64 = 8 prompts × G 8 (GRPO's shape) and B = 256 = 32 × 8, every
#     sample running N tokens (no stop ids);
#   - mixed lengths: 64 prompts × G 8 = 512 samples through Batch 64,
#     STOPS stop ids (default 40) ending samples at mixed lengths, capped
#     at N (the lengths' distribution is printed; it comes from the random
#     weights, not from a log-normal draw; PyTorch has no such row);
#   - `train generate --n 8 --batch 512` on 64 prompts: 512 sequences at
#     once, every one running N tokens, the whole command timed (loading
#     and packing included), with its peak RSS (/usr/bin/time -v).
# tokens/s = new tokens / time of the whole call (prefill included), best
# of REPS calls after a warm-up call.
set -eu
THREADS=${THREADS:-$(nproc)}
REPS=${REPS:-1}
N=${N:-128}
P=${P:-128}
STOPS=${STOPS:-40}
B256=${B256:-1}
OLD=${OLD:-f0bb46a}
CACHE=${ARGRL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/argrl}
Q05=$CACHE/bench-qwen2.5-0.5b
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/old" 2>/dev/null || true; rm -rf "$tmp"' EXIT

go run ./bench/mkmodel -shape qwen2.5-0.5b -out "$Q05" >&2
echo "bench/engine: building the engine of $OLD and today's ..." >&2
git worktree add --detach "$tmp/old" "$OLD" >/dev/null 2>&1
mkdir -p "$tmp/old/bench/engine"
cp bench/engine/main.go "$tmp/old/bench/engine/main.go"
(cd "$tmp/old" && go build -o "$tmp/engine-old" ./bench/engine)
go build -o "$tmp/engine-new" ./bench/engine

# row NAME PROMPTS G BATCH STOPS [torch]: old, new, and PyTorch when asked.
row() {
	for side in old new; do
		echo "bench/engine: $1 $side ..." >&2
		GOMAXPROCS=$THREADS "$tmp/engine-$side" -model "$Q05" -prompts "$2" -g "$3" -batch "$4" -prompt "$P" -new "$N" \
			-stops "$5" -compute bf16 -reps "$REPS" -label "$1/$side" >>"$tmp/rows.jsonl"
	done
	if [ "${6:-}" = torch ]; then
		echo "bench/engine: $1 torch ..." >&2
		$PY bench/rollout/bench.py --model "$Q05" --batch $(($2 * $3)) --group "$3" --prompt "$P" --new "$N" --threads "$THREADS" \
			--reps "$REPS" --dtype bf16 | sed "s|^{|{\"label\":\"$1/torch\",|" >>"$tmp/rows.jsonl"
	fi
}
row "B=1" 1 1 1 0 torch
row "B=64 (8x8)" 8 8 64 0 torch
if [ "$B256" != 0 ]; then
	row "B=256 (32x8)" 32 8 256 0 torch
fi
row "mixed (64x8, Batch 64)" 64 8 64 "$STOPS"
echo "bench/engine: train generate, 512 sequences at once ..." >&2
go build -o "$tmp/train" ./cmd/train
$PY - "$tmp/prompts.jsonl" "$P" <<'PYEOF'
import json, sys
with open(sys.argv[1], "w") as f:
    for b in range(64):
        f.write(json.dumps({"id": "p%d" % b, "token_ids": [4 + (b * 131 + t * 71) % (151936 - 4) for t in range(int(sys.argv[2]))]}) + "\n")
PYEOF
GOMAXPROCS=$THREADS /usr/bin/time -v "$tmp/train" generate --model "$Q05" --prompt-ids "$tmp/prompts.jsonl" --n 8 --batch 512 \
	--max-new-tokens "$N" --compute bf16 >"$tmp/gen.jsonl" 2>"$tmp/gen.err"
$PY - "$tmp/gen.jsonl" "$tmp/gen.err" "$P" "$N" <<'PYEOF' >>"$tmp/rows.jsonl"
import json, re, sys
n = sum(len(json.loads(l)["token_ids"]) for l in open(sys.argv[1]))
err = open(sys.argv[2]).read()
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) / 1024
m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
secs = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
print(json.dumps({"label": "train generate, 64x8 at once (Batch 512)/new", "prompt": int(sys.argv[3]), "new": int(sys.argv[4]),
                  "tokens": n, "seconds": secs, "tokens_per_s": n / secs, "len_mean": n / 512, "len_p50": 0, "len_p90": 0,
                  "len_max": 0, "peak_rss_mib": rss}))
PYEOF

$PY - "$tmp/rows.jsonl" "$THREADS" "$OLD" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {r["label"]: r for r in rows}
names = []
for r in rows:
    n = r["label"].rsplit("/", 1)[0]
    if n not in names:
        names.append(n)
print("| workload | new tok/s | %s tok/s | new / old | PyTorch bf16 tok/s | new / PyTorch | lengths mean / p50 / p90 / max | new peak RSS MiB |" % sys.argv[3])
print("|---|---|---|---|---|---|---|---|")
for n in names:
    new, old, th = by.get(n + "/new"), by.get(n + "/old"), by.get(n + "/torch")
    f = lambda r: "%.1f" % r["tokens_per_s"] if r else "—"
    ratio = lambda a, b: "%.2f×" % (a["tokens_per_s"] / b["tokens_per_s"]) if a and b else "—"
    print("| %s | %s | %s | %s | %s | %s | %.1f / %d / %d / %d | %.0f |" % (n, f(new), f(old), ratio(new, old), f(th), ratio(new, th),
          new["len_mean"], new["len_p50"], new["len_p90"], new["len_max"], new["peak_rss_mib"]))
print()
print("Qwen2.5-0.5B shape, random bf16 weights, model.compute bf16 / torch bf16 autocast, %s threads; P = %d, N = %d." %
      (sys.argv[2], rows[0]["prompt"], rows[0]["new"]))
PYEOF
