package trainer

// GRPO: group-relative policy optimization with argument-aware rewards
// (paper 000 §4, REFERENCE §5). `train grpo --config configs/grpo-rm3.yaml`
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
//	  by loss_agg (rl_loss.go)
//	→ log (rl_stats.go) → evaluate every eval_every → checkpoint.
//
// Where it departs from the papers, on purpose:
//   - the KL term is in the loss (verl's use_kl_loss, as paper 001 A.3's
//     "KL-regularized loss"), not subtracted from the reward;
//   - β multiplies the normalized advantage (REFERENCE §5), so the group
//     baseline stays one number per rollout; paper 000 §4.3 writes the
//     weight on the reward, R_{i,t} = β·R_i on argument-value tokens;
//   - a group whose G rewards are equal contributes nothing but its KL term
//     (no dynamic re-sampling); zero_std_frac logs how often that happens;
//   - no dropout during RL (rl_run.go), so the first ratio is 1.

import (
	"context"
	"fmt"
	"time"
)

// GRPO runs group-relative policy optimization as cfg describes.
func GRPO(ctx context.Context, cfg Config, o RLOptions) (*RLResult, error) {
	r, err := newRLRun(ctx, cfg, o, "grpo")
	if err != nil {
		return nil, err
	}
	defer r.close()
	G, beta := r.g, cfg.TokenWeight.Beta

	for step := r.start + 1; step <= r.total; step++ {
		if o.StopAfter > 0 && step > o.StopAfter {
			break
		}
		if err := ctx.Err(); err != nil {
			return r.res, fmt.Errorf("grpo: stopped before step %d: %w", step, err)
		}
		t0 := time.Now()
		m := Metrics{}
		sb := r.batches.Next()

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
		adv, err := GroupAdvantages(rewards, G, cfg.Adv.NormByStd, cfg.Adv.Delta)
		if err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}
		rolls := make([]*Rollout, len(items))
		for i, it := range items {
			w := TokenWeights(it.sample.Offsets, it.res.Spans, beta)
			it.roll.Adv = WeightAdvantage(adv[i], w)
			rolls[i] = &it.roll
		}
		AdvantageMetrics(m, rolls)

		// ---- reference log-probs; clipped-surrogate updates.
		train := trainable(items)
		if err := r.reference(train, m); err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}
		if err := r.update(train, step, r.sched.LR(step-1), m); err != nil {
			return r.res, fmt.Errorf("grpo: step %d: %w", step, err)
		}

		// ---- log, evaluate, checkpoint.
		m["time_step_s"] = time.Since(t0).Seconds()
		newTok := 0
		for _, it := range items {
			newTok += len(it.sample.IDs)
		}
		if err := r.endStep(ctx, step, m, sb, newTok); err != nil {
			return r.res, fmt.Errorf("grpo: %w", err)
		}
	}
	r.res.Best = r.run.Best()
	return r.res, nil
}
