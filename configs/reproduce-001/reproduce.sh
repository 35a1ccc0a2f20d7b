#!/usr/bin/env bash
# make reproduce-001: paper 001 (SFT or RL for tool calling) in miniature, on
# several draws of two synthetic corpora that differ the way xLAM and
# ToolACE do (train data synth --style xlam|toolace --seed N), from one base
# model (configs/demo/base-model), on a CPU. Every number printed is trained
# and evaluated here; `train report --draws --paper 001` prints the tables
# as mean ± sd over the draws beside the paper's numbers and checks every
# claim strictly.
#
# Per draw (configs/reproduce-001/*.yaml; run directories under DRAW/runs),
# every run trained on dataset A (xlam) unless said otherwise:
#   sft        LoRA SFT, 2 epochs
#   sft-full   full-parameter SFT, 2 epochs, lr 10× lower (paper 001 App. A.2)
#   grpo       GRPO from the base model, decomposed reward (App. A.4)
#   sft-half, sft-grpo  SFT→GRPO: LoRA SFT for 1 epoch on the first half of
#              A, then GRPO from that adapter on the other half (§3.1)
#   mix        LoRA SFT, 2 epochs, on half of A and half of B (the same
#              number of records as A alone)
# Every run's best checkpoint is chosen by exact match on 200 validation
# records (greedy; mix: 100 of A and 100 of B), and is evaluated, greedy, on
# the test files of A (in-distribution) and B (transfer):
# DRAW/evals/<stage>/<xlam|toolace>.es.json.
#
# After each draw the report over the draws done so far is written to
# OUT/report-after-<seed>.txt, so a run cut short still says what it found.
#
# Environment: REPRO_DRAWS (default "1 2 3"), REPRO_TRAIN training records of
# each corpus (default 1000), REPRO_TEST test records of each (default 200),
# REPRO_VAL validation records (default 200), REPRO_STEPS GRPO steps (default
# 50), REPRO_OUT (default runs/reproduce-001), GO. The defaults are the
# reported protocol; smaller values only smoke-test the script.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
DRAWS=${REPRO_DRAWS:-1 2 3}
TRAIN=${REPRO_TRAIN:-1000}
TEST=${REPRO_TEST:-200}
VAL=${REPRO_VAL:-200}
STEPS=${REPRO_STEPS:-50}
OUT=${REPRO_OUT:-runs/reproduce-001}
BASE=configs/demo/base-model
CFG=configs/reproduce-001
MAXNEW=128
NAME=reproduce-001
source configs/reproduce/common.sh
start

for seed in $DRAWS; do
	D=$OUT/draw-$seed
	DATA=$D/data
	EVALS=$D/evals
	RUNS=$D/runs
	mkdir -p "$EVALS" "$RUNS"
	lap "draw $seed: train data synth --style xlam|toolace --seed $seed (train=$TRAIN, val=$VAL, test=$TEST each)"
	for style in xlam toolace; do
		bin/train data synth --style $style --seed "$seed" --out "$DATA/$style" \
			--sizes "train=$TRAIN,val=$VAL,test=$TEST" 2>>"$D/synth.log"
	done
	A=$DATA/xlam
	HALF=$((TRAIN / 2))
	head -n $HALF "$A/train.jsonl" >"$DATA/xlam-half1.jsonl"
	tail -n +$((HALF + 1)) "$A/train.jsonl" >"$DATA/xlam-half2.jsonl"
	head -n $HALF "$A/train.jsonl" >"$DATA/mix-train.jsonl"
	head -n $((TRAIN - HALF)) "$DATA/toolace/train.jsonl" >>"$DATA/mix-train.jsonl"
	head -n $((VAL / 2)) "$A/val.jsonl" >"$DATA/mix-val.jsonl"
	head -n $((VAL - VAL / 2)) "$DATA/toolace/val.jsonl" >>"$DATA/mix-val.jsonl"

	# evaluate STAGE [train-eval flags]: greedy, on both test files.
	evaluate() {
		local stage=$1
		shift
		mkdir -p "$EVALS/$stage"
		for style in xlam toolace; do
			bin/train eval "$@" --data "$DATA/$style/test.jsonl" --max-new-tokens $MAXNEW \
				--out "$EVALS/$stage/$style.es.json" >/dev/null 2>>"$D/eval.log"
		done
	}
	fit() { # fit ALGO NAME CONFIG TRAIN VAL [--set k=v]...
		local algo=$1 name=$2 cfg=$3 train=$4 val=$5
		shift 5
		lap "draw $seed: $algo $name"
		bin/train "$algo" --config "$cfg" --set run.dir="$RUNS/$name" --set data.train="$train" \
			--set data.val="$val" --set model.path="$BASE" "$@" >"$RUNS/$name.log" 2>&1 ||
			{ tail -n 20 "$RUNS/$name.log" >&2; exit 1; }
	}

	lap "draw $seed: evaluate the base model"
	evaluate base --model "$BASE"

	fit sft sft $CFG/sft.yaml "$A/train.jsonl" "$A/val.jsonl"
	evaluate sft --model "$BASE" --adapter "$RUNS/sft/best"
	# Full-parameter SFT: every weight trains; best/ is a whole model.
	fit sft sft-full $CFG/sft.yaml "$A/train.jsonl" "$A/val.jsonl" --set lora.enabled=false --set optim.lr=2.0e-4
	evaluate sft-full --model "$RUNS/sft-full/best"
	fit grpo grpo $CFG/grpo.yaml "$A/train.jsonl" "$A/val.jsonl" --set optim.max_steps="$STEPS"
	evaluate grpo --model "$BASE" --adapter "$RUNS/grpo/best"
	fit sft sft-half $CFG/sft.yaml "$DATA/xlam-half1.jsonl" "$A/val.jsonl" --set optim.epochs=1
	fit grpo sft-grpo $CFG/grpo.yaml "$DATA/xlam-half2.jsonl" "$A/val.jsonl" --set init.adapter="$RUNS/sft-half/best" \
		--set optim.max_steps="$STEPS"
	evaluate sft-grpo --model "$BASE" --adapter "$RUNS/sft-grpo/best"
	fit sft mix $CFG/sft.yaml "$DATA/mix-train.jsonl" "$DATA/mix-val.jsonl"
	evaluate mix --model "$BASE" --adapter "$RUNS/mix/best"

	lap "draw $seed: report over the draws done so far"
	bin/train report --draws --paper 001 "$OUT" >"$OUT/report-after-$seed.txt" 2>&1 ||
		{ tail -n 20 "$OUT/report-after-$seed.txt" >&2; exit 1; }
done

finish --draws --paper 001
