#!/usr/bin/env bash
# link-check.sh [BIN] (make cuda-check): what the GPU build (bin/train-cuda)
# needs from the machine it runs on.
#
#   1. cudrv.h, the driver, cuBLAS and cuBLASLt entry points the binary resolves at
#      run time, has exactly the types and symbols of the toolkit headers
#      (abicheck/abicheck.c, compiled against cuda.h / cublas_v2.h / cublasLt.h 11.8);
#   2. the binary links neither libcuda nor libcublas (objdump -p: NEEDED)
#      and has no undefined CUDA or cuBLAS symbol (nm -D): nothing ties it to
#      one toolkit's symbol names (CUDA 12 renamed several `_v2` entry points
#      that gorgonia.org/cu's callers linked against);
#   3. it starts: `BIN gpu-info` opens libcuda.so.1 and cuBLAS, resolves
#      every entry point and prints them; without a GPU it then fails at
#      cuInit (CUDA_ERROR_NO_DEVICE), which is the expected end here. Once
#      more with ARGRL_CUDA_DLSYM=1: the by-name fallback for drivers older
#      than cuGetProcAddress (11.3) finds every symbol too.
#
# CUDA_INCLUDE overrides where cuda.h is looked for.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-bin/train-cuda}
inc=${CUDA_INCLUDE:-}
if [[ -z "$inc" ]]; then
	for d in /usr/local/cuda/include /usr/include; do
		[[ -f "$d/cuda.h" ]] && { inc=$d; break; }
	done
fi
[[ -n "$inc" ]] || { echo "link-check: no cuda.h (set CUDA_INCLUDE)" >&2; exit 1; }

gcc -fsyntax-only -Wall -Werror -I"$inc" kernels/cuda/abicheck/abicheck.c
echo "link-check: cudrv.h matches $inc/cuda.h ($(grep -m1 -oE '#define CUDA_VERSION [0-9]+' "$inc/cuda.h"))"

needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" {print $2}')
echo "link-check: $bin NEEDED: $(echo $needed)"
if grep -qE 'libcuda|libcublas|libcudart' <<<"$needed"; then
	echo "link-check: $bin links a CUDA library at build time" >&2
	exit 1
fi
undef=$(nm -D --undefined-only "$bin" | awk '{print $NF}' | sort)
cuda=$(grep -E '^(cu|cublas|cuda)[A-Z_]' <<<"$undef" || true)
if [[ -n "$cuda" ]]; then
	echo "link-check: $bin has undefined CUDA symbols:" $cuda >&2
	exit 1
fi
echo "link-check: $(wc -l <<<"$undef") undefined dynamic symbols, none from CUDA:" $(sed 's/@.*//' <<<"$undef" | sort -u)

set +e
info=$("$bin" gpu-info 2>&1)
rc=$?
set -e
echo "$info" | sed 's/^/  /'
if ((rc != 0)); then
	if grep -qE "no usable CUDA driver|no CUDA driver library" <<<"$info"; then
		echo "link-check: no CUDA driver library on this machine; start not checked"
	elif grep -q "cuInit: CUDA_ERROR_NO_DEVICE" <<<"$info"; then
		echo "link-check: $bin resolved every entry point and stopped at cuInit: no GPU here"
	else
		echo "link-check: $bin gpu-info failed" >&2
		exit 1
	fi
fi
if ! grep -qE "no usable CUDA driver|no CUDA driver library" <<<"$info"; then
	set +e
	fb=$(ARGRL_CUDA_DLSYM=1 "$bin" gpu-info 2>&1)
	set -e
	n=$(grep -cE '^cu[A-Z][A-Za-z0-9_]* cu[A-Za-z0-9_]+ dlsym$' <<<"$fb" || true)
	if grep -q " ? " <<<"$fb" || ! grep -qE "cuInit: CUDA_ERROR_NO_DEVICE|^device: " <<<"$fb"; then
		echo "$fb" >&2
		echo "link-check: the by-name fallback (ARGRL_CUDA_DLSYM=1) failed" >&2
		exit 1
	fi
	echo "link-check: by-name fallback: $n driver entry points found by their versioned names"
fi
