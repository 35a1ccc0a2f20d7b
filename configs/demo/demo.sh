#!/usr/bin/env bash
# make demo: paper 000 in miniature on a CPU, with nothing downloaded but Go
# modules. Every number printed comes from training and evaluating here.
#
#   1. build bin/train (pure-Go CPU backend);
#   2. regenerate the benchmark (train data synth, seeded: same files every time);
#   3. evaluate the committed base model (configs/demo/base-model);
#   4. LoRA SFT, 1 epoch, on the Spanish training split (configs/demo/sft.yaml);
#   5. GRPO with RM-3 and β = 3 from the SFT adapter (configs/demo/grpo.yaml);
#   6. evaluate SFT and GRPO like the base, on es, it, nl, fr of both test
#      splits (learnability: seen APIs; generalization: held-out APIs);
#   7. PNG curves (train plot) and the tables (train report).
#
# Everything lands in runs/demo/ (removed first). Environment:
#   DEMO_TEST   test instances per split (each realized in es/it/nl/fr; default 200)
#   DEMO_TRAIN  Spanish training records (default 2000)
#   DEMO_MODEL  base model directory (default configs/demo/base-model)
#   GO          go command (default go)
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
TEST=${DEMO_TEST:-200}
TRAIN=${DEMO_TRAIN:-2000}
OUT=runs/demo
DATA=$OUT/data
EVALS=$OUT/evals
BASE=${DEMO_MODEL:-configs/demo/base-model}
MAXNEW=128
T0=$SECONDS
lap() { printf '[demo %4ds] %s\n' $((SECONDS - T0)) "$*" >&2; }

lap "build bin/train"
CGO_ENABLED=0 $GO build -o bin/train ./cmd/train # static, no cgo: the shipped binary
rm -rf "$OUT"
mkdir -p "$OUT" "$EVALS"

lap "benchmark: train data synth (seed 1; train=$TRAIN, test=$TEST per split and language)"
bin/train data synth --seed 1 --out "$DATA" --sizes "train=$TRAIN,val=40,test=$TEST,base=0" 2>"$OUT/synth.log"
sed -n '1,9p' "$OUT/synth.log" >&2
for split in learn gen; do
	for lang in es it nl fr; do
		grep -F "\"lang\":\"$lang\"" "$DATA/test_$split.jsonl" >"$DATA/test_$split.$lang.jsonl" || true
		if [[ ! -s "$DATA/test_$split.$lang.jsonl" ]]; then
			echo "demo: no $lang records in $DATA/test_$split.jsonl" >&2
			exit 1
		fi
	done
done

# evaluate STAGE [--adapter DIR]: greedy responses on every test file.
evaluate() {
	local stage=$1
	shift
	mkdir -p "$EVALS/$stage"
	for split in learn gen; do
		for lang in es it nl fr; do
			bin/train eval --model "$BASE" --compute f32 "$@" --data "$DATA/test_$split.$lang.jsonl" \
				--max-new-tokens $MAXNEW --out "$EVALS/$stage/$split.$lang.json" >/dev/null
		done
	done
}

# latest RUN: the final checkpoint of a run.
latest() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }

lap "evaluate the base model"
evaluate base

lap "LoRA SFT, 1 epoch on $DATA/train.jsonl (configs/demo/sft.yaml)"
bin/train sft --config configs/demo/sft.yaml --set model.path="$BASE" 2>&1 | tee "$OUT/sft.log" | sed -u 's/^/  /' >&2
SFT=$OUT/sft/best # = the final checkpoint: sft.yaml validates only at the end

lap "evaluate SFT ($SFT)"
evaluate sft --adapter "$SFT"

lap "GRPO, RM-3, β = 3, from the SFT adapter (configs/demo/grpo.yaml)"
bin/train grpo --config configs/demo/grpo.yaml --set model.path="$BASE" 2>&1 | tee "$OUT/grpo.log" | sed -u 's/^/  /' >&2
GRPO=$(latest $OUT/grpo)

lap "evaluate GRPO ($GRPO)"
evaluate grpo --adapter "$GRPO"

lap "curves: train plot"
for run in sft grpo; do
	bin/train plot $OUT/$run 2>"$OUT/plot-$run.log"
	echo "  $(grep -c '^wrote' "$OUT/plot-$run.log") PNG files in $OUT/$run/plots (loss.png, reward.png, kl.png, eval_metrics.png, ...)" >&2
done

lap "done: tables from $EVALS (train report)"
echo
bin/train report "$EVALS" --stages base,sft,grpo --trained es --out $OUT/report.json | tee $OUT/report.txt
echo
times >"$OUT/times.txt" # user and system CPU time of the commands run (second line)
cpu=$(tail -n 1 "$OUT/times.txt")
echo "make demo: $((SECONDS - T0)) s wall, CPU ${cpu/ / user + } sys, on $(nproc) cores (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a $OUT/report.txt
