package metrics

import (
	"sort"
	"strings"
)

// chartSpec is one chart of the report: its series over every run.
type chartSpec struct {
	ID     string        `json:"id"`
	Title  string        `json:"title"`
	YLabel string        `json:"ylabel"`
	Series []chartSeries `json:"series"`
}

// chartSeries is a line of a kind's key, or with Lo and Hi the band
// between two keys.
type chartSeries struct {
	Kind  string `json:"kind"` // train | eval
	Key   string `json:"key,omitempty"`
	Lo    string `json:"lo,omitempty"`
	Hi    string `json:"hi,omitempty"`
	Label string `json:"label"`
}

func lines(kind string, keys ...string) []chartSeries {
	var out []chartSeries
	for _, k := range keys {
		out = append(out, chartSeries{Kind: kind, Key: k, Label: k})
	}
	return out
}

func evalLines(keys ...string) []chartSeries {
	out := lines("eval", keys...)
	for i := range out {
		out[i].Label = "eval " + out[i].Label
	}
	return out
}

// reportChartDefs are the curves that matter, in page order;
// "reward_parts" takes its series from the logs.
var reportChartDefs = []chartSpec{
	{"reward", "Reward (band: min–max over the step's rollouts)", "reward", append([]chartSeries{
		{Kind: "train", Lo: "reward_min", Hi: "reward_max", Label: "min–max"}}, append(lines("train", "reward_mean"), evalLines("reward_mean")...)...)},
	{"reward_parts", "Reward parts", "reward", nil},
	{"levels", "Rollouts passing each level", "fraction", lines("train", "rate_tid", "rate_tsa", "rate_aca", "rate_alc", "rate_fcm")},
	{"eval", "Validation rates", "rate", evalLines("tid", "tsa", "aca", "alc", "fcm", "exact_match")},
	{"kl", "KL to the reference", "KL", lines("train", "kl", "kl_first")},
	{"loss", "Loss", "loss", append(lines("train", "loss", "pg_loss", "kl_loss", "vf_loss"), evalLines("loss")...)},
	{"entropy", "Entropy", "nats / token", lines("train", "entropy")},
	{"clip", "Clip fraction", "fraction of tokens", lines("train", "clip_frac", "vf_clip_frac")},
	{"resp_len", "Response length", "tokens", lines("train", "resp_len", "resp_len_max")},
	{"fracs", "Truncated responses, groups without signal", "fraction", lines("train", "truncated_frac", "zero_std_frac")},
	{"throughput", "Throughput", "tokens / s", lines("train", "tokens_per_s", "rollout_tokens_per_s", "train_tokens_per_s", "ref_tokens_per_s")},
	{"time", "Step time", "s", lines("train", "time_step_s", "time_rollout_s", "time_reward_s", "time_ref_s", "time_train_s")},
	{"adv", "Advantage (after β)", "Â", lines("train", "adv_mean", "adv_abs_mean")},
	{"grad_norm", "Gradient norm (before clipping)", "‖g‖", lines("train", "grad_norm")},
	{"lr", "Learning rate", "lr", lines("train", "lr")},
}

// reportCharts returns the charts with a value in some run, and one chart
// per other logged key (the per-language rates, in the tables, excepted).
func reportCharts(runs []reportRun) (charts, others []chartSpec) {
	has := func(kind, key string) bool {
		for _, r := range runs {
			c := r.Train
			if kind == "eval" {
				c = r.Eval
			}
			for _, v := range c.Keys[key] {
				if v != nil {
					return true
				}
			}
		}
		return false
	}
	used := map[string]bool{}
	for _, def := range reportChartDefs {
		if def.ID == "reward_parts" {
			def.Series = partSeries(runs)
		}
		c := def
		c.Series = nil
		for _, s := range def.Series {
			for _, k := range []string{s.Key, s.Lo, s.Hi} {
				if k != "" {
					used[s.Kind+"/"+k] = true
				}
			}
			if s.Key != "" && has(s.Kind, s.Key) || s.Lo != "" && has(s.Kind, s.Lo) && has(s.Kind, s.Hi) {
				c.Series = append(c.Series, s)
			}
		}
		if len(c.Series) > 0 {
			charts = append(charts, c)
		}
	}
	seen := map[string]bool{}
	for _, r := range runs {
		for kind, c := range map[string]columns{"train": r.Train, "eval": r.Eval} {
			for k := range c.Keys {
				id := kind + "/" + k
				if used[id] || seen[id] || strings.Contains(k, ".") {
					continue
				}
				seen[id] = true
				others = append(others, chartSpec{ID: "other_" + kind + "_" + k, Title: kind + " " + k, YLabel: k,
					Series: []chartSeries{{Kind: kind, Key: k, Label: k}}})
			}
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Title < others[j].Title })
	return charts, others
}

// partSeries are the reward_<part> keys of every run's train lines.
func partSeries(runs []reportRun) []chartSeries {
	set := map[string]bool{}
	for _, r := range runs {
		for k := range r.Train.Keys {
			if strings.HasPrefix(k, "reward_") && !rewardStats[k] {
				set[k] = true
			}
		}
	}
	var keys []string
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := lines("train", keys...)
	for i := range out {
		out[i].Label = strings.TrimPrefix(out[i].Key, "reward_")
	}
	return out
}
