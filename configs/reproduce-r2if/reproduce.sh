#!/usr/bin/env bash
# make reproduce-r2if: papers 002/003 (R2IF) in miniature on a CPU. Every
# number printed is trained and evaluated here.
#
#   1. build bin/train;
#   2. the reason_tool warm start, shared by the draws (paper 002 starts RL
#      from an SFT warm start too): `train data synth --reasoning` on a seed
#      no draw uses (100): Spanish records with smv documents, a
#      reject_reason for each no-call record and a short gold reasoning;
#      full fine-tuning of the demo's base model on them, 2 epochs
#      (configs/reproduce-r2if/sft.yaml), exported: BASE. BASE is every
#      GRPO run's starting point and reference, and the CER student (the
#      policy's own base with LoRA off: paper 002's student is a separate
#      Llama-3.2-3B; this 1M-parameter model has no such counterpart);
#   3. per draw (synth --seed 1|2|3 --reasoning): GRPO from BASE (configs/
#      reproduce-r2if/grpo.yaml) with four rewards, the run seed = the draw:
#        r2if    3·(format ∧ correct) + R_cer + R_smv
#        binary  3·(format ∧ correct)                 (w_cer = w_smv = 0)
#        no-cer  3·(format ∧ correct) + R_smv         (w_cer = 0)
#        no-smv  3·(format ∧ correct) + R_cer         (w_smv = 0)
#      each keeping the checkpoint with the best validation exact match on
#      200 records (checkpoint.best_min_val);
#   4. greedy test evaluations of BASE (row "SFT warm start") and of each
#      run's best checkpoint on the draw's Spanish learnability test
#      records: accuracy (exact match), ACE ± its standard error (train eval
#      --metric ace, the student BASE) and, on the no-call records alone,
#      the irrelevance-rejection rate;
#   5. `train report --r2if`: the tables beside the papers' numbers, the
#      claims under the strict rule, claims.json and bar charts.
#
# Everything lands in runs/reproduce-r2if/ (removed first). Environment:
#   R2IF_DRAWS  draws (default "1 2 3")
#   R2IF_TRAIN  GRPO training records per draw (default 400; a run sees
#               steps × 4 of them)
#   R2IF_TEST   test instances per draw (default 200, Spanish)
#   R2IF_STEPS  GRPO steps (default from grpo.yaml)
#   R2IF_SFT    warm-start SFT records (default 1000)
#   R2IF_VAL    validation records per draw (default 200; fewer only for a
#               smoke test: the best-checkpoint floor then follows it)
#   R2IF_JOBS   runs at once (default: the number of cores). Each run is
#               one process on about one core (this model is too small for
#               the trainer to spread a step over cores), so the draws'
#               runs, which share nothing but BASE, run side by side; every
#               run's numbers are the same at any R2IF_JOBS (each has its
#               own seed and directory)
#   GO          go command (default go)
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
DRAWS=${R2IF_DRAWS:-1 2 3}
TRAIN=${R2IF_TRAIN:-400}
TEST=${R2IF_TEST:-200}
SFTN=${R2IF_SFT:-1000}
STEPS=${R2IF_STEPS:-}
VAL=${R2IF_VAL:-200}
JOBS=${R2IF_JOBS:-$(nproc)}
OUT=${R2IF_OUT:-runs/reproduce-r2if}
BASE=$OUT/base
CFG=configs/reproduce-r2if
MAXNEW=192
SYNTH=(--reasoning --irrelevant 0.2 --parallel 0.1)
NAME=reproduce-r2if
source configs/reproduce/common.sh
start

lap "warm start: train data synth --seed 100 --reasoning (train=$SFTN), SFT in reason_tool"
mkdir -p "$OUT/warm"
bin/train data synth --seed 100 "${SYNTH[@]}" --out "$OUT/warm/data" --sizes "train=$SFTN,val=0,test=0,base=0" 2>"$OUT/warm/synth.log" ||
	{ cat "$OUT/warm/synth.log" >&2; exit 1; }
bin/train sft --config $CFG/sft.yaml --set run.dir="$OUT/warm/sft" --set data.train="$OUT/warm/data/train.jsonl" \
	>"$OUT/warm/sft.log" 2>&1 || { tail -n 20 "$OUT/warm/sft.log" >&2; exit 1; }
