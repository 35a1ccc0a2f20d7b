package rl

// Rollout/training mismatch (tis.cap; docs/contracts.md §5).
//
// By default π_old is the sampler's log-probs: on the CPU backend the
// rollout engine and the training forward run the same kernels in the same
// order, so they are the same numbers and ρ = 1 at the first mini-batch
// (docs/design.md). When the sampler's numerics differ from training's
// (bf16 tensor-core decoding, say), the ratio π/π_old then mixes the
// policy's change with the engines' disagreement. With tis.cap > 0:
//
//	logπ_old     the training forward's log-probs of the rolled-out tokens,
//	             before the step's first update (trainer)
//	logπ_rollout the sampler's
//	w_t          min(exp(logπ_old − logπ_rollout), cap), the log-ratio
//	             clamped to ±20; no gradient flows through it
//	pg_t         w_t·(the surrogate of π/π_old)      (loss.go)
//
// as verl's and TRL's truncated importance sampling. The step logs the
// mismatch it corrects:
//
//	rollout_train_kl         token mean of k3(π_old/π_rollout) = e^d − d − 1,
//	                         d = logπ_old − logπ_rollout: an estimate of
//	                         KL(π_rollout ‖ π_old) from the rollout's own tokens
//	rollout_train_ratio_max  max over tokens of exp(d), before the cap
//	tis_clip_frac            tokens whose weight the cap truncated

import (
	"fmt"
	"math"

	"github.com/argrl/argrl/trainer/metrics"
)

// SetTIS makes r's π_old the training forward's log-probs trainLP, keeps
// the sampler's as RolloutLP and computes the truncated weights ISW.
func (r *Rollout) SetTIS(trainLP []float32, cap float64) error {
	if len(trainLP) != len(r.OldLP) {
		return fmt.Errorf("tis: %d training log-probs for %d rollout tokens", len(trainLP), len(r.OldLP))
	}
	if r.RolloutLP == nil {
		r.RolloutLP = r.OldLP
	}
	r.OldLP = append([]float32(nil), trainLP...)
	r.ISW = make([]float32, len(trainLP))
	for k := range trainLP {
		r.ISW[k] = 1 // a token the policy did not sample (multi-turn) has no sampler log-prob
		if r.Sampled(k) {
			r.ISW[k] = float32(math.Min(tisRatio(r.OldLP[k], r.RolloutLP[k]), cap))
		}
	}
	return nil
}

// tisRatio is π_old/π_rollout of one token, the log-ratio clamped to ±20.
func tisRatio(old, roll float32) float64 {
	return math.Exp(math.Max(-logRatioClamp, math.Min(logRatioClamp, float64(old)-float64(roll))))
}

// MismatchMetrics logs the rollout/training mismatch of rolls (after
// SetTIS) and the share of tokens whose weight cap truncated, over the
// sampled tokens.
func MismatchMetrics(m metrics.Metrics, rolls []*Rollout, cap float64) {
	var kl float64
	mx, n, clipped := 0.0, 0, 0
	for _, r := range rolls {
		for k, old := range r.OldLP {
			if !r.Sampled(k) {
				continue
			}
			rho := tisRatio(old, r.RolloutLP[k])
			k3, _ := KLTerm("k3", float64(r.RolloutLP[k]), float64(old))
			kl += k3
			mx = math.Max(mx, rho)
			if rho > cap {
				clipped++
			}
			n++
		}
	}
	if n == 0 {
		return
	}
	m["rollout_train_kl"], m["rollout_train_ratio_max"] = kl/float64(n), mx
	m["tis_clip_frac"] = float64(clipped) / float64(n)
}
