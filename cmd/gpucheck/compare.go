package main

// gpucheck compare [-tol 0.05] [-out F.json] [-name NAME] A_RUN B_RUN
//
// Two runs of the same config on two backends (the CPU and a GPU, or the
// CPU and the emulator): it reads RUN/metrics.jsonl of both, prints the
// per-step losses side by side and every throughput key (…tokens_per_s…),
// and fails unless the runs cover the same steps and the losses agree: the
// first step within tol/10 (the rollouts start from the same weights and
// seeds), and the mean absolute difference within tol·mean|loss| (float32
// differences may flip a sampled token later, so trajectories may drift a
// little).

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/trainer/metrics"
)

func runCompare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	tol := fs.Float64("tol", 0.05, "relative tolerance on the mean loss difference")
	out := fs.String("out", "", "write the summary row to this JSON file")
	name := fs.String("name", "loss comparison", "the check's name in the summary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("usage: gpucheck compare [-tol 0.05] [-out F.json] A_RUN B_RUN")
	}
	a, err := trainLines(fs.Arg(0))
	if err == nil {
		var b map[int]metrics.Metrics
		if b, err = trainLines(fs.Arg(1)); err == nil {
			var sum string
			sum, err = compare(os.Stdout, a, b, *tol)
			row := Row{Check: *name, Value: sum, Detail: fmt.Sprintf("%s vs %s, tol %g", fs.Arg(0), fs.Arg(1), *tol), Status: statusOf(err)}
			if err != nil {
				row.Detail = err.Error()
			}
			if werr := writeRows(*out, row); werr != nil {
				return werr
			}
		}
	}
	return err
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

// compare prints the table and returns a one-line summary, and an error
// when the runs disagree.
func compare(w io.Writer, cpu, gpu map[int]metrics.Metrics, tol float64) (string, error) {
	var steps []int
	for s := range cpu {
		if _, ok := gpu[s]; !ok {
			return "", fmt.Errorf("step %d is in the first run only", s)
		}
		steps = append(steps, s)
	}
	if len(gpu) != len(cpu) {
		return "", fmt.Errorf("the second run has %d train steps, the first %d", len(gpu), len(cpu))
	}
	sort.Ints(steps)
	fmt.Fprintf(w, "%6s %14s %14s %10s\n", "step", "loss A", "loss B", "|diff|")
	sumDiff, sumAbs := 0.0, 0.0
	for _, s := range steps {
		lc, okc := cpu[s]["loss"]
		lg, okg := gpu[s]["loss"]
		if !okc || !okg {
			return "", fmt.Errorf("step %d: no loss", s)
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
		errs = append(errs, fmt.Sprintf("first step loss differs: %g vs %g (tolerance %g relative)", lc, lg, tol/10))
	}
	n := float64(len(steps))
	if sumDiff/n > tol*math.Max(sumAbs/n, 1e-3) {
		errs = append(errs, fmt.Sprintf("mean |loss diff| %.3g > %g × mean |loss| %.3g", sumDiff/n, tol, sumAbs/n))
	}
	for _, k := range throughputKeys(cpu, gpu) {
		c, g := mean(cpu, k), mean(gpu, k)
		fmt.Fprintf(w, "%-24s A %12.1f   B %12.1f   B/A %.2f×\n", k, c, g, g/c)
	}
	sum := fmt.Sprintf("%d steps, first |Δloss| %.2g, mean %.2g", len(steps), math.Abs(lc-lg), sumDiff/n)
	if len(errs) > 0 {
		return sum, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	fmt.Fprintf(w, "losses agree over %d steps (mean |diff| %.3g)\n", len(steps), sumDiff/n)
	return sum, nil
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
