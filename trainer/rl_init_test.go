package trainer

import (
	"io"
	"strings"
	"testing"
)

const (
	rlFixture        = "../testdata/models/qwen2-f32"
	rlFixtureAdapter = "../testdata/models/qwen2-f32/adapter"
)

// SFT → RL: with init.adapter the reference is the SFT model, merged
// (fresh LoRA on the merged base, reference = LoRA off) or kept trainable
// (reference = a snapshot of the loaded adapter). Either way the policy
// equals the reference at step 1, so the first mini-batch's KL is 0 —
// while the base model without the adapter differs (checked by the merge
// test above).
func TestSFTThenRLReferenceIsSFT(t *testing.T) {
	for _, merge := range []bool{true, false} {
		cfg := rlTinyConfig(t.TempDir(), "grpo")
		cfg.Model.Path, cfg.Model.Init, cfg.Model.Tokenizer, cfg.Model.MaxLen = rlFixture, "pretrained", "testdata/sft/tok320", 1024
		cfg.LoRA.R, cfg.LoRA.Alpha = 4, 8
		cfg.Init.Adapter, cfg.Init.Merge = rlFixtureAdapter, merge
		cfg.Optim.MaxSteps = 2
		runRL(t, cfg, RLOptions{})
		ms := trainMetrics(t, cfg.Run.Dir)
		if ms[0]["kl_first"] != 0 || !(ms[1]["kl_first"] > 0) {
			t.Errorf("merge=%v: KL at the first mini-batch %g (step 1, want 0), %g (step 2, want > 0)", merge, ms[0]["kl_first"], ms[1]["kl_first"])
		}
		if !(ms[0]["ratio_dev_first"] <= 1e-5) {
			t.Errorf("merge=%v: max |ρ−1| %g", merge, ms[0]["ratio_dev_first"])
		}
	}
}

// ref.path: a model directory is a second frozen model; a PEFT adapter of
// the policy's shape is swapped in for the reference pass.
func TestRefPath(t *testing.T) {
	for _, c := range []struct {
		path   string
		zeroKL bool
	}{{rlFixture, true}, {rlFixtureAdapter, false}} {
		cfg := rlTinyConfig(t.TempDir(), "grpo")
		cfg.Model.Path, cfg.Model.Init, cfg.Model.Tokenizer, cfg.Model.MaxLen = rlFixture, "pretrained", "testdata/sft/tok320", 1024
		cfg.LoRA.R, cfg.LoRA.Alpha = 4, 8
		cfg.Ref.Path = c.path
		cfg.Optim.MaxSteps = 1
		runRL(t, cfg, RLOptions{})
		kl := trainMetrics(t, cfg.Run.Dir)[0]["kl_first"]
		if (kl == 0) != c.zeroKL {
			t.Errorf("ref.path %s: KL at step 1 = %g (fresh LoRA: the policy is the base model)", c.path, kl)
		}
	}
	cfg := rlTinyConfig(t.TempDir(), "grpo")
	cfg.Model.Path, cfg.Model.Init, cfg.Model.Tokenizer, cfg.Model.MaxLen = rlFixture, "pretrained", "testdata/sft/tok320", 1024
	cfg.Ref.Path = rlFixtureAdapter // r = 4, the policy's r = 8
	if _, err := GRPO(t.Context(), cfg, RLOptions{Log: io.Discard}); err == nil || !strings.Contains(err.Error(), "ref.path") {
		t.Errorf("an adapter of another rank as ref.path: %v", err)
	}
}
