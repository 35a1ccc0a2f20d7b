package rl

// GRPO's advantage estimators beyond the group z-score (adv.estimator,
// adv.per_part; docs/contracts.md §5). Each returns one advantage per
// rollout, broadcast over its tokens and then weighted by β (weight.go);
// rollouts come group after group, g per prompt.
//
//	grpo         A_i = (r_i − mean_g)/(std_g + δ), or r_i − mean_g
//	             (adv.norm_by_std: false): GroupAdvantages, adv.go
//	rloo         A_i = r_i − (Σ_{j≠i} r_j)/(g − 1), the leave-one-out
//	             baseline; = g/(g−1)·(r_i − mean_g); never divided by a std
//	reinforce++  A_i = (r_i − μ)/sqrt(σ² + 1e-8), μ and σ² (unbiased) over
//	             every response token of the step, each token carrying its
//	             rollout's reward: no group baseline, so a group of equal
//	             rewards still moves (verl's REINFORCE++ with γ = 1 and the
//	             KL in the loss, not in the reward)
//	per_part     z_{k,i} = GRPO's rule applied to term k of the reward
//	             (reward.Result.Terms) within the group; S_i = Σ_k z_{k,i}
//	             over the terms in name order; A_i = S_i/(std(S) + δ), the
//	             std unbiased over the step's rollouts (GDPO's batch
//	             normalization; S is already centred within each group, so
//	             it is not centred again and a group with no spread keeps
//	             A = 0). With norm_by_std: false it is Σ_k (T_k − mean_g T_k),
//	             which is Dr.GRPO's r − mean_g up to rounding.
//
// As in GroupAdvantages, a group (rloo) or a step (reinforce++) whose
// rewards are all equal gets A = 0 exactly, and a term equal across its
// group contributes exactly 0.

import (
	"fmt"
	"math"
	"sort"
)

// AdvSpec is adv.* as the estimators read it.
type AdvSpec struct {
	Estimator string  // grpo | rloo | reinforce++
	NormByStd bool    // grpo, per_part
	Delta     float64 // grpo, per_part
	PerPart   bool
}

// Advantages returns the advantage of each rollout under s. lens holds
// each rollout's response tokens (reinforce++ weighs by them); terms each
// rollout's reward terms (per_part; a missing term counts as 0).
func Advantages(s AdvSpec, rewards []float64, g int, lens []int, terms []map[string]float64) ([]float64, error) {
	if s.PerPart {
		if s.Estimator != "grpo" {
			return nil, fmt.Errorf("advantages: adv.per_part needs adv.estimator grpo, got %s", s.Estimator)
		}
		if len(terms) != len(rewards) {
			return nil, fmt.Errorf("advantages: %d rollouts but %d term sets", len(rewards), len(terms))
		}
		return PerPartAdvantages(terms, g, s.NormByStd, s.Delta)
	}
	switch s.Estimator {
	case "grpo":
		return GroupAdvantages(rewards, g, s.NormByStd, s.Delta)
	case "rloo":
		return RLOOAdvantages(rewards, g)
	case "reinforce++":
		return ReinforcePPAdvantages(rewards, lens)
	}
	return nil, fmt.Errorf("key \"adv.estimator\": %q is not one of grpo, rloo, reinforce++", s.Estimator)
}

// checkRewards refuses rewards that are not finite numbers.
func checkRewards(rewards []float64) error {
	for i, r := range rewards {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("advantages: reward %d is %v", i, r)
		}
	}
	return nil
}

// RLOOAdvantages returns r_i minus the mean of the other g−1 rewards of its
// group (g ≥ 2).
func RLOOAdvantages(rewards []float64, g int) ([]float64, error) {
	if g < 2 || len(rewards)%g != 0 {
		return nil, fmt.Errorf("advantages: rloo needs groups of g ≥ 2; %d rewards in groups of %d", len(rewards), g)
	}
	if err := checkRewards(rewards); err != nil {
		return nil, err
	}
	adv := make([]float64, len(rewards))
	for s := 0; s < len(rewards); s += g {
		grp := rewards[s : s+g]
		if allEqual(grp) {
			continue // zeros
		}
		var sum float64
		for _, r := range grp {
			sum += r
		}
		for i, r := range grp {
			adv[s+i] = r - (sum-r)/float64(g-1)
		}
	}
	return adv, nil
}

