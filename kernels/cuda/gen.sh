#!/usr/bin/env bash
# gen.sh: compile the CUDA kernels (every kernels/cuda/*.cu) to PTX for
# sm_80 and sm_90, compile every kernel with `ptxas -v` for each, print a
# report (registers, shared memory, stack, spills, __launch_bounds__) and
# record the digest of the sources the PTX was made from (ptx/SOURCES,
# checked by `go test`). `make cuda` runs it; `make cuda-check` runs it
# with --check. Both PTX sets are embedded; the loader takes the newest
# one the GPU supports (sm_90 on Hopper, sm_80 on Ampere and Ada).
#
# It fails when a kernel has no __launch_bounds__, spills registers, or
# needs more registers than its bounds allow on one SM (registers x
# threads > 65,536): such a kernel would fail to launch, or run slowly.
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
ARCHS="80 90"
for tool in "$NVCC" "$PTXAS"; do
	command -v "$tool" >/dev/null || { echo "gen.sh: $tool not found (install nvidia-cuda-toolkit)" >&2; exit 1; }
done

check=0
[[ "${1:-}" == "--check" ]] && check=1
out=ptx
if ((check)); then
	out=$(mktemp -d)
fi

# The digest: sha256 over "name\n<sha256 of the file>\n" for every *.cu,
# *.cuh and this script, sorted by name (as sourcesDigest in sources.go).
digest=$(for f in $(ls *.cu *.cuh gen.sh | sort); do
	printf '%s\n%s\n' "$f" "$(sha256sum <"$f" | cut -d' ' -f1)"
done | sha256sum | cut -d' ' -f1)

rm -rf "$out"/sm_*
report=$(mktemp)
trap 'rm -f "$report"; ((check)) && rm -rf "$out"' EXIT
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
		# one line per kernel: arch file kernel regs smem stack spill-st spill-ld threads
		bounds=$(awk '/^\.visible \.entry|^\.entry/ {k=$NF; sub(/\(.*/, "", k)} /^\.maxntid/ {gsub(",", ""); print k, $2*$3*$4}' "$ptx")
		awk -v arch="$arch" -v file="$f" -v bounds="$bounds" '
			BEGIN { n = split(bounds, b, "\n"); for (i = 1; i <= n; i++) { split(b[i], kv, " "); lim[kv[1]] = kv[2] } }
			function flush() { if (k != "") print arch, file, k, regs + 0, smem + 0, stack + 0, st + 0, ld + 0, (k in lim) ? lim[k] : 0 }
			/Compiling entry function/ { flush(); k = $0; sub(/.*function .\047?/, "", k); sub(/\047.*/, "", k); regs = smem = stack = st = ld = 0 }
			/bytes stack frame/ { stack = $1; st = $5; ld = $9 }
			/Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^registers/) regs = $i; if ($(i+1) == "bytes" && $(i+2) ~ /^smem/) smem = $i } }
			END { flush() }' <<<"$log" >>"$report"
	done
done
# The report, and the checks on it.
bad=0
printf '%-6s %-16s %-24s %5s %7s %6s %9s %7s %12s\n' arch source kernel regs smem stack spill-st/ld threads regs*threads
while read -r arch file kernel regs smem stack st ld threads; do
	use=$((regs * threads))
	why=""
	((threads == 0)) && why="no __launch_bounds__"
	((st + ld > 0)) && why="${why:+$why; }spills $st/$ld bytes"
	((use > 65536)) && why="${why:+$why; }$regs registers x $threads threads > 65536"
	printf '%-6s %-16s %-24s %5d %7d %6d %9s %7d %12d%s\n' "sm_$arch" "$file" "$kernel" "$regs" "$smem" "$stack" "$st/$ld" \
		"$threads" "$use" "${why:+  FAIL: $why}"
	[[ -n "$why" ]] && bad=$((bad + 1))
done < <(sort -k1,1n -k2,2 -k3,3 "$report")
if ((bad)); then
	echo "gen.sh: $bad kernel(s) fail the launch checks above (a spill, no __launch_bounds__, or registers x threads > 65536)" >&2
	exit 1
fi
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
	echo "gen.sh --check: ptx/ is up to date ($(ls ptx/sm_80 | wc -l) sources for sm_{${ARCHS// /,}}); every kernel passes the launch checks"
else
	echo "gen.sh: wrote ptx/ for sm_{${ARCHS// /,}} from $(ls *.cu | wc -l) sources; ptxas validated every kernel"
fi
