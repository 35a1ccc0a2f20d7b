// Command gpucheck compares two runs of the same config, one on the CPU
// backend and one on CUDA, for make gpu-check (kernels/cuda/gpu-check.sh):
//
//	go run ./cmd/gpucheck [-tol 0.05] CPU_RUN GPU_RUN
//
// It reads RUN/metrics.jsonl of both, prints the per-step losses side by
// side and every throughput key (…tokens_per_s…) of both runs, and exits 1
// unless the runs cover the same steps and the losses agree: the first step
// within tol/10 (the rollouts start from the same weights and seeds), and
// the mean absolute difference within tol·mean|loss| (float32 differences
// may flip a sampled token later, so trajectories may drift a little).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/trainer/metrics"
)

func main() {
	tol := flag.Float64("tol", 0.05, "relative tolerance on the mean loss difference")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: gpucheck [-tol 0.05] CPU_RUN GPU_RUN")
		os.Exit(2)
	}
	cpu, err := trainLines(flag.Arg(0))
	if err == nil {
		var gpu map[int]metrics.Metrics
		if gpu, err = trainLines(flag.Arg(1)); err == nil {
			err = compare(os.Stdout, cpu, gpu, *tol)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

// trainLines returns the "train" lines of RUN/metrics.jsonl by step.
func trainLines(run string) (map[int]metrics.Metrics, error) {
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		return nil, err
	}
	out := map[int]metrics.Metrics{}
	for _, r := range recs {
		if r.Kind == "train" {
			out[r.Step] = r.Values
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no train lines", run)
	}
	return out, nil
}

// compare prints the table and returns an error when the runs disagree.
func compare(w *os.File, cpu, gpu map[int]metrics.Metrics, tol float64) error {
	var steps []int
	for s := range cpu {
		if _, ok := gpu[s]; !ok {
			return fmt.Errorf("step %d is in the CPU run only", s)
		}
		steps = append(steps, s)
	}
	if len(gpu) != len(cpu) {
		return fmt.Errorf("the GPU run has %d train steps, the CPU run %d", len(gpu), len(cpu))
	}
	sort.Ints(steps)
	fmt.Fprintf(w, "%6s %14s %14s %10s\n", "step", "loss cpu", "loss cuda", "|diff|")
	sumDiff, sumAbs := 0.0, 0.0
	for _, s := range steps {
		lc, okc := cpu[s]["loss"]
		lg, okg := gpu[s]["loss"]
		if !okc || !okg {
			return fmt.Errorf("step %d: no loss", s)
		}
		d := math.Abs(lc - lg)
		fmt.Fprintf(w, "%6d %14.6g %14.6g %10.3g\n", s, lc, lg, d)
		sumDiff += d
		sumAbs += math.Abs(lc)
	}
	first := steps[0]
	lc, lg := cpu[first]["loss"], gpu[first]["loss"]
	var errs []string
	if math.Abs(lc-lg) > tol/10*math.Max(math.Abs(lc), 1e-3) {
		errs = append(errs, fmt.Sprintf("first step loss differs: cpu %g, cuda %g (tolerance %g relative)", lc, lg, tol/10))
	}
	n := float64(len(steps))
	if sumDiff/n > tol*math.Max(sumAbs/n, 1e-3) {
		errs = append(errs, fmt.Sprintf("mean |loss diff| %.3g > %g × mean |loss| %.3g", sumDiff/n, tol, sumAbs/n))
	}
	for _, k := range throughputKeys(cpu, gpu) {
		c, g := mean(cpu, k), mean(gpu, k)
		fmt.Fprintf(w, "%-24s cpu %12.1f   cuda %12.1f   speedup %.1f×\n", k, c, g, g/c)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	fmt.Fprintf(w, "losses agree over %d steps (mean |diff| %.3g)\n", len(steps), sumDiff/n)
	return nil
}

func throughputKeys(runs ...map[int]metrics.Metrics) []string {
	seen := map[string]bool{}
	for _, r := range runs {
		for _, m := range r {
			for k := range m {
				if strings.Contains(k, "tokens_per_s") {
					seen[k] = true
				}
			}
		}
	}
	var ks []string
	for k := range seen {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func mean(r map[int]metrics.Metrics, k string) float64 {
	s, n := 0.0, 0
	for _, m := range r {
		if v, ok := m[k]; ok {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}
