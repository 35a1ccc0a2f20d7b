# Sourced by the three reproduce scripts (make reproduce, reproduce-001,
# reproduce-r2if) from the repository root, after they set NAME (the make
# target), GO and OUT: the lap log, the build, the job pool and the closing
# report with the run's wall and CPU time.

T0=$SECONDS
lap() { printf '[%s %5ds] %s\n' "$NAME" $((SECONDS - T0)) "$*" >&2; }

# start: build bin/train and empty OUT.
start() {
	lap "build bin/train"
	CGO_ENABLED=0 $GO build -o bin/train ./cmd/train
	rm -rf "$OUT"
	mkdir -p "$OUT"
}

# spawn CMD...: run CMD in the background, at most JOBS at once. A job marks
# its own failure by leaving OUT/failed.DRAW.JOB (set -e does not apply
# inside a command list ending in ||, so jobs exit on failure explicitly).
spawn() {
	while (($(jobs -rp | wc -l) >= JOBS)); do
		wait -n || true
	done
	"$@" &
}

# wait_jobs: wait for every job; fail, naming them, if any failed.
wait_jobs() {
	wait
	if compgen -G "$OUT/failed.*" >/dev/null; then
		echo "make $NAME: failed jobs (draw.job): $(cd "$OUT" && echo failed.* | sed 's/failed\.//g'); see the logs above and $OUT/draw-*/runs/*.log" >&2
		exit 1
	fi
}

# finish REPORT-FLAGS...: train report's tables and claims over OUT, then the
# run's wall and CPU time (OUT/report.txt, OUT/times.txt).
finish() {
	lap "tables and claims (train report $*)"
	echo
	bin/train report "$@" "$OUT" | tee "$OUT/report.txt"
	echo
	times >"$OUT/times.txt"
	local cpu
	cpu=$(tail -n 1 "$OUT/times.txt")
	echo "make $NAME: $((SECONDS - T0)) s wall, CPU ${cpu/ / user + } sys, on $(nproc) cores (load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/report.txt"
}
