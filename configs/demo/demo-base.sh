#!/usr/bin/env bash
# make demo-base: regenerate the demo's tiny base model, configs/demo/base-model.
#
#   1. build bin/train;
#   2. the base corpus: train data synth (seed 1), base.jsonl: every
#      language, free-form values of non-English users mostly in English;
#   3. a byte-level BPE tokenizer trained on the rendered corpus (train data bpe);
#   4. stage 1: train sft with full fine-tuning from random initialization
#      (configs/demo/base.yaml: model.init random, lora.enabled false),
#      exported to runs/demo-base/stage1;
#   5. stages 2..N: a fresh base corpus each (synth --seed k) and full
#      fine-tuning continued from stage k-1 (configs/demo/base2.yaml, with
#      run.dir, run.seed, model.path and data.train set per stage);
#   6. export the final checkpoint in bf16 (train export) to configs/demo/base-model.
#
# Stage 1 hands over in bf16 and the later stages in f32: that is how the
# committed model was made (training is deterministic on the default CPU
# backend, so the same commands give the same weights).
#
# Work files land in runs/demo-base/ (removed first). Environment:
#   DEMO_BASE          base corpus records per stage (default 40000)
#   DEMO_BASE_ENGLISH  share of non-English base records whose user-language
#                      values are written in English (default 0.6)
#   DEMO_BASE_STAGES   stages N (default 8)
#   GO                 go command (default go)
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
N=${DEMO_BASE:-40000}
EN=${DEMO_BASE_ENGLISH:-0.6}
STAGES=${DEMO_BASE_STAGES:-8}
OUT=runs/demo-base
T0=$SECONDS
lap() { printf '[demo-base %5ds] %s\n' $((SECONDS - T0)) "$*" >&2; }
final() { echo "$1/checkpoints/$(cat "$1/checkpoints/latest")"; }

lap "build bin/train"
CGO_ENABLED=0 $GO build -o bin/train ./cmd/train
rm -rf "$OUT"
mkdir -p "$OUT"

lap "base corpus: train data synth --seed 1 (base=$N, --base-english $EN)"
bin/train data synth --seed 1 --out "$OUT/data" --sizes "train=1500,val=0,test=0,base=$N" --base-english "$EN" 2>&1 | sed 's/^/  /' >&2

lap "tokenizer: train data bpe (2048 tokens) on the base corpus and the Spanish training split"
bin/train data bpe --out "$OUT/tokenizer" --vocab-size 2048 "$OUT/data/base.jsonl" "$OUT/data/train.jsonl" 2>&1 | sed 's/^/  /' >&2

lap "stage 1/$STAGES: train sft --config configs/demo/base.yaml (full fine-tuning from random initialization)"
bin/train sft --config configs/demo/base.yaml 2>&1 | tee "$OUT/train.log" | sed -u 's/^/  /' >&2
LAST=$OUT/train
bin/train export --model "$(final $LAST)" --out "$OUT/stage1" --dtype bf16

for k in $(seq 2 "$STAGES"); do
	lap "stage $k/$STAGES: base corpus train data synth --seed $k, train sft --config configs/demo/base2.yaml from stage $((k - 1))"
	bin/train data synth --seed "$k" --out "$OUT/data$k" --sizes "train=0,val=0,test=0,base=$N" --base-english "$EN" 2>&1 | sed 's/^/  /' >&2
	bin/train sft --config configs/demo/base2.yaml --set run.dir="$OUT/train$k" --set run.seed="$k" \
		--set model.path="$OUT/stage$((k - 1))" --set data.train="$OUT/data$k/base.jsonl" 2>&1 |
		tee "$OUT/train$k.log" | sed -u 's/^/  /' >&2
	LAST=$OUT/train$k
	if ((k < STAGES)); then
		bin/train export --model "$(final $LAST)" --out "$OUT/stage$k" --dtype f32
	fi
done

lap "export $(final $LAST) in bf16 to configs/demo/base-model"
bin/train export --model "$(final $LAST)" --out configs/demo/base-model --dtype bf16
bin/train plot "$LAST" --out "$OUT/plots" 2>&1 | sed 's/^/  /' >&2
times >"$OUT/times.txt" # user and system CPU time of the commands run (second line)
cpu=$(tail -n 1 "$OUT/times.txt")
echo "make demo-base: $((SECONDS - T0)) s wall, CPU ${cpu/ / user + } sys, on $(nproc) cores (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
