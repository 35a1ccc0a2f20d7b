#!/bin/sh
# Agreement of argrl's bfcl reward with BFCL's own AST checker on the real
# BFCL v4 single-turn files (a local check; needs no network, not run by
# `go test`). Usage, from the repository root:
#
#   testdata/bfcl_oracle/compare.sh BFCL_ROOT [WORK]
#
# BFCL_ROOT is the berkeley-function-call-leaderboard directory of a
# checkout or extraction of ShishirPatil/gorilla (it holds bfcl_eval/ and
# bfcl_eval/data/). WORK (default: a temporary directory) receives the
# converted records, predictions and verdicts. Environment: PYTHON
# (default /usr/bin/python3), OFFSETS (default "0"; more offsets perturb
# other arguments in other ways), FORMATS (default "tool_call pythonic").
# Prints one line per category, output format, kind and offset, then totals;
# exits 1 if any verdict differs.
set -eu
ROOT=${1:?usage: compare.sh BFCL_ROOT [WORK]}
WORK=${2:-$(mktemp -d)}
PY=${PYTHON:-/usr/bin/python3}
H=$(dirname "$0")
D=$ROOT/bfcl_eval/data
mkdir -p "$WORK/conv" "$WORK/preds" "$WORK/out"
CGO_ENABLED=0 go build -o "$WORK/train" ./cmd/train
for c in simple_python simple_java simple_javascript multiple parallel parallel_multiple irrelevance \
	live_simple live_multiple live_parallel live_parallel_multiple live_irrelevance live_relevance; do
	set -- --from bfcl
	[ -f "$D/possible_answer/BFCL_v4_$c.json" ] && set -- "$@" --answers "$D/possible_answer/BFCL_v4_$c.json"
	"$WORK/train" data convert "$@" "$D/BFCL_v4_$c.json" "$WORK/conv/$c.jsonl" 2>"$WORK/conv/$c.log"
	for f in ${FORMATS:-tool_call pythonic}; do
		case $c in *java*) [ "$f" = pythonic ] && continue ;; esac
		for off in ${OFFSETS:-0}; do
			"$PY" "$H/perturb.py" --records "$WORK/conv/$c.jsonl" --out-dir "$WORK/preds" --prefix "$c.$f.$off" --offset "$off" --format "$f"
			for p in "$WORK/preds/$c.$f.$off".*.jsonl; do
				[ -f "$p" ] || continue
				k=${p%.jsonl}
				k=${k##*.}
				o=$WORK/out/$c.$f.$off.$k
				"$WORK/train" reward --reward bfcl --format "$f" --data "$WORK/conv/$c.jsonl" --predictions "$p" >"$o.ours" 2>/dev/null
				"$PY" "$H/oracle.py" --bfcl-root "$ROOT" --records "$WORK/conv/$c.jsonl" --predictions "$p" --format "$f" >"$o.oracle"
				r=$("$PY" "$H/compare.py" "$o.ours" "$o.oracle") || true
				echo "$c $f $k $off $r"
			done
		done
	done
done | tee "$WORK/agreement.txt"
"$PY" - "$WORK/agreement.txt" <<'PYEOF'
import json, sys
n = v = e = 0
for line in open(sys.argv[1]):
    r = json.loads(line.split(" ", 4)[4])
    n, v, e = n + r["n"], v + r["verdict_agree"], e + r["error_type_agree"]
print(f"total: {n} predictions, verdicts agree on {v}, error types agree on {e}")
sys.exit(0 if n == v else 1)
PYEOF
