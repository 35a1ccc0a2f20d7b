// Package rl is the maths of the RL recipes (trainer's GRPO and PPO), on
// the host: advantages (adv.go; RLOO, REINFORCE++, per-part, dynamic
// sampling's filter and the overlong penalty in estimators.go), β token
// weighting (weight.go), the clipped objective and its gradients (this
// file; GSPO's sequence ratio), truncated importance sampling against a
// rollout/training mismatch (mismatch.go), what a step logs (stats.go), the
// reference policy (ref.go), R2IF's student (student.go) and the SFT
// adapter merge that starts RL (init.go).
//
// The RL objective on the host (docs/contracts.md §5). The model's Step hands the
// trainer per-token log-probs (and values) of a micro-batch; this file turns
// them into the loss and ∂loss/∂logπ (∂loss/∂V), which Step back-propagates.
//
// Per response token t of rollout i, with x = logπ − logπ_old clamped to
// ±20 and ρ = exp(x):
//
//	pg_t = −min(ρ·Â, clip(ρ, 1−ε_lo, 1+ε_hi)·Â)
//	     ∂/∂logπ = −ρ·Â   when the unclipped term is the minimum (it is
//	               whenever ρ is inside the clip range), else 0; and 0 when
//	               x was clamped
//	kl_t = k1: logπ − logπ_ref                          ∂ = 1
//	       k2: ½(logπ − logπ_ref)²                      ∂ = logπ − logπ_ref
//	       k3: exp(d) − d − 1, d = logπ_ref − logπ (d clamped to ±20),
//	           clamped to [−10, 10]                     ∂ = 1 − exp(d), 0 when clamped
//	vf_t = ½·max((V − ret)², (clip(V, V_old ± c) − ret)²)      (PPO; c = ppo.value_clip)
//	     ∂/∂V = V − ret when the unclipped square is the max, else
//	            (clip(V) − ret)·[V inside V_old ± c]
//	ℓ_t  = pg_t + kl.coef·kl_t + ppo.vf_coef·vf_t
//
// is_level: sequence (GSPO) replaces ρ_t by one ratio per rollout,
// s = exp(x̄) with x̄ = (1/T)·Σ_k (logπ_k − logπ_old,k) clamped to ±20, so
// pg_t = −min(s·Â_t, clip(s, 1−ε_lo, 1+ε_hi)·Â_t) (Surrogate at x̄). s
// depends on every token of the response, each by ∂s/∂logπ_u = s/T, so
//
//	∂(Σ_t c·pg_t)/∂logπ_u = (c/T)·Σ_t ∂pg_t/∂x̄ = −(c/T)·s·Σ_{t unclipped} Â_t
//
// on every token u (0 when x̄ was clamped). With β = 1 and loss_agg
// seq-mean-token-mean this is GSPO's −(1/N)·Σ_i min(s_i·A_i, clip(s_i)·A_i).
//
// tis.cap: each token's pg_t (and its gradient) is multiplied by its
// truncated importance weight Rollout.ISW (mismatch.go); KL and value terms
// are not.
//
// Multi-turn rollouts (Rollout.Mask): only the tokens the policy sampled
// are trained. A token the environment or the chat template added between
// two assistant turns is context for the tokens after it, but has no
// pg_t, kl_t or vf_t, no gradient (∂loss/∂logπ and ∂loss/∂V are 0 there),
// and is not counted by the aggregation, the logged token means or
// GSPO's T (x̄ averages the sampled tokens).
//
// Aggregation (loss_agg) over the mini-batch — the sequences of one
// optimizer update, however they are split into micro-batches — is a
// weight c_i per token of rollout i, loss = Σ_i Σ_t c_i·ℓ_t:
//
//	token-mean               c_i = 1 / Σ_j T_j                  (verl's default)
//	seq-mean-token-mean      c_i = 1 / (N·T_i)                  (original GRPO)
//	seq-mean-token-sum-norm  c_i = 1 / (N·L), L = rollout.max_new_tokens
//	                         (Dr.GRPO: a constant length; as the Dr.GRPO
//	                         reference code, the sum is also divided by N,
//	                         where verl's variant divides by L only)
//
// with N the mini-batch's rollouts. Because c_i uses mini-batch totals, the
// gradient accumulated over micro-batches equals that of the whole
// mini-batch in one piece. KL and value terms use the same weights, as in
// verl (use_kl_loss).
package rl

