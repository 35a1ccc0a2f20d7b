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
// SFT_BENCH_B and SFT_BENCH_T change the batch (default 4 × 256);
// SFT_BENCH_COMPUTE and SFT_BENCH_RECOMPUTE set model.compute (f32, bf16)
// and model.recompute (none, layer); SFT_BENCH_PLAN_ONLY=1 compiles the
// step's graph and reports its memory plan without running a step. Besides
// tokens/s it reports the step's matmul GFLOP/s (sftFLOPs) and the
// activation memory of its plan (graph.Stats.ActivationBytes) in MB.

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/ranks"
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
	m, err := model.Open(dir, be, model.Options{LoRA: &model.LoRAOptions{R: 32, Alpha: 64, Dropout: 0.05, Seed: 1}, MaxLen: T,
		Compute: os.Getenv("SFT_BENCH_COMPUTE"), Recompute: os.Getenv("SFT_BENCH_RECOMPUTE")})
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
	plan, err := m.TrainPlan(B, T)
	if err != nil {
		b.Fatal(err)
	}
	if os.Getenv("SFT_BENCH_PLAN_ONLY") == "1" {
		b.ReportMetric(float64(plan.ActivationBytes())/1e6, "activation-MB")
		return
	}
	params := m.Trainable()
	opt, err := optim.NewAdamW(be, params, adamWConfig(config.Default().Optim))
	if err != nil {
		b.Fatal(err)
	}
	defer opt.Free()
	cfg := config.Default()
	cfg.Optim.BatchSize = B
	s, one := &Setup{Config: cfg, Model: m, Backend: be}, ranks.One()
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
	b.ReportMetric(sftFLOPs(m.Config, 32, T)*float64(B*T)/median(times)/1e9, "GFLOP/s")
	b.ReportMetric(float64(plan.ActivationBytes())/1e6, "activation-MB") // after ResetTimer, which clears metrics
}

// sftFLOPs is the matmul work of one SFT step per token, in floating-point
// operations (a multiply-add counts 2), with LoRA rank r on every linear
// layer and sequences of T tokens: per linear layer of in → out features
// 2·in·out forward and 2·in·out for ∂x (the weight is frozen), the LoRA
// branch 2·r·(in+out) forward and 4·r·(in+out) backward; causal attention
// (T/2 keys on average) 2·D·T·Hq forward and 5·D·T·Hq backward (scores
// recomputed); the LM head 2·C·V forward and 2·C·V for ∂x.
func sftFLOPs(c *model.Config, r, T int) float64 {
	C, F, D := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.HeadDim)
	q, kv := float64(c.NumHeads)*D, float64(c.NumKVHeads)*D
	layer := 0.0
	for _, l := range [][2]float64{{C, q}, {C, kv}, {C, kv}, {q, C}, {C, F}, {C, F}, {F, C}} {
		layer += 4*l[0]*l[1] + 6*float64(r)*(l[0]+l[1])
	}
	layer += 7 * D * float64(T) * float64(c.NumHeads)
	return float64(c.NumLayers)*layer + 4*C*float64(c.VocabSize)
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
