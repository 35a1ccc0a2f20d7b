#!/bin/sh
# SGEMM GFLOP/s of the CPU backend in its default build (pure-Go gonum BLAS)
# and its openblas-tagged build, next to OpenBLAS's sgemm called directly,
# as ratios. Run from the repository root:  sh kernels/bench.sh
# Needs libopenblas-dev (the openblas build links -lopenblas).
#
# The openblas-tagged backend and direct OpenBLAS are timed in the same
# process, alternating call by call (BenchmarkSGEMMPaired), so load from
# other processes affects both alike; the default build is a separate run.
# COUNT (default 3) runs per benchmark; the table shows medians.
set -eu
COUNT=${COUNT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "kernels/bench.sh: default build (pure-Go gonum BLAS) ..." >&2
go test -run '^$' -bench '^BenchmarkSGEMM$' -count "$COUNT" ./kernels/ >"$tmp/default.txt"
echo "kernels/bench.sh: -tags openblas build (backend vs direct OpenBLAS, interleaved) ..." >&2
if ! CGO_LDFLAGS="${CGO_LDFLAGS:-} -lopenblas" go test -tags openblas -run '^$' -bench '^BenchmarkSGEMMPaired$' -count "$COUNT" ./kernels/ >"$tmp/openblas.txt" 2>"$tmp/openblas.err"; then
	cat "$tmp/openblas.err" "$tmp/openblas.txt" >&2
	echo "kernels/bench.sh: the openblas build failed; is libopenblas-dev installed?" >&2
	exit 1
fi

cat "$tmp/default.txt" "$tmp/openblas.txt" | awk '
function metric(name,    i) { for (i = 2; i < NF; i++) if ($(i+1) == name) return $i; return "" }
function add(key, v) { n[key]++; val[key, n[key]] = v + 0 }
function shapeof(field,    s) { s = field; sub(/.*shape=/, "", s); sub(/-[0-9]+$/, "", s); return s }
/^BenchmarkSGEMM\/impl=cpu-gonum\// {
	sh = shapeof($1); add("gonum" SUBSEP sh, metric("GFLOP/s"))
	if (!(sh in seen)) { seen[sh] = 1; order[++ns] = sh }
}
/^BenchmarkSGEMMPaired\// {
	sh = shapeof($1)
	add("ob" SUBSEP sh, metric("backend-GFLOP/s")); add("direct" SUBSEP sh, metric("direct-GFLOP/s"))
	add("ratio" SUBSEP sh, metric("backend/direct"))
	if (!(sh in seen)) { seen[sh] = 1; order[++ns] = sh }
}
function median(key,    m, i, j, t, a) {
	m = n[key]; if (m == 0) return 0
	for (i = 1; i <= m; i++) a[i] = val[key, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((m + 1) / 2)]
}
END {
	printf "%-16s %14s %16s %16s %16s %15s\n", "SGEMM MxNxK", "default GF/s", "openblas GF/s", "direct OB GF/s", "openblas/direct", "default/direct"
	for (s = 1; s <= ns; s++) {
		sh = order[s]; g = median("gonum" SUBSEP sh); d = median("direct" SUBSEP sh)
		printf "%-16s %14.1f %16.1f %16.1f %16.3f %15.3f\n", sh, g, median("ob" SUBSEP sh), d, median("ratio" SUBSEP sh), (d > 0 ? g / d : 0)
	}
}'
