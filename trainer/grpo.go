package trainer

// GRPO: group-relative policy optimization with argument-aware rewards
// (paper 000 §4, docs/contracts.md §5). `train grpo --config configs/grpo-rm3.yaml`
// runs it. It reads top to bottom: setup, then per step
//
//	sample P prompts → roll out G = 8 responses each (T = 0.6, top-p 0.95,
//	max_new_tokens 512; the rollout's log-probs are π_old)
//	→ reward each response (reward.name: rm1/rm2/rm3/decomposed/binary/r2if)
//	→ group advantages A_i = (r_i − mean_g)/(std_g + δ), or r_i − mean_g
//	  with adv.norm_by_std: false (Dr.GRPO)
//	→ β token weighting: Â_{i,t} = w_t·A_i, w_t = β on tokens overlapping an
//	  argument value's byte span (from the reward's parser), else 1
//	→ reference log-probs (LoRA off, ref.path, or the lagged/SFT snapshot)
//	→ ppo.epochs passes over mini-batches of the clipped surrogate
//	  −min(ρÂ, clip(ρ, 1−ε_lo, 1+ε_hi)Â) + kl.coef·KL(k1/k2/k3), aggregated
//	  by loss_agg (rl/loss.go)
//	→ log (rl/stats.go) → evaluate every eval_every → checkpoint (run.go).
//
// Where it departs from the papers, on purpose:
//   - the KL term is in the loss (verl's use_kl_loss, as paper 001 A.3's
//     "KL-regularized loss"), not subtracted from the reward;
//   - β multiplies the normalized advantage (docs/contracts.md §5), so the group
//     baseline stays one number per rollout; paper 000 §4.3 writes the
//     weight on the reward, R_{i,t} = β·R_i on argument-value tokens;
//   - a group whose G rewards are equal contributes nothing but its KL term
//     (no dynamic re-sampling); zero_std_frac logs how often that happens;
//   - no dropout during RL (rl.go), so the first ratio is 1.

import (
	"context"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// GRPO runs group-relative policy optimization as cfg describes.
func GRPO(ctx context.Context, cfg config.Config, o RLOptions) (*RLResult, error) {
	r, err := newRLRun(cfg, o, rlSpec{name: "grpo", g: cfg.Rollout.G})
	if err != nil {
		return nil, err
	}
	defer r.close()
	G, beta := r.g, cfg.TokenWeight.Beta
	// The objective per response token (rl/loss.go), with ρ = π/π_old:
	// ℓ_t = −min(ρÂ, clip(ρ, 1−ε_lo, 1+ε_hi)Â) + kl.coef·KL_t(π, π_ref).
	obj := rl.Objective{EpsLow: cfg.Clip.EpsLow, EpsHigh: cfg.Clip.EpsHigh, KLCoef: cfg.KL.Coef, KL: cfg.KL.Estimator}

	return r.loop(ctx, o.StopAfter, obj, func(items []*item, rewards []float64, m metrics.Metrics) ([]*item, error) {
		// ---- group-normalized advantages, then β on argument-value tokens.
		adv, err := rl.GroupAdvantages(rewards, G, cfg.Adv.NormByStd, cfg.Adv.Delta)
		if err != nil {
			return nil, err
		}
		rolls := make([]*rl.Rollout, len(items))
		for i, it := range items {
			w := rl.TokenWeights(it.sample.Offsets, it.res.Spans, beta)
			it.roll.Adv = rl.WeightAdvantage(adv[i], w)
			rolls[i] = &it.roll
		}
		rl.AdvantageMetrics(m, rolls)
		return trainable(items), nil
	})
}
