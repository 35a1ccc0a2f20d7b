package rl

// What an RL step logs (docs/contracts.md §5), one "train" line of metrics.jsonl:
//
//	reward_mean, reward_std, reward_min, reward_max   over the step's N rollouts (std unbiased)
//	reward_<part>                                     mean of each reward part (reward.Result.Parts) over
//	                                                  the rollouts that report it (rm3's alc_cont: past the gates)
//	rate_tid … rate_fcm                               the rollouts' hierarchical levels (paper 000 §2.3)
//	zero_std_frac                                     groups whose G rewards are all equal (GRPO), of
//	                                                  the groups trained on (dynamic sampling: 0)
//	zero_std_frac_sampled, resampled_groups,          dynamic sampling (trainer/sample.go)
//	groups_trained
//	overlong_penalty_mean                             overlong.mode penalty (estimators.go)
//	rollout_train_kl, rollout_train_ratio_max,        tis.cap: the sampler vs the training forward
//	tis_clip_frac                                     (mismatch.go)
//	adv_mean, adv_abs_mean                            Â over response tokens (after β)
//	kl                                                the kl.estimator's token mean against the reference
//	entropy                                           mean policy entropy per response token (nats)
//	clip_frac                                         tokens whose surrogate took the clipped term
//	ratio_dev_first                                   max |ρ−1| on the first mini-batch (0 when on-policy)
//	kl_first                                          kl on the first mini-batch: the rollout policy vs the reference
//	loss, pg_loss, kl_loss, vf_loss, vf_clip_frac     the mini-batch losses averaged over updates
//	grad_norm, lr                                     before clipping; the step's learning rate
//	resp_len, resp_len_max, truncated_frac            response tokens per rollout
//	rollout_tokens_per_s, train_tokens_per_s, ref_tokens_per_s
//	time_rollout_s, time_reward_s, time_ref_s, time_train_s, time_old_s (tis.cap)
//
// Every key is a plain number so `train plot` can draw it.

import (
	"math"
	"sort"

	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer/metrics"
)

// RewardMetrics summarizes the rewards of one step's rollouts (g per
// prompt, consecutive) into m.
func RewardMetrics(m metrics.Metrics, results []*reward.Result, g int) {
	if len(results) == 0 {
		return
	}
	rs := make([]float64, len(results))
	parts, counts := map[string]float64{}, map[string]float64{}
	var levels [5]float64
	for i, r := range results {
		rs[i] = r.Reward
		for k, v := range r.Parts {
			parts[k] += v
			counts[k]++
		}
		for j, ok := range []bool{r.Metrics.TID, r.Metrics.TSA, r.Metrics.ACA, r.Metrics.ALC, r.Metrics.FCM} {
			if ok {
				levels[j]++
			}
		}
	}
	n := float64(len(results))
	mean, std := meanStd(rs, true)
	m["reward_mean"], m["reward_std"] = mean, std
	m["reward_min"], m["reward_max"] = rs[0], rs[0]
	for _, r := range rs {
		m["reward_min"], m["reward_max"] = math.Min(m["reward_min"], r), math.Max(m["reward_max"], r)
	}
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		m["reward_"+k] = parts[k] / counts[k]
	}
	for j, k := range []string{"rate_tid", "rate_tsa", "rate_aca", "rate_alc", "rate_fcm"} {
		m[k] = levels[j] / n
	}
	if g > 1 {
		m["zero_std_frac"] = ZeroStdFraction(rs, g)
	}
}

// LengthMetrics records response lengths: mean, max and the fraction that
// hit maxNew tokens without stopping.
func LengthMetrics(m metrics.Metrics, lens []int, truncated []bool) {
	if len(lens) == 0 {
		return
	}
	var sum, mx, tr float64
	for i, l := range lens {
		sum += float64(l)
		mx = math.Max(mx, float64(l))
		if i < len(truncated) && truncated[i] {
			tr++
		}
	}
	m["resp_len"], m["resp_len_max"] = sum/float64(len(lens)), mx
	m["truncated_frac"] = tr / float64(len(lens))
}

// LossMetrics records the objective's stats of a step: st sums every
// micro-batch of every update, updates is the number of optimizer updates
// (mini-batches × epochs), first is the first mini-batch's stats; critic
// adds the value loss (PPO).
func LossMetrics(m metrics.Metrics, st LossStats, updates int, first LossStats, critic bool) {
	u := float64(max(updates, 1))
	m["loss"], m["pg_loss"], m["kl_loss"] = st.Loss/u, st.PG/u, st.KL/u
	if st.Tokens > 0 {
		tk := float64(st.Tokens)
		m["kl"], m["entropy"], m["clip_frac"] = st.KLSum/tk, st.EntSum/tk, float64(st.Clipped)/tk
		if critic {
			m["vf_clip_frac"] = float64(st.VClipped) / tk
		}
	}
	if critic {
		m["vf_loss"] = st.VF / u
	}
	m["ratio_dev_first"] = first.MaxRatioDev
	if first.Tokens > 0 {
		m["kl_first"] = first.KLSum / float64(first.Tokens)
	}
}

// AdvantageMetrics records the mean and mean absolute value of Â over every
// sampled response token.
func AdvantageMetrics(m metrics.Metrics, rolls []*Rollout) {
	var s, a float64
	n := 0
	for _, r := range rolls {
		for k, x := range r.Adv {
			if !r.Sampled(k) {
				continue
			}
			s += float64(x)
			a += math.Abs(float64(x))
			n++
		}
	}
	if n > 0 {
		m["adv_mean"], m["adv_abs_mean"] = s/float64(n), a/float64(n)
	}
}