import (
	"fmt"
	"math"
)

// logRatioClamp bounds logπ − logπ_old before exp (docs/contracts.md §5).
const logRatioClamp = 20

// Surrogate returns the clipped surrogate pg_t of one token, its derivative
// with respect to logπ, and whether the clipped term was the one taken.
func Surrogate(lp, oldLP, adv, epsLow, epsHigh float64) (loss, grad float64, clipped bool) {
	x := lp - oldLP
	inRange := true
	if x > logRatioClamp {
		x, inRange = logRatioClamp, false
	} else if x < -logRatioClamp {
		x, inRange = -logRatioClamp, false
	}
	rho := math.Exp(x)
	c := math.Min(math.Max(rho, 1-epsLow), 1+epsHigh)
	l1, l2 := -rho*adv, -c*adv
	if l2 > l1 { // the clipped term is the minimum of ρÂ, clip(ρ)Â
		return l2, 0, true
	}
	if inRange {
		grad = -rho * adv
	}
	return l1, grad, false
}

// KLTerm returns the estimator's value on one token and its derivative with
// respect to logπ. est is k1, k2 or k3.
func KLTerm(est string, lp, refLP float64) (k, grad float64) {
	switch est {
	case "k1":
		return lp - refLP, 1
	case "k2":
		d := lp - refLP
		return 0.5 * d * d, d
	default: // k3
		d, clamped := refLP-lp, false
		if d > logRatioClamp || d < -logRatioClamp {
			d, clamped = math.Max(-logRatioClamp, math.Min(logRatioClamp, d)), true
		}
		e := math.Exp(d)
		k = e - d - 1
		if k > 10 || k < -10 { // k3 ≥ 0 mathematically; both bounds as the contract states
			return math.Max(-10, math.Min(10, k)), 0
		}
		if clamped {
			return k, 0
		}
		return k, 1 - e
	}
}

// ValueLoss returns vf_t = ½·max((v−ret)², (clip(v, old±c)−ret)²), its
// derivative with respect to v, and whether the clipped square was taken.
// c ≤ 0 disables clipping.
func ValueLoss(v, oldV, ret, c float64) (loss, grad float64, clipped bool) {
	u := v - ret
	l1 := 0.5 * u * u
	if c <= 0 {
		return l1, u, false
	}
	vc := math.Min(math.Max(v, oldV-c), oldV+c)
	w := vc - ret
	l2 := 0.5 * w * w
	if l2 > l1 { // only when v is outside old ± c, where clip(v) is constant
		return l2, 0, true
	}
	return l1, u, false
}

// Aggregation holds the per-token weight c_i of each rollout of a mini-batch.
type Aggregation struct {
	Mode string
	c    []float64 // [N]
}

// NewAggregation computes c_i for a mini-batch whose rollouts have lens
// response tokens each. maxLen is L for seq-mean-token-sum-norm.
func NewAggregation(mode string, lens []int, maxLen int) (Aggregation, error) {
	a := Aggregation{Mode: mode, c: make([]float64, len(lens))}
	N := len(lens)
	total := 0
	for _, l := range lens {
		if l < 0 {
			return a, fmt.Errorf("loss_agg: negative length %d", l)
		}
		total += l
	}
	for i, l := range lens {
		switch mode {
		case "token-mean":
			if total > 0 {
				a.c[i] = 1 / float64(total)
			}
		case "seq-mean-token-mean":
			if l > 0 {
				a.c[i] = 1 / (float64(N) * float64(l))
			}
		case "seq-mean-token-sum-norm":
			if maxLen < 1 {
				return a, fmt.Errorf("loss_agg seq-mean-token-sum-norm: the constant length (rollout.max_new_tokens) must be ≥ 1, got %d", maxLen)
			}
			a.c[i] = 1 / (float64(N) * float64(maxLen))
		default:
			return a, fmt.Errorf("key \"loss_agg\": %q is not one of token-mean, seq-mean-token-mean, seq-mean-token-sum-norm", mode)
		}
	}
	return a, nil
}

// Weight is c_i of rollout i.
func (a Aggregation) Weight(i int) float64 { return a.c[i] }

