package trainer

// PPO: proximal policy optimization with a learned critic (paper 000 §4,
// docs/contracts.md §5). `train ppo --config configs/ppo-rm3.yaml` runs it. It
// reads top to bottom: setup, then per step
//
//	sample P prompts → roll out one response each (T = 0.6, top-p 0.95;
//	the rollout's log-probs are π_old)
//	→ reward each response
//	→ the critic's values V_t on the state before each response token
//	→ GAE(γ, λ) with the reward on the last token: A_t and returns A_t + V_t
//	→ whiten A over every response token of the step (batch level)
//	→ β token weighting: Â_t = w_t·A_t on argument-value tokens
//	→ reference log-probs
//	→ ppo.epochs passes over mini-batches of
//	  −min(ρÂ, clip(ρ)Â) + kl.coef·KL + vf_coef·½·max((V−ret)², (clip(V, V_old±c)−ret)²)
//	→ log → evaluate every eval_every → checkpoint (value_head.safetensors too).
//
// The critic: a value head on the shared trunk. value[b,t] = h[b,t]·wᵀ + b
// reads the policy's final normed hidden state (model.Options.ValueHead),
// and the value loss back-propagates through the same LoRA adapters as
// the policy loss. Why not a critic with its own LoRA (or its own model, as
// verl and TRL): the model carries one set of adapters, and a shared trunk
// costs no second forward or backward pass and no second copy of the
// weights; vf_coef sets how much the critic may move the shared adapters.
// The price is interference between the two losses, one reason paper 000
// finds PPO less stable than GRPO (Table 15). The head (w ~ U(±1/√C), b = 0)
// is saved as value_head.safetensors in every checkpoint.
//
// Where it departs from the papers: the KL term is in the loss, not folded
// into per-token rewards (as GRPO here, and verl with use_kl_loss); the
// critic is not warmed up before the policy; no dropout (rlrun.go).

import (
	"context"

	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// PPO runs critic-based PPO as cfg describes.
func PPO(ctx context.Context, cfg config.Config, o RLOptions) (_ *RLResult, err error) {
	r, err := newRLRun(cfg, o, rlSpec{name: "ppo", g: 1, critic: true})
	if err != nil {
		return nil, err
	}
	defer func() { err = withClose(err, r.close()) }()
	beta := cfg.TokenWeight.Beta
	// The objective per response token (rl/loss.go), with ρ = π/π_old:
	// ℓ_t = −min(ρÂ, clip(ρ, 1−ε_lo, 1+ε_hi)Â) + kl.coef·KL_t(π, π_ref)
	//       + vf_coef·½·max((V−ret)², (clip(V, V_old ± value_clip)−ret)²).
	obj := rl.Objective{EpsLow: cfg.Clip.EpsLow, EpsHigh: cfg.Clip.EpsHigh, KLCoef: cfg.KL.Coef, KL: cfg.KL.Estimator,
		VfCoef: cfg.PPO.VfCoef, ValueClip: cfg.PPO.ValueClip, SeqLevel: cfg.IsLevel == "sequence"}

	return r.loop(ctx, o.StopAfter, obj, func(items []*item, _ []float64, m metrics.Metrics) ([]*item, error) {
		// ---- critic values, GAE, batch whitening, then β.
		train := r.trainable(items)
		if err := r.values(train); err != nil {
			return nil, err
		}
		// A multi-turn rollout's GAE, whitening and weights run over its
		// sampled tokens alone (rl/mask.go): the environment's tokens are
		// no actions, and have neither advantage nor value target.
		advs, rets := make([][]float32, len(train)), make([][]float32, len(train))
		rolls := make([]*rl.Rollout, len(train))
		var vsum float64
		for i, it := range train {
			advs[i], rets[i] = rl.GAE(rl.Pack(it.roll.OldV, it.roll.Mask), it.res.Reward+it.shaping, cfg.PPO.Gamma, cfg.PPO.Lambda)
			vsum += float64(it.roll.OldV[0])
		}
		rl.Whiten(advs)
		for i, it := range train {
			w := rl.Pack(rl.TokenWeights(it.sample.Offsets, it.res.Spans, beta), it.roll.Mask)
			for t := range advs[i] {
				advs[i][t] *= w[t]
			}
			it.roll.Adv, it.roll.Ret = rl.Unpack(advs[i], it.roll.Mask), rl.Unpack(rets[i], it.roll.Mask)
			rolls[i] = &it.roll
		}
		rl.AdvantageMetrics(m, rolls)
		if len(train) > 0 {
			m["value_first_mean"] = vsum / float64(len(train))
		}
		return train, nil
	})
}
