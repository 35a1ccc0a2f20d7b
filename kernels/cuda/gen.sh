#!/usr/bin/env bash
# gen.sh: compile the CUDA kernels (kernels/cuda/*.cu) to PTX for sm_80,
# validate every kernel with ptxas, and record the digest of the sources
# the PTX was made from (ptx/SOURCES, checked by `go test`). `make cuda`
# runs it. One target is enough: the driver JIT-compiles sm_80 PTX for any
# newer GPU (Hopper included), and nvcc's sm_90 PTX of these kernels was
# the same code as the sm_80 one (only the .target line differed).
#
#   gen.sh           regenerate ptx/ in place
#   gen.sh --check   regenerate into a temporary directory and fail if the
#                    committed ptx/ differs (stale or hand-edited PTX)
#
# Needs nvcc and ptxas (CUDA 11.8 from Debian's nvidia-cuda-toolkit; see
# DEVELOPERS.md). NVCC and PTXAS override the tools.
set -euo pipefail
cd "$(dirname "$0")"
export LC_ALL=C

NVCC=${NVCC:-nvcc}
PTXAS=${PTXAS:-ptxas}
ARCHS="80"
for tool in "$NVCC" "$PTXAS"; do
	command -v "$tool" >/dev/null || { echo "gen.sh: $tool not found (install nvidia-cuda-toolkit)" >&2; exit 1; }
done

check=0
[[ "${1:-}" == "--check" ]] && check=1
out=ptx
if ((check)); then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

# The digest: sha256 over "name\n<sha256 of the file>\n" for every *.cu,
# *.cuh and this script, sorted by name (as sourcesDigest in sources.go).
digest=$(for f in $(ls *.cu *.cuh gen.sh | sort); do
	printf '%s\n%s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"
done | sha256sum | cut -d' ' -f1)

rm -rf "$out"/sm_*
for arch in $ARCHS; do
	mkdir -p "$out/sm_$arch"
	for f in *.cu; do
		ptx="$out/sm_$arch/${f%.cu}.ptx"
		"$NVCC" -ptx -arch="sm_$arch" -O3 -std=c++17 -o "$ptx" "$f"
		# ptxas compiles every kernel of the file for the real architecture:
		# register allocation, shared memory limits, instruction support.
		if ! log=$("$PTXAS" -arch="sm_$arch" -v -o /dev/null "$ptx" 2>&1); then
			echo "$log" >&2
			echo "gen.sh: ptxas -arch=sm_$arch rejected $ptx" >&2
			exit 1
		fi
		if grep -qE "(^|[^0-9])[1-9][0-9]* bytes spill" <<<"$log"; then
			echo "gen.sh: warning: register spills in $f for sm_$arch:" >&2
			grep -B2 -E "[1-9][0-9]* bytes spill" <<<"$log" >&2
		fi
	done
done
{
	echo "$digest"
	"$NVCC" --version | tail -1
} >"$out/SOURCES"

if ((check)); then
	if ! diff -r ptx "$out" >/dev/null; then
		diff -r ptx "$out" | head -40 >&2
		echo "gen.sh --check: kernels/cuda/ptx is stale; run make cuda and commit it" >&2
		exit 1
	fi
	echo "gen.sh --check: ptx/ is up to date ($(ls ptx/sm_80 | wc -l) sources for sm_{${ARCHS// /,}})"
else
	echo "gen.sh: wrote ptx/ for sm_{${ARCHS// /,}} from $(ls *.cu | wc -l) sources; ptxas validated every kernel"
fi
