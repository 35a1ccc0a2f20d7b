package trainer

// GRPO step time split into its phases (rollout, reward, reference,
// training) with tokens/s for each, as `make bench` records them in
// BENCHMARKS.md:
//
//	go test ./trainer/ -run '^$' -bench GRPOStep -benchtime 2x -timeout 60m
//
// Two models, both randomly initialized (model.init: random) with the
// tiny BPE of testdata/sft/tiny and prompts of the SFT test corpus (~210
// tokens): "tiny" (qwen2 C=64, L=2, V=512) and "small"
// (testdata/bench/small: qwen2 C=512, L=8, V=8192). A step is 4 prompts
// (small: 2) × G = 8 rollouts of up to 64 new tokens (small: 32; a random
// model rarely stops early), reward RM-3, k3 KL against the base with
// LoRA off (LoRA r=32 α=64 on every linear layer), one epoch in
// mini-batches of 16 rollouts, each in micro-batches of one group (8
// sequences). The fractions (phase time / step time) are ratios against
// the step measured in the same run.

import (
	"context"
	"io"
	"testing"
)

func BenchmarkGRPOStep(b *testing.B) {
	for _, c := range []struct {
		name, path      string
		prompts, maxNew int
	}{
		{"tiny", "testdata/sft/tiny", 4, 64},
		{"small", "../testdata/bench/small", 2, 32},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := rlTinyConfig(b.TempDir(), "grpo")
			cfg.Model.Path, cfg.Model.Tokenizer = c.path, "testdata/sft/tiny"
			cfg.LoRA.R, cfg.LoRA.Alpha = 32, 64
			// 4 prompts per step in micro-batches of one group (8 sequences).
			cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Optim.MaxSteps = 1, c.prompts, b.N+1 // step 1 warms up (graph building)
			cfg.Rollout.G, cfg.Rollout.MaxNewTokens, cfg.Rollout.Temperature, cfg.Rollout.TopP = 8, c.maxNew, 0.6, 0.95
			cfg.PPO.Epochs, cfg.PPO.MiniBatch = 1, 16
			cfg.KL.Coef, cfg.Checkpoint.Every = 0.001, 0
			res, err := GRPO(context.Background(), cfg, RLOptions{Log: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			ms := trainMetrics(b, cfg.Run.Dir)[1:]
			if len(ms) == 0 || res.Steps != b.N+1 {
				b.Fatalf("%d steps", res.Steps)
			}
			var step float64
			phases := []struct{ key, tok, label string }{
				{"time_rollout_s", "rollout_tokens_per_s", "rollout"},
				{"time_reward_s", "", "reward"},
				{"time_ref_s", "ref_tokens_per_s", "ref"},
				{"time_train_s", "train_tokens_per_s", "train"},
			}
			sum := map[string]float64{}
			for _, m := range ms {
				step += m["time_step_s"]
				for _, p := range phases {
					sum[p.key] += m[p.key]
					if p.tok != "" {
						sum[p.tok] += m[p.tok]
					}
				}
				sum["resp_len"] += m["resp_len"]
			}
			n := float64(len(ms))
			b.ReportMetric(step/n, "s/step")
			for _, p := range phases {
				b.ReportMetric(sum[p.key]/n, p.label+"_s/step")
				b.ReportMetric(sum[p.key]/step, p.label+"_frac")
				if p.tok != "" {
					b.ReportMetric(sum[p.tok]/n, p.label+"_tok/s")
				}
			}
			b.ReportMetric(sum["resp_len"]/n, "resp_tokens")
		})
	}
}
