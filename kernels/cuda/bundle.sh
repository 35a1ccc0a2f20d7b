#!/usr/bin/env bash
# bundle.sh [DIR] (make gpu-check-build): everything a GPU machine without
# Go needs to run make gpu-check, in DIR (gpu-bundle/, ignored by git):
#
#   bin/gpucheck.gz, bin/train-cuda.gz, bin/cuda.test.gz
#                                                 stripped, -tags argrl_cuda,
#                                                 gzip -9 (gpu-check.sh unpacks
#                                                 them: 67 MiB as they are)
#   kernels/cuda/gpu-check.sh                     the script (run it from there)
#   kernels/cuda/ptx/                             the PTX (also embedded)
#   configs/{sft,grpo,ppo}-tiny.yaml, trainer/testdata/sft/   tiny configs, data
#
# It fails when a binary needs more than glibc 2.34 (objdump -T: the
# newest GLIBC_ symbol version) or any shared library but libc, and when
# the bundle is over 40 MiB. docs/gpu.md gives the device call.
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
dir=${1:-gpu-bundle}
max_glibc=2.34
max_bytes=$((40 << 20))
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/kernels/cuda" "$dir/configs" "$dir/trainer/testdata"
# -trimpath: no build paths in the binaries; -s -w: no symbol tables
flags=(-trimpath -tags argrl_cuda -ldflags='-s -w')
"$GO" build "${flags[@]}" -o "$dir/bin/gpucheck" ./cmd/gpucheck
"$GO" build "${flags[@]}" -o "$dir/bin/train-cuda" ./cmd/train
"$GO" test -c "${flags[@]}" -o "$dir/bin/cuda.test" ./kernels/cuda
cp kernels/cuda/gpu-check.sh "$dir/kernels/cuda/"
cp -r kernels/cuda/ptx "$dir/kernels/cuda/"
cp configs/sft-tiny.yaml configs/grpo-tiny.yaml configs/ppo-tiny.yaml "$dir/configs/"
cp -r trainer/testdata/sft "$dir/trainer/testdata/"

bad=0
for b in "$dir"/bin/*; do
	need=$(objdump -p "$b" | awk '$1 == "NEEDED" {print $2}' | sort -u | paste -sd ' ' -)
	glibc=$(objdump -T "$b" | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sed 's/GLIBC_//' | sort -V | tail -1)
	printf 'bundle: %-16s %6.1f MiB, NEEDED %s, newest glibc symbol %s\n' "$(basename "$b")" \
		"$(echo "$(stat -c %s "$b") / 1048576" | bc -l)" "${need:-none}" "${glibc:-none}"
	if [[ -n "$glibc" && "$(printf '%s\n%s\n' "$glibc" "$max_glibc" | sort -V | tail -1)" != "$max_glibc" ]]; then
		echo "bundle: $b needs glibc $glibc, newer than $max_glibc" >&2
		bad=1
	fi
	for l in $need; do
		case $l in libc.so.6 | ld-linux-*) ;; *)
			echo "bundle: $b needs $l, which a GPU machine may not have" >&2
			bad=1
			;;
		esac
	done
done
((bad)) && exit 1
gzip -9 "$dir"/bin/*
size=$(du -sb "$dir" | cut -f1)
printf 'bundle: %s is %.1f MiB (limit 40 MiB): carry it and run %s/kernels/cuda/gpu-check.sh (docs/gpu.md)\n' \
	"$dir" "$(echo "$size / 1048576" | bc -l)" "$dir"
if ((size > max_bytes)); then
	echo "bundle: $dir is over 40 MiB" >&2
	bad=1
fi
exit $bad
