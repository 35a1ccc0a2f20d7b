#!/bin/sh
# SFT training tokens/s on the small benchmark model (testdata/bench/small:
# qwen2, hidden 512, 8 layers, vocabulary 8192, 28M parameters) next to a
# PyTorch reference step on the same model, batch and sequence length, as
# ratios. Run from the repository root (`make bench` does):
#
#   sh bench/sft/sft_bench.sh
#
# One step = forward + backward over B×T tokens (loss on the last T/2
# positions), LoRA r=32 α=64 dropout 0.05 on every linear layer, grad-norm
# clip 1.0, AdamW. argrl: BenchmarkSFTStep (trainer/sft_bench_test.go), the
# code path of trainer/sft.go, in the default build (cgo-free, Go-assembly
# SGEMM) and
# the -tags openblas build; PyTorch: bench/sft/sft_bench.py under Debian's
# python3-torch (/usr/bin/python3). Each reports the median step over STEPS
# timed steps after a warm-up step, all with THREADS threads (GOMAXPROCS for
# Go). B, T, STEPS, THREADS override the defaults 4, 256, 4, nproc.
# The model weights are generated once (make_fixtures.py --small, seed 7)
# into $TMPDIR/argrl-small.
set -eu
B=${B:-4}
T=${T:-256}
STEPS=${STEPS:-4}
THREADS=${THREADS:-$(nproc)}
PY=/usr/bin/python3
MODEL=${TMPDIR:-/tmp}/argrl-small
if ! $PY -c 'import torch, numpy' 2>/dev/null; then
	echo "sft_bench: $PY with torch and numpy is missing (Debian python3-torch)" >&2
	exit 1
fi
if [ ! -f "$MODEL/model.safetensors" ]; then
	$PY testdata/make_fixtures.py --small "$MODEL" >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gobench() { # $1: extra go test flags; prints tokens/s
	SFT_BENCH_MODEL=$MODEL SFT_BENCH_B=$B SFT_BENCH_T=$T GOMAXPROCS=$THREADS \
		go test $1 ./trainer/ -run '^$' -bench '^BenchmarkSFTStep$' -benchtime "${2}x" >"$tmp/go.txt" 2>&1 ||
		{ cat "$tmp/go.txt" >&2; exit 1; }
	awk '/^BenchmarkSFTStep/ { for (i = 2; i < NF; i++) if ($(i+1) == "tokens/s") print $i }' "$tmp/go.txt"
}

echo "sft_bench: argrl -tags openblas ..." >&2
if ldconfig -p | grep -q libopenblas; then
	ob=$(CGO_LDFLAGS="${CGO_LDFLAGS:-} -lopenblas" gobench "-tags openblas" "$STEPS")
else
	echo "sft_bench: libopenblas not installed; skipping the openblas build" >&2
	ob=""
fi
echo "sft_bench: PyTorch reference ..." >&2
pt=$($PY bench/sft/sft_bench.py "$MODEL" --batch "$B" --seq "$T" --steps "$STEPS" --threads "$THREADS" | awk '{print $3}')
echo "sft_bench: argrl default build (Go-assembly SGEMM) ..." >&2
gd=$(gobench "" "$(( STEPS < 3 ? STEPS : 3 ))")

echo "SFT step, small model (qwen2 C=512 L=8 V=8192), LoRA r=32 on all linears, AdamW; B=$B T=$T, $THREADS threads"
printf "%-36s %10s %10s\n" "" "tokens/s" "vs torch"
row() { [ -n "$2" ] && printf "%-36s %10.1f %9.2fx\n" "$1" "$2" "$(echo "$2 $pt" | awk '{print $1/$2}')"; return 0; }
row "argrl, -tags openblas" "$ob"
row "argrl, default build (Go asm SGEMM)" "$gd"
printf "%-36s %10.1f %9.2fx\n" "PyTorch $($PY -c 'import torch; print(torch.__version__)') (reference)" "$pt" 1