// Objective holds the coefficients of ℓ_t; each recipe builds its own from
// the config (VfCoef and ValueClip only matter with values, PPO).
type Objective struct {
	EpsLow, EpsHigh float64 // clip.eps_low, clip.eps_high
	SeqLevel        bool    // is_level: sequence (GSPO)
	KLCoef          float64 // kl.coef (0: no reference needed)
	KL              string  // kl.estimator
	VfCoef          float64 // ppo.vf_coef (PPO)
	ValueClip       float64 // ppo.value_clip (PPO; ≤ 0: off)
}

// Rollout is one rollout as the objective sees it: the response tokens
// only, t = 0…T−1.
type Rollout struct {
	OldLP []float32 // [T] logπ_old (the rollout's log-probs)
	RefLP []float32 // [T] logπ_ref; nil when kl.coef = 0
	Adv   []float32 // [T] Â_t = w_t·A
	// With tis.cap (mismatch.go): OldLP is the training forward's,
	// RolloutLP the sampler's, ISW the truncated weights; nil otherwise.
	RolloutLP []float32 // [T]
	ISW       []float32 // [T]
	// PPO only (nil for GRPO):
	OldV []float32 // [T] the critic's values when the batch was rolled out
	Ret  []float32 // [T] GAE returns
	// Mask, multi-turn only, is true on the tokens the policy sampled and
	// false on the environment's and the template's (see the file
	// comment); nil: every token was sampled.
	Mask []bool // [T]
}

// Len is T.
func (r *Rollout) Len() int { return len(r.OldLP) }

// Sampled reports whether token k was sampled by the policy (trained).
func (r *Rollout) Sampled(k int) bool { return r.Mask == nil || r.Mask[k] }

// Tokens is the number of sampled tokens: T without a mask.
func (r *Rollout) Tokens() int { return SampledCount(r.Mask, r.Len()) }

// LossStats are sums over the tokens an objective call saw; Add merges them.
type LossStats struct {
	Loss              float64 // Σ c_i·ℓ_t: the mini-batch loss (its share)
	PG, KL, VF        float64 // Σ c_i·term (unweighted by coefficients)
	Tokens            int
	KLSum, EntSum     float64 // Σ kl_t, Σ entropy_t (token means for logging)
	Clipped, VClipped int     // tokens whose surrogate / value loss was clipped
	MaxRatioDev       float64 // max |ρ − 1| over the tokens
}

// Add accumulates o into s.
func (s *LossStats) Add(o LossStats) {
	s.Loss += o.Loss
	s.PG += o.PG
	s.KL += o.KL
	s.VF += o.VF
	s.Tokens += o.Tokens
	s.KLSum += o.KLSum
	s.EntSum += o.EntSum
	s.Clipped += o.Clipped
	s.VClipped += o.VClipped
	s.MaxRatioDev = math.Max(s.MaxRatioDev, o.MaxRatioDev)
}

// Seq is one sequence of a micro-batch as the model sees it: the full
// prompt+response, the response starting at position Start, its rollout,
// and its index in the mini-batch's Aggregation.
type Seq struct {
	Start int
	R     *Rollout
	Agg   int
}

