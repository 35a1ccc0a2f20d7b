#!/bin/sh
# SFT training tokens/s next to PyTorch steps on the same model, batch and
# sequence length, as ratios, in one run. Run from the repository root
# (`make bench` does):
#
#   sh bench/sft/sft_bench.sh
#
# Models: the small benchmark model (qwen2, hidden 512, 8 layers,
# vocabulary 8192, 28M parameters; make_fixtures.py --small, seed 7, into
# $TMPDIR/argrl-small) and Qwen2.5-0.5B's shape with random bf16 weights
# (qwen2, hidden 896, 24 layers, vocabulary 151936, tied; bench/mkmodel
# into $TMPDIR/argrl-qwen2.5-0.5b), both generated at bench time.
#
# One step = forward + backward over B×T tokens (loss on the last T/2
# positions), LoRA r=32 α=64 dropout 0.05 on every linear layer, grad-norm
# clip 1.0, AdamW. argrl: BenchmarkSFTStep (trainer/sft_bench_test.go), the
# code path of trainer/sft.go, with model.compute f32 and bf16 (default
# build, cgo-free, Go-assembly SGEMM; the small model also with
# -tags openblas); PyTorch: bench/sft/sft_bench.py under Debian's
# python3-torch (/usr/bin/python3) in float32 and under bf16 autocast (its
# fastest mode here). Each reports the median step over STEPS timed steps
# (STEPS05 for the 0.5B shape) after a warm-up step, all with THREADS
# threads (GOMAXPROCS for Go, torch.set_num_threads for PyTorch). GFLOP/s
# counts the step's matmul work (sftFLOPs in the Go benchmark) and is
# also given as a share of this machine's multiply-add peak (bench/peak:
# f32 FMA for f32 rows, bf16 dot products for bf16 rows). B, T, STEPS,
# STEPS05, THREADS override the defaults 4, 256, 4, 2, nproc; MODELS=small
# or MODELS=0.5b runs one model only.
set -eu
B=${B:-4}
T=${T:-256}
STEPS=${STEPS:-4}
STEPS05=${STEPS05:-2}
THREADS=${THREADS:-$(nproc)}
MODELS=${MODELS:-"small 0.5b"}
PY=/usr/bin/python3
if ! $PY -c 'import torch, numpy' 2>/dev/null; then
	echo "sft_bench: $PY with torch and numpy is missing (Debian python3-torch)" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

peak=$(GOMAXPROCS=$THREADS go run ./bench/peak -threads "$THREADS")
pf32=$(echo "$peak" | $PY -c 'import json,sys; print(json.load(sys.stdin)["f32"])')
pbf16=$(echo "$peak" | $PY -c 'import json,sys; print(json.load(sys.stdin)["bf16"])')

# gobench MODEL COMPUTE TAGS STEPS: prints "tokens/s GFLOP/s".
gobench() {
	SFT_BENCH_MODEL=$1 SFT_BENCH_COMPUTE=$2 SFT_BENCH_B=$B SFT_BENCH_T=$T GOMAXPROCS=$THREADS \
		go test $3 ./trainer/ -run '^$' -bench '^BenchmarkSFTStep$' -benchtime "${4}x" >"$tmp/go.txt" 2>&1 ||
		{ cat "$tmp/go.txt" >&2; exit 1; }
	awk '/^BenchmarkSFTStep/ { for (i = 2; i < NF; i++) { if ($(i+1) == "tokens/s") t = $i; if ($(i+1) == "GFLOP/s") g = $i } print t, g }' "$tmp/go.txt"
}
# torchbench MODEL DTYPE STEPS: prints tokens/s.
torchbench() {
	$PY bench/sft/sft_bench.py "$1" --batch "$B" --seq "$T" --steps "$3" --threads "$THREADS" --dtype "$2" | awk '{print $3}'
}

for which in $MODELS; do
	case $which in
	small)
		MODEL=${TMPDIR:-/tmp}/argrl-small
		[ -f "$MODEL/model.safetensors" ] || $PY testdata/make_fixtures.py --small "$MODEL" >&2
		name="small model (qwen2 C=512 L=8 V=8192, 28M)" steps=$STEPS
		;;
	0.5b)
		MODEL=${TMPDIR:-/tmp}/argrl-qwen2.5-0.5b
		go run ./bench/mkmodel -shape qwen2.5-0.5b -out "$MODEL" >&2
		name="Qwen2.5-0.5B shape (C=896 L=24 V=151936, random bf16 weights)" steps=$STEPS05
		;;
	*)
		echo "sft_bench: unknown model $which (small or 0.5b)" >&2
		exit 1
		;;
	esac
	echo "sft_bench: $which: PyTorch f32 ..." >&2
	pt32=$(torchbench "$MODEL" f32 "$steps")
	echo "sft_bench: $which: argrl f32 ..." >&2
	g32=$(gobench "$MODEL" f32 "" "$steps")
	ob=""
	if [ "$which" = small ] && ldconfig -p | grep -q libopenblas; then
		echo "sft_bench: $which: argrl f32 -tags openblas ..." >&2
		ob=$(CGO_LDFLAGS="${CGO_LDFLAGS:-} -lopenblas" gobench "$MODEL" f32 "-tags openblas" "$steps")
	fi
	echo "sft_bench: $which: PyTorch bf16 autocast ..." >&2
	ptbf=$(torchbench "$MODEL" bf16 "$steps")
	echo "sft_bench: $which: argrl bf16 ..." >&2
	gbf=$(gobench "$MODEL" bf16 "" "$steps")
	flops=$(echo "$g32" | awk '{print $2 / $1}') # GFLOP per token
	echo
	echo "SFT step, $name, LoRA r=32 on all linears, AdamW; B=$B T=$T, $THREADS threads; peak f32 $(printf %.0f "$pf32"), bf16 $(printf %.0f "$pbf16") GFLOP/s"
	echo "| run | step s | tokens/s | GFLOP/s | share of peak | vs torch f32 | vs torch bf16 |"
	echo "|---|---|---|---|---|---|---|"
	row() { # label tokens/s peak
		[ -n "$2" ] && echo "$2 $flops $3 $pt32 $ptbf" | awk -v l="$1" -v bt="$((B * T))" \
			'{ printf "| %s | %.2f | %.1f | %.0f | %.0f%% | %.2f× | %.2f× |\n", l, bt / $1, $1, $1 * $2, 100 * $1 * $2 / $3, $1 / $4, $1 / $5 }'
		return 0
	}
	row "argrl, model.compute f32" "${g32%% *}" "$pf32"
	row "argrl, f32, -tags openblas" "${ob%% *}" "$pf32"
	row "argrl, model.compute bf16" "${gbf%% *}" "$pbf16"
	row "PyTorch $($PY -c 'import torch; print(torch.__version__)') f32" "$pt32" "$pf32"
	row "PyTorch bf16 autocast" "$ptbf" "$pbf16"
	echo
done
