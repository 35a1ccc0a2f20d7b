package trainer

import (
	"os"
	"testing"
)

// ρ ≡ 1 at a mid-size shape: the 28M-parameter bench model
// (testdata/bench/small: qwen2 C = 512, 8 layers, 8 heads over 2 KV
// heads, F = 1536, V = 8192; random weights), GRPO with G = 8 rollouts of
// up to 32 tokens for 2 prompts per step, LoRA r = 32 on every linear
// layer. On the CPU backend the training forward of the first mini-batch
// reproduces the sampler's log-probs bit for bit, so ratio_dev_first is
// exactly 0 at every step (π_old from the sampler, the default); with
// tis.cap the recomputed π_old equals the sampler's too
// (rollout_train_kl 0, the largest ratio 1). Run by `make test-long`.
func TestLongRatioExactMidSize(t *testing.T) {
	if os.Getenv("ARGRL_LONG") == "" || testing.Short() {
		t.Skip("long test: ARGRL_LONG=1 (make test-long)")
	}
	for _, tis := range []float64{0, 2} {
		cfg := rlTinyConfig(t.TempDir(), "grpo")
		cfg.Model.Path, cfg.Model.Tokenizer = "../testdata/bench/small", "testdata/sft/tiny"
		cfg.LoRA.R, cfg.LoRA.Alpha = 32, 64
		cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Optim.MaxSteps, cfg.Optim.LR = 1, 2, 3, 1e-3
		cfg.Rollout.G, cfg.Rollout.MaxNewTokens, cfg.Rollout.Temperature, cfg.Rollout.TopP = 8, 32, 0.6, 0.95
		cfg.PPO.Epochs, cfg.PPO.MiniBatch = 1, 8
		cfg.KL.Coef, cfg.Checkpoint.Every = 0.001, 0
		cfg.TIS.Cap = tis
		runRL(t, cfg, RLOptions{})
		ms := trainMetrics(t, cfg.Run.Dir)
		if len(ms) != cfg.Optim.MaxSteps {
			t.Fatalf("tis.cap %v: %d train lines", tis, len(ms))
		}
		for i, m := range ms {
			if d, ok := m["ratio_dev_first"]; !ok || d != 0 {
				t.Errorf("tis.cap %v, step %d: ratio_dev_first %v, want exactly 0", tis, i+1, d)
			}
			if !(m["grad_norm"] > 0) || !(m["resp_len"] > 0) {
				t.Errorf("tis.cap %v, step %d: nothing trained (grad_norm %v, resp_len %v)", tis, i+1, m["grad_norm"], m["resp_len"])
			}
			if tis > 0 {
				kl, ok1 := m["rollout_train_kl"]
				mx, ok2 := m["rollout_train_ratio_max"]
				if !ok1 || !ok2 || kl != 0 || mx != 1 {
					t.Errorf("step %d: rollout_train_kl %v, rollout_train_ratio_max %v; want exactly 0 and 1", i+1, kl, mx)
				}
			}
			t.Logf("tis.cap %v, step %d: ratio_dev_first %v, kl_first %v, resp_len %v, %d updates", tis, i+1, m["ratio_dev_first"], m["kl_first"], m["resp_len"], int(m["updates"]))
		}
	}
}