// ReinforcePPAdvantages whitens the rewards over the step's response
// tokens: rollout i counts lens[i] times. Fewer than two tokens are only
// centred.
func ReinforcePPAdvantages(rewards []float64, lens []int) ([]float64, error) {
	if len(lens) != len(rewards) {
		return nil, fmt.Errorf("advantages: %d rewards but %d lengths", len(rewards), len(lens))
	}
	if err := checkRewards(rewards); err != nil {
		return nil, err
	}
	adv := make([]float64, len(rewards))
	if len(rewards) == 0 || allEqual(rewards) {
		return adv, nil
	}
	var n, sum float64
	for i, r := range rewards {
		if lens[i] < 0 {
			return nil, fmt.Errorf("advantages: rollout %d has length %d", i, lens[i])
		}
		n += float64(lens[i])
		sum += float64(lens[i]) * r
	}
	if n == 0 {
		return adv, nil
	}
	mean := sum / n
	var ss float64
	for i, r := range rewards {
		ss += float64(lens[i]) * (r - mean) * (r - mean)
	}
	scale := 1.0
	if n > 1 {
		scale = 1 / math.Sqrt(ss/(n-1)+1e-8)
	}
	for i, r := range rewards {
		adv[i] = (r - mean) * scale
	}
	return adv, nil
}

// PerPartAdvantages returns GDPO's advantages from each rollout's reward
// terms (see the file header).
func PerPartAdvantages(terms []map[string]float64, g int, normByStd bool, delta float64) ([]float64, error) {
	if g < 2 || len(terms)%g != 0 {
		return nil, fmt.Errorf("advantages: adv.per_part needs groups of g ≥ 2; %d rollouts in groups of %d", len(terms), g)
	}
	names := map[string]bool{}
	for _, t := range terms {
		for k := range t {
			names[k] = true
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sum := make([]float64, len(terms))
	col := make([]float64, len(terms))
	for _, k := range keys {
		for i, t := range terms {
			col[i] = t[k]
		}
		z, err := GroupAdvantages(col, g, normByStd, delta)
		if err != nil {
			return nil, fmt.Errorf("reward term %q: %w", k, err)
		}
		for i := range sum {
			sum[i] += z[i]
		}
	}
	if allEqual(sum) {
		clear(sum)
		return sum, nil
	}
	if !normByStd {
		return sum, nil
	}
	_, std := meanStd(sum, true)
	for i := range sum {
		sum[i] /= std + delta
	}
	return sum, nil
}

// InformativeGroups returns the indices of the groups (g consecutive
// rewards each) whose rewards are not all equal: the ones dynamic sampling
// keeps.
func InformativeGroups(rewards []float64, g int) []int {
	var out []int
	for s := 0; g > 0 && s+g <= len(rewards); s += g {
		if !allEqual(rewards[s : s+g]) {
			out = append(out, s/g)
		}
	}
	return out
}

// OverlongPenalty is DAPO's soft overlong punishment of a response of n
// tokens when at most maxNew may be generated: 0 up to maxNew − buffer
// tokens, then (maxNew − buffer − n)/buffer·penalty down to −penalty at
// maxNew, and −penalty beyond. A buffer < 1 is a hard cut: −penalty from
// maxNew tokens on.
func OverlongPenalty(n, maxNew, buffer int, penalty float64) float64 {
	lo := maxNew - max(buffer, 0)
	switch {
	case n <= lo && (buffer >= 1 || n < maxNew):
		return 0
	case n <= maxNew && buffer >= 1:
		return float64(lo-n) / float64(buffer) * penalty
	}
	return -penalty
}
