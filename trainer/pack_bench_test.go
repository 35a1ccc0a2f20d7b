package trainer

// Packing against today's padding (bench/pack/bench.sh, in `make bench`):
// tokens/s of an SFT epoch and of a GRPO step's training phase on
// log-normal sequence lengths (median 450, σ 0.6, clamped to [16, 2048]),
// the same records and steps either way:
//
//	PACK_BENCH_MODEL=DIR PACK_BENCH_WORK=sft|grpo \
//	    go test ./trainer/ -run '^$' -bench '^BenchmarkPacking$' -benchtime 1x
//
// Both layouts run in one process, alternating PACK_BENCH_REPS (2) times
// each after a warm-up run each, so that a load that comes and goes
// weighs on both alike; the speed-up is the ratio of their median times.
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
// pad-% (padding among the token rows the graphs computed) of each, and
// the speed-up; PACK_BENCH_PLAN_ONLY=1 counts the padding only.

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

// packRunner opens the model on dir (padded or packed rows) and returns
// one run of the workload (its real tokens and the token rows its graphs
// computed; with plan, counted without running) and a closer.
func packRunner(b *testing.B, dir, work string, pack, plan bool, budget int) (run func() (tokens, rows int), done func()) {
	const maxLen = 2048
	be := kernels.NewCPU()
	m, err := model.Open(dir, be, model.Options{LoRA: &model.LoRAOptions{R: 32, Alpha: 64, Dropout: 0.05, Seed: 1, Targets: model.AllTargets},
		MaxLen: maxLen, Pack: pack, Compute: os.Getenv("PACK_BENCH_COMPUTE")})
	if err != nil {
		b.Fatal(err)
	}
	params := m.Trainable()
	opt, err := optim.NewAdamW(be, params, adamWConfig(config.Default().Optim))
	if err != nil {
		b.Fatal(err)
	}
	done = func() { opt.Free(); m.Close() }
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
	return run, done
}

func BenchmarkPacking(b *testing.B) {
	dir := os.Getenv("PACK_BENCH_MODEL")
	if dir == "" {
		b.Skip("set PACK_BENCH_MODEL (bench/pack/bench.sh does)")
	}
	work, plan := os.Getenv("PACK_BENCH_WORK"), os.Getenv("PACK_BENCH_PLAN_ONLY") == "1"
	budget, reps := benchEnvInt(b, "PACK_BENCH_TOKENS", 8192), benchEnvInt(b, "PACK_BENCH_REPS", 2)
	if st, err := filepath.Glob(filepath.Join(dir, "*.safetensors")); err == nil && len(st) == 0 {
		tmp := b.TempDir() // a config.json only (testdata/bench/small): random weights
		if err := WriteRandomModel(dir, tmp, 7); err != nil {
			b.Fatal(err)
		}
		dir = tmp
	}
	names := [2]string{"padded", "packed"}
	var runs [2]func() (int, int)
	for i, pack := range []bool{false, true} {
		run, done := packRunner(b, dir, work, pack, plan, budget)
		defer done()
		runs[i] = run
	}
	var tokens, rows [2]int
	if plan {
		for i := range runs {
			tokens[i], rows[i] = runs[i]()
			b.ReportMetric(100*(1-float64(tokens[i])/float64(rows[i])), names[i]+"-pad-%")
		}
		return
	}
	for _, run := range runs {
		run() // build and compile the graphs outside the timer
	}
	b.ResetTimer()
	// The layouts alternate, reps times each, so that a load that comes
	// and goes on a shared machine weighs on both alike.
	var times [2][]float64
	for range b.N * reps {
		for i, run := range runs {
			t0 := time.Now()
			tokens[i], rows[i] = run()
			times[i] = append(times[i], time.Since(t0).Seconds())
		}
	}
	for i := range runs {
		b.ReportMetric(float64(tokens[i])/median(times[i]), names[i]+"-tokens/s")
		b.ReportMetric(100*(1-float64(tokens[i])/float64(rows[i])), names[i]+"-pad-%")
	}
	b.ReportMetric(median(times[0])/median(times[1]), "speedup")
}

func sumInts(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
