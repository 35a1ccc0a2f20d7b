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
//     unless dynamic_sampling.enabled replaces it (DAPO, sample.go);
//     zero_std_frac logs how often that happens;
//   - no dropout during RL (rlrun.go), so the first ratio is 1.
//
// With rollout.max_turns > 1 every rollout is a multi-turn episode
// (episodes.go): the same group advantages, from the trajectory reward, on
// its sampled tokens, β on the argument values of all its turns.
//
// The variants of docs/contracts.md §5 plug in here: adv.estimator (rloo,
// reinforce++) and adv.per_part (GDPO) choose the advantages
// (rl/estimators.go), is_level: sequence the GSPO ratio (rl/loss.go);
// overlong shaping, dynamic sampling and tis.cap are shared with PPO
// (sample.go).

import (
	"context"
	"fmt"
	"maps"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// GRPO runs group-relative policy optimization as cfg describes.
func GRPO(ctx context.Context, cfg config.Config, o RLOptions) (_ *RLResult, err error) {
	r, err := newRLRun(cfg, o, rlSpec{name: "grpo", g: cfg.Rollout.G})
	if err != nil {
		return nil, err
	}
	defer func() { err = withClose(err, r.close()) }()
	beta := cfg.TokenWeight.Beta
	// The objective per response token (rl/loss.go), with ρ = π/π_old:
	// ℓ_t = −min(ρÂ, clip(ρ, 1−ε_lo, 1+ε_hi)Â) + kl.coef·KL_t(π, π_ref).
	obj := rl.Objective{EpsLow: cfg.Clip.EpsLow, EpsHigh: cfg.Clip.EpsHigh, KLCoef: cfg.KL.Coef, KL: cfg.KL.Estimator,
		SeqLevel: cfg.IsLevel == "sequence"}
	spec := rl.AdvSpec{Estimator: cfg.Adv.Estimator, NormByStd: cfg.Adv.NormByStd, Delta: cfg.Adv.Delta, PerPart: cfg.Adv.PerPart}
	return r.loop(ctx, o.StopAfter, obj, r.groupAdvantages(spec, beta))
}

// groupAdvantages is GRPO's own part of a step: group-normalized
// advantages (adv.estimator, adv.per_part), then β on argument-value
// tokens (of every turn of a multi-turn rollout).
func (r *rlRun) groupAdvantages(spec rl.AdvSpec, beta float64) advantages {
	return func(items []*item, rewards []float64, m metrics.Metrics) ([]*item, error) {
		lens, terms, err := advInputs(items, spec.PerPart, r.rw.Name())
		if err != nil {
			return nil, err
		}
		adv, err := rl.Advantages(spec, rewards, r.g, lens, terms)
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
		return r.trainable(items), nil
	}
}

// advInputs returns each rollout's sampled length and, for adv.per_part,
// its reward terms (reward.Result.Terms, with the overlong penalty as the
// term "overlong" when there is one).
func advInputs(items []*item, perPart bool, rewardName string) ([]int, []map[string]float64, error) {
	lens := make([]int, len(items))
	var terms []map[string]float64
	if perPart {
		terms = make([]map[string]float64, len(items))
	}
	for i, it := range items {
		lens[i] = sampledLen(&it.sample)
		if !perPart {
			continue
		}
		if len(it.res.Terms) == 0 {
			return nil, nil, fmt.Errorf("adv.per_part: reward %s reports no terms (reward.Result.Terms) to normalize one by one", rewardName)
		}
		terms[i] = maps.Clone(it.res.Terms)
		if it.shaping != 0 {
			terms[i]["overlong"] = it.shaping
		}
	}
	return lens, terms, nil
}