// Grads computes the objective on one micro-batch. lp[b], ent[b] and
// vals[b] are indexed by the full sequence's positions as model.Outputs
// are (lp[b][t] = logπ of token t); the response token k of sequence b is
// position Start+k, whose value is read at position Start+k−1 (the state
// before it). It returns ∂loss/∂lp and ∂loss/∂V in the same layout (dV nil
// without values) and the stats.
func (o Objective) Grads(seqs []Seq, agg Aggregation, lp, ent, vals [][]float32) (dlp, dv [][]float32, st LossStats, err error) {
	if len(lp) != len(seqs) {
		return nil, nil, st, fmt.Errorf("objective: %d log-prob rows for %d sequences", len(lp), len(seqs))
	}
	dlp = make([][]float32, len(seqs))
	ppo := vals != nil
	if ppo {
		dv = make([][]float32, len(seqs))
	}
	for b, s := range seqs {
		r, T := s.R, s.R.Len()
		if s.Start < 1 || s.Start+T != len(lp[b]) {
			return nil, nil, st, fmt.Errorf("objective: sequence %d: response [%d, %d) does not end the %d positions", b, s.Start, s.Start+T, len(lp[b]))
		}
		if len(r.Adv) != T || (o.KLCoef != 0 && len(r.RefLP) != T) {
			return nil, nil, st, fmt.Errorf("objective: sequence %d: %d tokens but %d advantages, %d reference log-probs", b, T, len(r.Adv), len(r.RefLP))
		}
		if ppo && (len(vals[b]) != len(lp[b]) || len(r.OldV) != T || len(r.Ret) != T) {
			return nil, nil, st, fmt.Errorf("objective: sequence %d: values, old values or returns do not cover its %d tokens", b, T)
		}
		if r.ISW != nil && len(r.ISW) != T {
			return nil, nil, st, fmt.Errorf("objective: sequence %d: %d tokens but %d importance weights", b, T, len(r.ISW))
		}
		if r.Mask != nil && len(r.Mask) != T {
			return nil, nil, st, fmt.Errorf("objective: sequence %d: %d tokens but a mask of %d", b, T, len(r.Mask))
		}
		c := agg.Weight(s.Agg)
		dlp[b] = make([]float32, len(lp[b]))
		if ppo {
			dv[b] = make([]float32, len(lp[b]))
		}
		var seqX, seqG float64 // is_level sequence: x̄ and Σ_t ∂pg_t/∂x̄
		var seqD []float64     // the other terms' ∂/∂logπ, added to at the end
		if o.SeqLevel {
			seqX, seqD = meanLogRatio(lp[b][s.Start:], r.OldLP, r.Mask), make([]float64, T)
		}
		for k := 0; k < T; k++ {
			if !r.Sampled(k) {
				continue // context only: no term, no gradient
			}
			t := s.Start + k
			x := float64(lp[b][t])
			var pg, g float64
			var clipped bool
			if o.SeqLevel {
				pg, g, clipped = Surrogate(seqX, 0, float64(r.Adv[k]), o.EpsLow, o.EpsHigh)
			} else {
				pg, g, clipped = Surrogate(x, float64(r.OldLP[k]), float64(r.Adv[k]), o.EpsLow, o.EpsHigh)
			}
			if r.ISW != nil {
				pg, g = pg*float64(r.ISW[k]), g*float64(r.ISW[k])
			}
			if o.SeqLevel {
				seqG, g = seqG+g, 0
			}
			st.PG += c * pg
			st.Loss += c * pg
			if clipped {
				st.Clipped++
			}
			dev := math.Abs(math.Exp(math.Max(-logRatioClamp, math.Min(logRatioClamp, x-float64(r.OldLP[k])))) - 1)
			st.MaxRatioDev = math.Max(st.MaxRatioDev, dev)
			if r.RefLP != nil {
				kv, kg := KLTerm(o.KL, x, float64(r.RefLP[k]))
				st.KLSum += kv
				if o.KLCoef != 0 {
					st.KL += c * kv
					st.Loss += c * o.KLCoef * kv
					g += o.KLCoef * kg
				}
			}
			if ppo {
				vl, vg, vc := ValueLoss(float64(vals[b][t-1]), float64(r.OldV[k]), float64(r.Ret[k]), o.ValueClip)
				st.VF += c * vl
				st.Loss += c * o.VfCoef * vl
				dv[b][t-1] = float32(c * o.VfCoef * vg)
				if vc {
					st.VClipped++
				}
			}
			if ent != nil {
				st.EntSum += float64(ent[b][t])
			}
			if o.SeqLevel {
				seqD[k] = g
			} else {
				dlp[b][t] = float32(c * g)
			}
			st.Tokens++
		}
		n := r.Tokens()
		for k, g := range seqD { // is_level sequence: ∂s/∂logπ_u = s/T on every sampled token
			if r.Sampled(k) {
				dlp[b][s.Start+k] = float32(c * (g + seqG/float64(n)))
			}
		}
	}
	return dlp, dv, st, nil
}

// meanLogRatio is x̄ = (1/T)·Σ_k (lp_k − old_k) over a response's sampled
// tokens (mask nil: all; 0 for none); Surrogate clamps it.
func meanLogRatio(lp, old []float32, mask []bool) float64 {
	n := SampledCount(mask, len(old))
	if n == 0 {
		return 0
	}
	var x float64
	for k, o := range old {
		if mask == nil || mask[k] {
			x += float64(lp[k]) - float64(o)
		}
	}
	return x / float64(n)
}
