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
#   5. stage 2: a second base corpus (synth --seed 2) and full fine-tuning
#      continued from stage 1 (configs/demo/base2.yaml);
#   6. export the final checkpoint in bf16 (train export) to configs/demo/base-model.
#
# Work files land in runs/demo-base/ (removed first). Environment:
#   DEMO_BASE   base corpus records (default 40000)
#   DEMO_BASE_ENGLISH  share of non-English base records whose user-language
#               values are written in English (default 0.6)
#   GO          go command (default go)
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
N=${DEMO_BASE:-40000}
EN=${DEMO_BASE_ENGLISH:-0.6}
OUT=runs/demo-base
T0=$SECONDS
lap() { printf '[demo-base %5ds] %s\n' $((SECONDS - T0)) "$*" >&2; }

lap "build bin/train"
CGO_ENABLED=0 $GO build -o bin/train ./cmd/train
rm -rf "$OUT"
mkdir -p "$OUT"

lap "base corpus: train data synth --seed 1 (base=$N, --base-english $EN)"
bin/train data synth --seed 1 --out "$OUT/data" --sizes "train=1500,val=0,test=0,base=$N" --base-english "$EN" 2>&1 | sed 's/^/  /' >&2

lap "tokenizer: train data bpe (2048 tokens) on the base corpus and the Spanish training split"
bin/train data bpe --out "$OUT/tokenizer" --vocab-size 2048 "$OUT/data/base.jsonl" "$OUT/data/train.jsonl" 2>&1 | sed 's/^/  /' >&2

lap "train sft --config configs/demo/base.yaml (full fine-tuning from random initialization)"
bin/train sft --config configs/demo/base.yaml 2>&1 | tee "$OUT/train.log" | sed -u 's/^/  /' >&2
CK="$OUT/train/checkpoints/$(cat "$OUT/train/checkpoints/latest")"
bin/train export --model "$CK" --out "$OUT/stage1" --dtype bf16

lap "stage 2: second base corpus (train data synth --seed 2) and train sft --config configs/demo/base2.yaml"
bin/train data synth --seed 2 --out "$OUT/data2" --sizes "train=0,val=0,test=0,base=$N" --base-english "$EN" 2>&1 | sed 's/^/  /' >&2
bin/train sft --config configs/demo/base2.yaml 2>&1 | tee "$OUT/train2.log" | sed -u 's/^/  /' >&2
CK="$OUT/train2/checkpoints/$(cat "$OUT/train2/checkpoints/latest")"

lap "export $CK in bf16 to configs/demo/base-model"
bin/train export --model "$CK" --out configs/demo/base-model --dtype bf16
bin/train plot "$OUT/train2" --out "$OUT/plots" 2>&1 | sed 's/^/  /' >&2
times >"$OUT/times.txt" # user and system CPU time of the commands run (second line)
cpu=$(tail -n 1 "$OUT/times.txt")
echo "make demo-base: $((SECONDS - T0)) s wall, CPU ${cpu/ / user + } sys, on $(nproc) cores (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
