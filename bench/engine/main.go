// Command engine times one rollout workload through the engine's stable
// API (model.Open, rollout.New, Engine.Generate), so that bench.sh can
// build this same file against today's engine and against an older
// commit's and compare the two in one run.
//
//	go run ./bench/engine -model DIR -prompts 8 -g 8 -batch 64 -prompt 128 -new 128 [-stops 0] [-compute bf16] [-reps 1]
//
// Prompts are ids[b][t] = 4 + (b·131 + t·71) mod (V−4) (bench/rollout's
// formula). Sampling at T = 0.6, top-p 0.95. With -stops k the ids 4..4+k−1
// end a sample (with the bench's random weights the tokens are spread over
// the vocabulary, so responses end at mixed lengths, capped at -new); the
// lengths' mean, median, 90th percentile and maximum are printed. Output:
// one JSON line with the best of -reps timed calls after an untimed
// warm-up call: new tokens per second of the whole call (prefill
// included), and the process's peak resident memory (VmHWM).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/rollout"
)

func main() {
	dir := flag.String("model", "", "model directory")
	np := flag.Int("prompts", 8, "prompts")
	g := flag.Int("g", 8, "samples per prompt")
	batch := flag.Int("batch", 64, "rollout.Options.Batch (sequences at once)")
	plen := flag.Int("prompt", 128, "prompt tokens")
	nnew := flag.Int("new", 128, "most new tokens per sample")
	stops := flag.Int("stops", 0, "stop ids 4..4+k-1 (0: none, every sample runs -new tokens)")
	compute := flag.String("compute", "bf16", "model.Options.Compute")
	reps := flag.Int("reps", 1, "timed calls (best kept)")
	label := flag.String("label", "", "a name for this engine in the output")
	flag.Parse()
	if err := run(*dir, *np, *g, *batch, *plen, *nnew, *stops, *compute, *reps, *label); err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		os.Exit(1)
	}
}

func run(dir string, np, G, B, P, N, stops int, compute string, reps int, label string) error {
	if dir == "" {
		return fmt.Errorf("-model is required")
	}
	m, err := model.Open(dir, kernels.NewCPU(), model.Options{MaxLen: P + N, Compute: compute})
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := rollout.New(m, rollout.Options{Batch: B, MaxLen: P + N})
	if err != nil {
		return err
	}
	defer e.Close()
	V := m.Config.VocabSize
	ps := make([]rollout.Prompt, np)
	for b := range ps {
		ids := make([]int32, P)
		for t := range ids {
			ids[t] = int32(4 + (b*131+t*71)%(V-4))
		}
		ps[b] = rollout.Prompt{ID: fmt.Sprint(b), IDs: ids}
	}
	p := rollout.Params{G: G, Temperature: 0.6, TopP: 0.95, MaxNewTokens: N, Seed: 1}
	for i := range stops {
		p.StopIDs = append(p.StopIDs, int32(4+i))
	}
	ctx := context.Background()
	if _, err := e.Generate(ctx, ps, p); err != nil { // warm-up: sizes the cache, packs weights
		return err
	}
	best, bestTok := time.Duration(1<<62), 0
	var lens []int
	for r := range reps {
		p.Seed = uint64(r + 2)
		t0 := time.Now()
		gs, err := e.Generate(ctx, ps, p)
		if err != nil {
			return err
		}
		dt := time.Since(t0)
		tok := 0
		var ls []int
		for _, g := range gs {
			for _, s := range g.Samples {
				tok += len(s.IDs)
				ls = append(ls, len(s.IDs))
			}
		}
		if dt < best {
			best, bestTok, lens = dt, tok, ls
		}
	}
	slices.Sort(lens)
	out := map[string]any{"label": label, "model": dir, "prompts": np, "g": G, "batch": B, "prompt": P, "new": N, "stops": stops,
		"compute": compute, "tokens": bestTok, "seconds": best.Seconds(), "tokens_per_s": float64(bestTok) / best.Seconds(),
		"len_mean": float64(bestTok) / float64(len(lens)), "len_p50": lens[len(lens)/2], "len_p90": lens[len(lens)*9/10], "len_max": lens[len(lens)-1],
		"peak_rss_mib": peakRSS(), "reps": reps}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// peakRSS is VmHWM from /proc/self/status in MiB (0 where unavailable).
func peakRSS() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}
