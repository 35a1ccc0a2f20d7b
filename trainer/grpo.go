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
	"fmt"
	"time"

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

	for step := r.Done + 1; step <= r.Total; step++ {
		if o.StopAfter > 0 && step > o.StopAfter {
			break
		}
		t0, m := time.Now(), metrics.Metrics{}
		sb, err := r.Next(ctx, step)
		if err != nil {
			return r.res, fmt.Errorf("grpo: %w", err)
		}

		// ---- roll out G responses per prompt; score them.
		items, err := r.rollOut(ctx, step, sb.Records(), m)
		if err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}
		rewards, err := r.score(ctx, items, m)
		if err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}

		// ---- group-normalized advantages, then β on argument-value tokens.
		adv, err := rl.GroupAdvantages(rewards, G, cfg.Adv.NormByStd, cfg.Adv.Delta)
		if err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}
		rolls := make([]*rl.Rollout, len(items))
		for i, it := range items {
			w := rl.TokenWeights(it.sample.Offsets, it.res.Spans, beta)
			it.roll.Adv = rl.WeightAdvantage(adv[i], w)
			rolls[i] = &it.roll
		}
		rl.AdvantageMetrics(m, rolls)

		// ---- reference log-probs; clipped-surrogate updates.
		train := trainable(items)
		if err := r.reference(train, m); err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}
		if err := r.update(train, obj, step, r.Sched.LR(step-1), m); err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}

		// ---- log, evaluate, checkpoint.
		if err := r.endStep(ctx, step, sb, m, items, t0); err != nil {
			return r.res, fmt.Errorf("grpo: %w", err)
		}
	}
	r.res.Best = r.Best()
	return r.res, nil
}
