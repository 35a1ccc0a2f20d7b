package rl

// Advantages for the RL recipes (docs/contracts.md §5), on the host.
//
// Shapes: N rollouts laid out group after group (G per prompt, N = P·G);
// T_i response tokens of rollout i.
//
// GRPO (one scalar per rollout, broadcast over its tokens):
//
//	A_i = (r_i − mean_g) / (std_g + δ)     std unbiased (n−1), δ = adv.delta (1e-6)
//	A_i =  r_i − mean_g                    adv.norm_by_std: false (Dr.GRPO)
//
// A group of one sample has no baseline: as verl does, its mean is taken
// as 0 and its std as 1, so A = r/(1+δ) (or r). A group whose rewards are
// all equal gets A = 0 exactly (the numerator is computed against the
// group's own mean, which equals every reward bit for bit only when they
// are equal; we test for equality and write 0, so rounding in the mean can
// never leak a tiny non-zero advantage).
//
// PPO (a critic V on the state before each response token, terminal reward):
//
//	r_t     = R on the last response token, 0 elsewhere
//	δ_t     = r_t + γ·V_{t+1} − V_t        V_{T} = 0 (after the last token)
//	A_t     = δ_t + γλ·A_{t+1}             A_{T} = 0
//	ret_t   = A_t + V_t                    the critic's target
//
// then A is whitened over every response token of the rollout batch:
// (A − mean)/sqrt(var + 1e-8), var unbiased, as verl's masked_whiten.
//
// Token weighting Â_t = w_t·A (weight.go) is applied after both.

import (
	"fmt"
	"math"
)

// GroupAdvantages returns the GRPO advantage of each rollout. rewards holds
// len(rewards)/g groups of g consecutive rollouts of the same prompt.
func GroupAdvantages(rewards []float64, g int, normByStd bool, delta float64) ([]float64, error) {
	if g < 1 || len(rewards)%g != 0 {
		return nil, fmt.Errorf("advantages: %d rewards do not split into groups of %d", len(rewards), g)
	}
	if delta < 0 || math.IsNaN(delta) {
		return nil, fmt.Errorf("advantages: adv.delta must be ≥ 0, got %v", delta)
	}
	adv := make([]float64, len(rewards))
	for s := 0; s < len(rewards); s += g {
		grp := rewards[s : s+g]
		for i, r := range grp {
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return nil, fmt.Errorf("advantages: reward %d is %v", s+i, r)
			}
		}
		if g == 1 {
			adv[s] = grp[0]
			if normByStd {
				adv[s] = grp[0] / (1 + delta)
			}
			continue
		}
		if allEqual(grp) {
			continue // zeros
		}
		mean, std := meanStd(grp, true)
		for i, r := range grp {
			a := r - mean
			if normByStd {
				a /= std + delta
			}
			adv[s+i] = a
		}
	}
	return adv, nil
}

// ZeroStdFraction is the fraction of groups of g whose rewards are all equal
// (they carry no GRPO signal).
func ZeroStdFraction(rewards []float64, g int) float64 {
	if g < 1 || len(rewards) < g {
		return 0
	}
	n, z := 0, 0
	for s := 0; s+g <= len(rewards); s += g {
		n++
		if allEqual(rewards[s : s+g]) {
			z++
		}
	}
	return float64(z) / float64(n)
}

func allEqual(xs []float64) bool {
	for _, x := range xs[1:] {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// meanStd returns the mean and the standard deviation of xs (unbiased with
// n−1 when unbiased and len(xs) > 1, else over n), accumulated in float64.
func meanStd(xs []float64, unbiased bool) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	d := float64(len(xs))
	if unbiased && len(xs) > 1 {
		d--
	}
	return mean, math.Sqrt(ss / d)
}

// GAE returns the advantages and returns of one rollout of T = len(values)
// response tokens whose only reward, reward, comes after the last token.
// values[t] is the critic's V on the state before response token t.
func GAE(values []float32, reward, gamma, lambda float64) (adv, ret []float32) {
	T := len(values)
	adv, ret = make([]float32, T), make([]float32, T)
	var next, last float64 // V_{t+1}, A_{t+1}
	for t := T - 1; t >= 0; t-- {
		r := 0.0
		if t == T-1 {
			r = reward
		}
		v := float64(values[t])
		delta := r + gamma*next - v
		last = delta + gamma*lambda*last
		adv[t], ret[t] = float32(last), float32(last+v)
		next = v
	}
	return adv, ret
}

// Whiten normalizes every value of xs (all rows together) to zero mean and
// unit variance in place: (x − mean)/sqrt(var + 1e-8), var unbiased. Fewer
// than two values are only centred.
func Whiten(xs [][]float32) {
	var n int
	var sum float64
	for _, row := range xs {
		for _, x := range row {
			sum += float64(x)
			n++
		}
	}
	if n == 0 {
		return
	}
	mean := sum / float64(n)
	var ss float64
	for _, row := range xs {
		for _, x := range row {
			ss += (float64(x) - mean) * (float64(x) - mean)
		}
	}
	scale := 1.0
	if n > 1 {
		scale = 1 / math.Sqrt(ss/float64(n-1)+1e-8)
	}
	for _, row := range xs {
		for i, x := range row {
			row[i] = float32((float64(x) - mean) * scale)
		}
	}
}