SFT=$OUT/warm/sft/checkpoints/$(cat "$OUT/warm/sft/checkpoints/latest")
bin/train export --model "$SFT" --out "$BASE" --dtype f32 >"$OUT/warm/export.log" 2>&1 ||
	{ tail -n 20 "$OUT/warm/export.log" >&2; exit 1; }

for seed in $DRAWS; do
	D=$OUT/draw-$seed
	DATA=$D/data
	mkdir -p "$D/runs"
	lap "draw $seed: train data synth --seed $seed --reasoning (train=$TRAIN, val=$VAL, test=$TEST)"
	bin/train data synth --seed "$seed" "${SYNTH[@]}" --out "$DATA" --sizes "train=$TRAIN,val=$VAL,test=$TEST,base=0" 2>"$D/synth.log"
	grep -F '"lang":"es"' "$DATA/test_learn.jsonl" >"$DATA/test.jsonl"
	grep -F '"calls":[]' "$DATA/test.jsonl" >"$DATA/irr.jsonl"
done

# The functions below read seed, D, DATA and RUNS, which each job sets for
# its draw (job).
fit() { # fit NAME [--set k=v]...
	local name=$1
	shift
	lap "draw $seed: grpo $name"
	local steps=()
	[[ -n $STEPS ]] && steps=(--set optim.max_steps="$STEPS")
	bin/train grpo --config $CFG/grpo.yaml --set run.dir="$RUNS/$name" --set run.seed="$seed" \
		--set data.train="$DATA/train.jsonl" --set data.val="$DATA/val.jsonl" --set model.path="$BASE" --set checkpoint.best_min_val=$((VAL < 200 ? VAL : 200)) \
		"${steps[@]}" "$@" >"$RUNS/$name.log" 2>&1 || { tail -n 20 "$RUNS/$name.log" >&2; exit 1; }
}
# evaluate RUN [--adapter DIR]: greedy responses on the test records
# (accuracy and ACE, the student BASE) and on their no-call records. fit and
# evaluate exit their job's subshell on a failure, explicitly: set -e does
# not apply inside a command list ending in ||.
evaluate() {
	local run=$1
	shift
	local E=$D/evals/$run
	mkdir -p "$E"
	lap "draw $seed: evaluate $run"
	bin/train eval --config $CFG/grpo.yaml --model "$BASE" "$@" --data "$DATA/test.jsonl" --max-new-tokens $MAXNEW \
		--metric ace --student "$BASE" --out "$E/test.json" >"$E/test.txt" 2>>"$D/eval.log" ||
		{ tail -n 20 "$D/eval.log" >&2; exit 1; }
	bin/train eval --config $CFG/grpo.yaml --model "$BASE" "$@" --data "$DATA/irr.jsonl" --max-new-tokens $MAXNEW \
		--out "$E/irr.json" >"$E/irr.txt" 2>>"$D/eval.log" ||
		{ tail -n 20 "$D/eval.log" >&2; exit 1; }
}
# job SEED RUN [--set k=v]...: one run of a draw, GRPO then its greedy
# evaluations (RUN sft: the warm start BASE, evaluated only), in a
# subshell, so that a failure ends this job and leaves OUT/failed.SEED.RUN.
# Each run is evaluated as soon as it ends, so that a stopped reproduction
# still has the runs it finished.
job() {
	(
		seed=$1 run=$2
		shift 2
		D=$OUT/draw-$seed
		DATA=$D/data
		RUNS=$D/runs
		if [[ $run == sft ]]; then
			evaluate sft
		else
			fit "$run" "$@"
			evaluate "$run" --adapter "$RUNS/$run/best"
		fi
	) || touch "$OUT/failed.$1.$2"
}

for seed in $DRAWS; do
	# Longest first (R2IF and the ablations score with the CER student).
	spawn job "$seed" r2if
	spawn job "$seed" no-cer --set reward.r2if.w_cer=0
	spawn job "$seed" no-smv --set reward.r2if.w_smv=0
	spawn job "$seed" binary --set reward.r2if.w_cer=0 --set reward.r2if.w_smv=0
	spawn job "$seed" sft
done
wait_jobs

finish --r2if
