package trainer

// Packing against today's padding (bench/pack/bench.sh, in `make bench`):
// tokens/s of an SFT epoch and of a GRPO step's training phase on
// log-normal sequence lengths (median 450, σ 0.6, clamped to [16, 2048]),
// the same records and steps either way:
//
//	PACK_BENCH_MODEL=DIR PACK_BENCH_WORK=sft|grpo PACK_BENCH_PACK=0|1 \
//	    go test ./trainer/ -run '^$' -bench '^BenchmarkPacking$' -benchtime 1x
//
//   - sft: PACK_BENCH_N records (default 32) in steps of PACK_BENCH_B (8)
//     from the Batcher with bucket_window 64 (today's length-bucketed
//     batches), loss on the second half of each sequence; one step =
//     sftStep (the code path of train sft) + clip + AdamW. Padded: one
//     micro-batch of B rows per step; packed: micro-batches of at most
//     PACK_BENCH_TOKENS (8192) graph tokens.
//   - grpo: PACK_BENCH_P prompts (2) × G 8 rollouts in group order, each
//     rollout a log-normal sequence with its second half the response; the
//     training phase cuts them as the update does (ranks.Team.Batches: rows
//     of batch_size·G = 8, or the token budget) and runs model.Step's
//     forward and backward with a per-token gradient on the response
//     (the objective's host arithmetic, a few µs per token, excluded),
//     then clip and AdamW.
//
// It reports tokens/s (real tokens over the whole epoch or phase) and
// pad-% (padding among the token rows the graphs computed).

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/ranks"
)

// packBenchLengths draws n log-normal lengths (median 450, σ 0.6) in
// [16, maxLen].
func packBenchLengths(n, maxLen int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 450))
	out := make([]int, n)
	for i := range out {
		out[i] = min(maxLen, max(16, int(450*math.Exp(0.6*r.NormFloat64()))))
	}
	return out
}

func BenchmarkPacking(b *testing.B) {
	dir := os.Getenv("PACK_BENCH_MODEL")
	if dir == "" {
		b.Skip("set PACK_BENCH_MODEL (bench/pack/bench.sh does)")
	}
	work, pack := os.Getenv("PACK_BENCH_WORK"), os.Getenv("PACK_BENCH_PACK") == "1"
	budget := benchEnvInt(b, "PACK_BENCH_TOKENS", 8192)
	const maxLen = 2048
	if st, err := filepath.Glob(filepath.Join(dir, "*.safetensors")); err == nil && len(st) == 0 {
		tmp := b.TempDir() // a config.json only (testdata/bench/small): random weights
		if err := WriteRandomModel(dir, tmp, 7); err != nil {
			b.Fatal(err)
		}
		dir = tmp
	}
	be := kernels.NewCPU()
	m, err := model.Open(dir, be, model.Options{LoRA: &model.LoRAOptions{R: 32, Alpha: 64, Dropout: 0.05, Seed: 1, Targets: model.AllTargets},
		MaxLen: maxLen, Pack: pack, Compute: os.Getenv("PACK_BENCH_COMPUTE")})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	params := m.Trainable()
	opt, err := optim.NewAdamW(be, params, adamWConfig(config.Default().Optim))
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Free()
	tm := ranks.One()
	if pack {
		tm.UseTokens(budget, m.GraphTokens)
	}
	V := m.Config.VocabSize
	seq := func(i, n int) []int32 {
		s := make([]int32, n)
		for t := range s {
			s[t] = int32((i*7919 + t*104729 + 13) % V)
		}
		return s
	}
	update := func() {
		if _, err := optim.ClipGradNorm(be, params, 1.0); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(1e-5); err != nil {
			b.Fatal(err)
		}
	}
	plan := os.Getenv("PACK_BENCH_PLAN_ONLY") == "1" // count the graphs' token rows, run nothing
	var run func() (tokens, rows int)
	switch work {
	case "sft":
		n, B := benchEnvInt(b, "PACK_BENCH_N", 32), benchEnvInt(b, "PACK_BENCH_B", 8)
		lens := packBenchLengths(n, maxLen, 1)
		exs := make([]Example, n)
		for i, l := range lens {
			ex := Example{IDs: seq(i, l), Mask: make([]bool, l), PromptLen: l / 2}
			for t := l / 2; t < l; t++ {
				ex.Mask[t] = true
				ex.Targets++
			}
			exs[i] = ex
		}
		cfg := config.Default()
		cfg.Optim.BatchSize = B
		s := &Setup{Config: cfg, Model: m, Backend: be}
		bt, err := batch.New(lens, B, 1, 64, 1)
		if err != nil {
			b.Fatal(err)
		}
		run = func() (tokens, rows int) {
			if err := bt.Seek(0, 0); err != nil {
				b.Fatal(err)
			}
			for range bt.StepsPerEpoch() {
				sb := bt.Next()
				recs := sb.Records()
				rl := make([]int, len(recs))
				for k, i := range recs {
					rl[k] = lens[i]
				}
				for _, c := range tm.Batches(tm.DealTokens(rl, B), B, rl) {
					ls := make([]int, len(c.At))
					for k, at := range c.At {
						ls[k] = rl[at]
					}
					rows += m.GraphTokens(ls)
					tokens += sumInts(ls)
				}
				if plan {
					continue
				}
				_, _, err := sftStep(tm, s, params, exs, sb)
				if err != nil {
					b.Fatal(err)
				}
				update()
			}
			return tokens, rows
		}
	case "grpo":
		const G = 8
		P := benchEnvInt(b, "PACK_BENCH_P", 2)
		lens := packBenchLengths(P*G, maxLen, 2)
		seqs := make([][]int32, len(lens))
		for i, l := range lens {
			seqs[i] = seq(i, l)
		}
		run = func() (tokens, rows int) {
			m.ZeroGrad()
			for _, c := range tm.Batches(make([]int, len(lens)), G, lens) {
				batchSeqs := make([][]int32, len(c.At))
				ls := make([]int, len(c.At))
				for k, at := range c.At {
					batchSeqs[k], ls[k] = seqs[at], lens[at]
					tokens += lens[at]
				}
				rows += m.GraphTokens(ls)
				if plan {
					continue
				}
				err := m.Step(batchSeqs, func(o *model.Outputs) (*model.Grads, error) {
					g := &model.Grads{LogProbs: make([][]float32, len(o.LogProbs))}
					for k, lp := range o.LogProbs {
						g.LogProbs[k] = make([]float32, len(lp))
						for t := len(lp) / 2; t < len(lp); t++ {
							g.LogProbs[k][t] = -1 / float32(len(lens)*len(lp))
						}
					}
					return g, nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			if !plan {
				update()
			}
			return tokens, rows
		}
	default:
		b.Fatalf("PACK_BENCH_WORK=%q: want sft or grpo", work)
	}
	if plan {
		tokens, rows := run()
		b.ReportMetric(float64(tokens), "tokens")
		b.ReportMetric(100*(1-float64(tokens)/float64(rows)), "pad-%")
		return
	}
	run() // build and compile the graphs outside the timer
	b.ResetTimer()
	var times []float64
	var tokens, rows int
	for range b.N {
		t0 := time.Now()
		tokens, rows = run()
		times = append(times, time.Since(t0).Seconds())
	}
	b.ReportMetric(float64(tokens)/median(times), "tokens/s")
	b.ReportMetric(100*(1-float64(tokens)/float64(rows)), "pad-%")
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
