package config

import (
	"fmt"
	"strings"

	"github.com/argrl/argrl/env"
)

// ValidateRL checks the keys GRPO and PPO read beyond Validate's, naming
// each key and its valid range.
func (c *Config) ValidateRL() error {
	if err := c.Validate(); err != nil {
		return err
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.Algo != "grpo" && c.Algo != "ppo" {
		bad("key \"algo\": %q is not an RL algorithm (grpo, ppo)", c.Algo)
	}
	if c.Rollout.MaxNewTokens < 1 {
		bad("key \"rollout.max_new_tokens\": must be ≥ 1, got %d", c.Rollout.MaxNewTokens)
	}
	if c.Rollout.TopK < 0 {
		bad("key \"rollout.top_k\": must be ≥ 0, got %d", c.Rollout.TopK)
	}
	if c.PPO.Epochs < 1 {
		bad("key \"ppo.epochs\": must be ≥ 1, got %d", c.PPO.Epochs)
	}
	if c.PPO.MiniBatch < 0 {
		bad("key \"ppo.mini_batch\": must be ≥ 0 (0: the whole step), got %d", c.PPO.MiniBatch)
	}
	for _, k := range []struct {
		key string
		v   float64
	}{{"ppo.gamma", c.PPO.Gamma}, {"ppo.lambda", c.PPO.Lambda}} {
		if !(k.v >= 0 && k.v <= 1) {
			bad("key %q: must be in [0,1], got %v", k.key, k.v)
		}
	}
	for _, k := range []struct {
		key string
		v   float64
	}{{"ppo.vf_coef", c.PPO.VfCoef}, {"ppo.value_clip", c.PPO.ValueClip}, {"kl.coef", c.KL.Coef}, {"adv.delta", c.Adv.Delta}} {
		if !(k.v >= 0) {
			bad("key %q: must be ≥ 0, got %v", k.key, k.v)
		}
	}
	if c.Ref.UpdateEvery < 0 {
		bad("key \"ref.update_every\": must be ≥ 0 (0: a frozen reference), got %d", c.Ref.UpdateEvery)
	}
	if c.Ref.Path != "" && c.Ref.UpdateEvery > 0 {
		bad("keys \"ref.path\" and \"ref.update_every\" exclude each other (a lagged reference is a copy of the policy)")
	}
	if c.Init.Adapter != "" && !c.LoRA.Enabled && !c.Init.Merge {
		bad("key \"init.adapter\" kept trainable (init.merge: false) needs lora.enabled: true; set init.merge: true for full fine-tuning")
	}
	if c.Reward.Name == "r2if" && c.Format != "reason_tool" {
		bad("key \"reward.name\": r2if reads the <reason> block: it needs format: reason_tool, got %q", c.Format)
	}
	if c.Reward.Student.Path != "" && c.Reward.Name != "r2if" {
		bad("key \"reward.student.path\" is only used by reward.name: r2if")
	}
	c.validateAlgorithms(bad)
	c.validateMultiTurn(bad)
	if len(errs) > 0 {
		return blame(fmt.Errorf("invalid config: %s", strings.Join(errs, "; ")), c.file, c.origins)
	}
	return nil
}

// validateAlgorithms checks the keys of the objective's variants
// (docs/contracts.md §5): the advantage estimators, dynamic sampling,
// overlong shaping and truncated importance sampling.
func (c *Config) validateAlgorithms(bad func(format string, args ...any)) {
	grpo := c.Algo == "grpo"
	if c.Adv.Estimator != "grpo" && !grpo {
		bad("key \"adv.estimator\": %s replaces GRPO's group baseline; PPO's advantages come from its critic (algo grpo)", c.Adv.Estimator)
	}
	if c.Adv.Estimator == "rloo" && c.Rollout.G < 2 {
		bad("key \"adv.estimator\": rloo's leave-one-out baseline needs rollout.g ≥ 2, got %d", c.Rollout.G)
	}
	if c.Adv.PerPart {
		if !grpo || c.Adv.Estimator != "grpo" {
			bad("key \"adv.per_part\" normalizes within GRPO's groups: it needs algo grpo and adv.estimator grpo")
		} else if c.Rollout.G < 2 {
			bad("key \"adv.per_part\" needs rollout.g ≥ 2, got %d", c.Rollout.G)
		}
	}
	if c.DynamicSampling.Enabled && (!grpo || c.Rollout.G < 2) {
		bad("key \"dynamic_sampling.enabled\" drops groups of equal rewards: it needs algo grpo and rollout.g ≥ 2")
	}
	if c.DynamicSampling.MaxBatches < 1 {
		bad("key \"dynamic_sampling.max_batches\": must be ≥ 1 (rollout batches per step, the first included), got %d", c.DynamicSampling.MaxBatches)
	}
	if c.Overlong.Mode == "penalty" {
		if c.Overlong.Buffer < 1 || c.Overlong.Buffer > c.Rollout.MaxNewTokens {
			bad("key \"overlong.buffer\": must be in [1, rollout.max_new_tokens = %d], got %d", c.Rollout.MaxNewTokens, c.Overlong.Buffer)
		}
		if !(c.Overlong.Penalty >= 0) {
			bad("key \"overlong.penalty\": must be ≥ 0, got %v", c.Overlong.Penalty)
		}
	}
	if cp := c.TIS.Cap; !(cp == 0 || cp >= 1) {
		bad("key \"tis.cap\": must be 0 (off) or ≥ 1, got %v", cp)
	}
}

// validateMultiTurn checks the keys of multi-turn rollouts
// (rollout.max_turns > 1): the environment and the trajectory reward.
func (c *Config) validateMultiTurn(bad func(format string, args ...any)) {
	tc := c.Reward.Trajectory
	if tc.TurnWeight < 0 || tc.StateWeight < 0 || tc.TurnWeight+tc.StateWeight == 0 {
		bad("keys \"reward.trajectory.turn_weight\" and \"reward.trajectory.state_weight\": must be ≥ 0 and not both 0, got %v and %v",
			tc.TurnWeight, tc.StateWeight)
	}
	if c.Rollout.MaxTurns <= 1 {
		return
	}
	if _, err := env.New(c.Rollout.Env); err != nil {
		bad("key \"rollout.env\": %v", err)
	}
	if c.Overlong.Mode != "none" {
		bad("key \"overlong.mode\": %s acts on one response reaching rollout.max_new_tokens; multi-turn rollouts (rollout.max_turns %d) need none",
			c.Overlong.Mode, c.Rollout.MaxTurns)
	}
}
