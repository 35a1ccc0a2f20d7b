package trainer

// SFT training throughput on the small benchmark model (testdata/bench/small:
// qwen2, C=512, L=8, Hq=8, Hkv=2, F=1536, V=8192, tied), one optimizer step
// as sft.go takes it: forward + backward over B×T tokens (loss on the last
// T/2 positions of each sequence), LoRA r=32 α=64 dropout 0.05 on every
// linear layer, global grad-norm clip 1.0 and AdamW. bench/sft/sft_bench.sh
// runs it next to a PyTorch step on the same model (sft_bench.py) and prints
// the ratio:
//
//	SFT_BENCH_MODEL=/tmp/argrl-small go test ./trainer/ -run '^$' -bench SFTStep -benchtime 5x
//
// SFT_BENCH_B and SFT_BENCH_T change the batch (default 4 × 256).

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/optim"
)

func benchEnvInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

func BenchmarkSFTStep(b *testing.B) {
	dir := os.Getenv("SFT_BENCH_MODEL")
	if dir == "" {
		b.Skip("set SFT_BENCH_MODEL to the small model directory (bench/sft/sft_bench.sh does)")
	}
	B, T := benchEnvInt(b, "SFT_BENCH_B", 4), benchEnvInt(b, "SFT_BENCH_T", 256)
	be := kernels.NewCPU()
	m, err := model.Open(dir, be, model.Options{LoRA: &model.LoRAOptions{R: 32, Alpha: 64, Dropout: 0.05, Seed: 1}, MaxLen: T})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	V := m.Config.VocabSize
	exs := make([]Example, B)
	sb := batch.StepBatch{Micro: [][]int{make([]int, B)}}
	for i := range exs {
		ex := Example{IDs: make([]int32, T), Mask: make([]bool, T), PromptLen: T / 2}
		for t := range ex.IDs {
			ex.IDs[t] = int32((i*7919 + t*104729 + 13) % V)
			if t >= T/2 {
				ex.Mask[t] = true
				ex.Targets++
			}
		}
		exs[i], sb.Micro[0][i] = ex, i
	}
	params := m.Trainable()
	opt, err := optim.NewAdamW(be, params, adamWConfig(config.Default().Optim))
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Free()
	cfg := config.Default()
	cfg.Optim.BatchSize = B
	s, one := &Setup{Config: cfg, Model: m, Backend: be}, &team{comm: dist.Single(), shares: 1, per: 1}
	step := func() {
		if _, _, err := sftStep(one, s, params, exs, sb); err != nil {
			b.Fatal(err)
		}
		if _, err := optim.ClipGradNorm(be, params, 1.0); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(1e-4); err != nil {
			b.Fatal(err)
		}
	}
	step() // build and compile the graph outside the timer
	b.ResetTimer()
	var times []float64
	for range b.N {
		t0 := time.Now()
		step()
		times = append(times, time.Since(t0).Seconds())
	}
	b.ReportMetric(float64(B*T)/median(times), "tokens/s")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
