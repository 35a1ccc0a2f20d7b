#!/bin/sh
# SGEMM GFLOP/s, as medians over COUNT runs (default 3), of
#   gonum     gonum's pure-Go sgemm (the cgo-free build's matmul before
#             kernels/internal/sgemm)
#   default   the default (cgo-free) build's Backend.MatMul: packed assembly
#             SGEMM split over goroutines (gonum where there is no AVX2+FMA)
#   openblas  the -tags openblas build's Backend.MatMul
#   direct    OpenBLAS's sgemm called directly with its own threads
# and ratios of times measured alternating call by call in one process
# (BenchmarkSGEMMPaired), so load from other processes hits all alike:
#   default/gonum from the default build; default/direct,
#   default/openblas and openblas/direct from the openblas build, which
#   times all four. The GF/s columns come from two processes at different
#   moments; on a shared machine only the ratios compare like with like.
# The bf16 column is the default build's MatMul with bf16 products on a
# bf16 B (the AVX512-BF16 dot GEMM; model.compute bf16), bf16/default its
# speed-up over the float32 product, both in the default build's process;
# the last two columns are the default (f32) and bf16 figures as shares of
# the machine's multiply-add peak (bench/peak, same threads).
# Then the elementwise loops of kernels/internal/vec before/after
# (BenchmarkVecPaired: scalar reference loop vs assembly, alternating).
# Run from the repository root:  sh bench/kernels/bench.sh
# Needs libopenblas-dev (the openblas build links -lopenblas).
set -eu
COUNT=${COUNT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "bench/kernels/bench.sh: default build (gonum vs default, interleaved) ..." >&2
go test -run '^$' -bench '^BenchmarkSGEMMPaired$' -count "$COUNT" ./kernels/ >"$tmp/default.txt"
echo "bench/kernels/bench.sh: -tags openblas build (gonum, default, openblas backend, direct OpenBLAS, interleaved) ..." >&2
if ! CGO_LDFLAGS="${CGO_LDFLAGS:-} -lopenblas" go test -tags openblas -run '^$' -bench '^BenchmarkSGEMMPaired$' -count "$COUNT" ./kernels/ >"$tmp/openblas.txt" 2>"$tmp/openblas.err"; then
	cat "$tmp/openblas.err" "$tmp/openblas.txt" >&2
	echo "bench/kernels/bench.sh: the openblas build failed; is libopenblas-dev installed?" >&2
	exit 1
fi
echo "bench/kernels/bench.sh: elementwise before/after (kernels/internal/vec) ..." >&2
go test -run '^$' -bench '^BenchmarkVecPaired$' -count "$COUNT" ./kernels/internal/vec/ >"$tmp/vec.txt"
grep -m1 '^cpu:' "$tmp/default.txt" || true
go run ./bench/peak >"$tmp/peak.json"
peak=$(sed 's/[{}"]//g; s/,/ /g' "$tmp/peak.json")
echo "peak (bench/peak): $peak"
go test -count=1 -run '^TestDefaultBLASName$' -v ./kernels/ 2>/dev/null | grep -o 'cpu/[a-z0-9-]*' | head -1 | sed 's/^/default build backend: /' || true

{ sed 's/^/D /' "$tmp/default.txt"; sed 's/^/O /' "$tmp/openblas.txt"; } | awk -v peak="$peak" '
BEGIN { np = split(peak, kv, " "); for (i = 1; i <= np; i++) { split(kv[i], p, ":"); pk[p[1]] = p[2] } }
function metric(name,    i) { for (i = 3; i < NF; i++) if ($(i+1) == name) return $i; return "" }
function add(key, v) { if (v == "") return; n[key]++; val[key, n[key]] = v + 0 }
function median(key,    m, i, j, t, a) {
	m = n[key]; if (m == 0) return 0
	for (i = 1; i <= m; i++) a[i] = val[key, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((m + 1) / 2)]
}
$2 ~ /^BenchmarkSGEMMPaired\// {
	sh = $2; sub(/.*shape=/, "", sh); sub(/-[0-9]+$/, "", sh)
	if (!(sh in seen)) { seen[sh] = 1; order[++ns] = sh }
	b = $1
	add(b "gonum" SUBSEP sh, metric("gonum-GFLOP/s")); add(b "default" SUBSEP sh, metric("default-GFLOP/s"))
	add(b "dg" SUBSEP sh, metric("default/gonum"))
	add(b "bf" SUBSEP sh, metric("bf16-GFLOP/s")); add(b "bd" SUBSEP sh, metric("bf16/default"))
	add(b "ob" SUBSEP sh, metric("openblas-GFLOP/s")); add(b "direct" SUBSEP sh, metric("openblas-direct-GFLOP/s"))
	add(b "dd" SUBSEP sh, metric("default/direct")); add(b "od" SUBSEP sh, metric("openblas/direct"))
	add(b "do" SUBSEP sh, metric("default/openblas"))
}
END {
	printf "%-20s %8s %8s %8s %9s %8s %14s %13s %15s %17s %16s %9s %9s\n", "SGEMM MxNxK(opA,opB)", "gonum", "default", "bf16", "openblas", "direct", "default/gonum", "bf16/default", "default/direct", "default/openblas", "openblas/direct", "f32 peak", "bf16 peak"
	printf "%-20s %8s %8s %8s %9s %8s %14s %13s %15s %17s %16s %9s %9s\n", "", "GF/s", "GF/s", "GF/s", "GF/s", "GF/s", "(default bld)", "(default bld)", "(openblas bld)", "(openblas bld)", "(openblas bld)", "default", "bf16"
	for (s = 1; s <= ns; s++) {
		sh = order[s]
		d = median("Ddefault" SUBSEP sh); bf = median("Dbf" SUBSEP sh)
		printf "%-20s %8.1f %8.1f %8.1f %9.1f %8.1f %14.2f %13.2f %15.2f %17.2f %16.2f %8.0f%% %8.0f%%\n", sh, median("Dgonum" SUBSEP sh), d, bf, median("Oob" SUBSEP sh), median("Odirect" SUBSEP sh), median("Ddg" SUBSEP sh), median("Dbd" SUBSEP sh), median("Odd" SUBSEP sh), median("Odo" SUBSEP sh), median("Ood" SUBSEP sh), 100 * d / pk["f32"], (pk["bf16"] > 0 ? 100 * bf / pk["bf16"] : 0)
	}
}'

awk '
function metric(name,    i) { for (i = 2; i < NF; i++) if ($(i+1) == name) return $i; return "" }
function median(key,    m, i, j, t, a) {
	m = n[key]; if (m == 0) return 0
	for (i = 1; i <= m; i++) a[i] = val[key, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((m + 1) / 2)]
}
function add(key, v) { n[key]++; val[key, n[key]] = v + 0 }
/^BenchmarkVecPaired\// {
	op = $1; sub(/^BenchmarkVecPaired\//, "", op); sub(/-[0-9]+$/, "", op)
	if (!(op in seen)) { seen[op] = 1; order[++no] = op }
	add("r" SUBSEP op, metric("ref-ns/elem")); add("v" SUBSEP op, metric("vec-ns/elem")); add("s" SUBSEP op, metric("speedup"))
}
END {
	printf "\n%-18s %14s %14s %9s\n", "elementwise", "scalar ns/el", "vec ns/el", "speed-up"
	for (o = 1; o <= no; o++) { op = order[o]; printf "%-18s %14.3f %14.3f %9.2f\n", op, median("r" SUBSEP op), median("v" SUBSEP op), median("s" SUBSEP op) }
}' "$tmp/vec.txt"
