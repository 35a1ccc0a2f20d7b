// Command bench times the rollout engine: new tokens per second for a
// batch of B sequences (B/g prompts of P tokens × g samples), N new tokens
// each (no stop ids, so every sequence runs N steps), sampled at T=0.6,
// top-p 0.95 (docs/contracts.md §5).
// bench.sh runs it next to bench.py, the PyTorch reference doing the same
// generation, and prints the ratio.
//
//	go run -tags openblas ./bench/rollout -model DIR -batch 8 [-g 1] -prompt 32 -new 64 [-lora 32] [-merge] [-reps 3]
//
// Prompts are ids[b][t] = 4 + (b·131 + t·71) mod (V−4), the same formula as
// bench.py. Output: one JSON line {"model","batch","prompt","new","lora",
// "merge","tokens_per_s","seconds","reps"} with the best of -reps timed
// calls (after one untimed warm-up call that sizes the cache).
//
// -dump FILE writes the greedy ids and log-probs of the first two prompts
// (JSON), which bench.py --check compares with its own generation to show
// the reference computes the same function.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/rollout"
)

func main() {
	dir := flag.String("model", "", "model directory")
	batch := flag.Int("batch", 8, "sequences decoded together: batch/g prompts × g samples")
	g := flag.Int("g", 1, "samples per prompt (each prompt prefilled once, forked g times)")
	plen := flag.Int("prompt", 32, "prompt tokens")
	nnew := flag.Int("new", 64, "new tokens per prompt")
	lora := flag.Int("lora", 0, "attach fresh LoRA adapters of this rank on every linear layer (0: none)")
	merge := flag.Bool("merge", false, "merge the LoRA adapters while generating")
	reps := flag.Int("reps", 3, "timed calls (best kept)")
	dump := flag.String("dump", "", "write greedy ids/log-probs of 2 prompts to this JSON file and exit")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the timed calls")
	compute := flag.String("compute", "f32", "matmul arithmetic: f32 or bf16 (model.Options.Compute)")
	flag.Parse()
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*dir, *batch, *g, *plen, *nnew, *lora, *merge, *reps, *dump, *compute); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func prompts(B, P, V int) []rollout.Prompt {
	out := make([]rollout.Prompt, B)
	for b := range out {
		ids := make([]int32, P)
		for t := range ids {
			ids[t] = int32(4 + (b*131+t*71)%(V-4))
		}
		out[b] = rollout.Prompt{ID: fmt.Sprint(b), IDs: ids}
	}
	return out
}

func run(dir string, B, G, P, N, lora int, merge bool, reps int, dump, compute string) error {
	if dir == "" {
		return fmt.Errorf("-model is required")
	}
	if G < 1 || B%G != 0 {
		return fmt.Errorf("-batch %d is not a multiple of -g %d", B, G)
	}
	o := model.Options{MaxLen: P + N, Compute: compute}
	if lora > 0 {
		l := model.DefaultLoRA()
		l.R, l.Alpha = lora, float64(2*lora)
		o.LoRA = l
	}
	m, err := model.Open(dir, kernels.NewCPU(), o)
	if err != nil {
		return err
	}
	defer m.Close()
	e, err := rollout.New(m, rollout.Options{Batch: B, MergeLoRA: merge})
	if err != nil {
		return err
	}
	defer e.Close()
	ctx := context.Background()
	ps := prompts(B/G, P, m.Config.VocabSize)
	if dump != "" {
		out, err := e.Greedy(ctx, ps[:min(2, B)], rollout.Params{MaxNewTokens: N})
		if err != nil {
			return err
		}
		type row struct {
			Prompt   []int32   `json:"prompt"`
			IDs      []int32   `json:"ids"`
			LogProbs []float32 `json:"logprobs"`
		}
		var rows []row
		for i, s := range out {
			rows = append(rows, row{ps[i].IDs, s.IDs, s.LogProbs})
		}
		b, _ := json.Marshal(rows)
		return os.WriteFile(dump, b, 0o644)
	}
	p := rollout.Params{G: G, Temperature: 0.6, TopP: 0.95, MaxNewTokens: N, Seed: 1}
	if _, err := e.Generate(ctx, ps, p); err != nil { // warm-up: sizes the cache
		return err
	}
	best := time.Duration(1 << 62)
	var bestSt rollout.Stats
	for r := range reps {
		p.Seed = uint64(r + 2)
		st0 := e.Stats()
		t0 := time.Now()
		gs, err := e.Generate(ctx, ps, p)
		if err != nil {
			return err
		}
		el := time.Since(t0)
		for _, g := range gs {
			for _, s := range g.Samples {
				if n := len(s.IDs); n != N {
					return fmt.Errorf("prompt %s: %d new tokens, want %d", g.ID, n, N)
				}
			}
		}
		if el < best {
			best = el
			st := e.Stats()
			bestSt = rollout.Stats{Prefill: st.Prefill - st0.Prefill, Decode: st.Decode - st0.Decode}
		}
	}
	line, _ := json.Marshal(map[string]any{"model": filepath.Base(dir), "batch": B, "g": G, "prompt": P, "new": N,
		"lora": lora, "merge": merge, "tokens_per_s": float64(B*N) / best.Seconds(), "seconds": best.Seconds(),
		"reps": reps, "compute": compute, "prefill_s": bestSt.Prefill.Seconds(), "decode_s": bestSt.Decode.Seconds(), "gomaxprocs": runtime.GOMAXPROCS(0), "backend": kernels.NewCPU().Name()})
	fmt.Println(string(line))
	return nil
}
