package trainer

import (
	"fmt"

	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// recordRollouts writes a bounded sample of the step's rollouts to
// RUN/rollouts/step-NNNNNN.jsonl (metrics/rollouts.go) at the steps that
// evaluate: every eval_every steps and the last step. It is what the run
// report shows for the last evaluated checkpoint; rank 0 writes it. items are in group order
// (r.g consecutive rollouts per prompt), after the recipe's advantages.
func (r *rlRun) recordRollouts(step int, items []*item) error {
	last := step == r.Total
	if !r.team.lead() || (!last && (r.Config.EvalEvery <= 0 || step%r.Config.EvalEvery != 0)) {
		return nil
	}
	var groups []metrics.RolloutGroup
	for lo := 0; lo < len(items) && len(groups) < metrics.MaxRolloutGroups; lo += r.g {
		grp := items[lo:min(lo+r.g, len(items))]
		rec := grp[0].ex.Rec
		g := metrics.RolloutGroup{Group: len(groups), PromptID: rec.ID, Lang: rec.Lang}
		for i := len(rec.Messages) - 1; i >= 0; i-- {
			if rec.Messages[i].Role == "user" {
				g.Prompt = rec.Messages[i].Content
				break
			}
		}
		gold, err := goldOf(rec)
		if err != nil {
			return fmt.Errorf("rollouts: %s: %w", rec.ID, err)
		}
		g.Gold = gold
		for _, it := range grp[:min(len(grp), metrics.MaxRolloutSamples)] {
			g.Samples = append(g.Samples, rolloutSample(it, r.Config.TokenWeight.Beta))
		}
		groups = append(groups, g)
	}
	if len(groups) == 0 {
		return nil
	}
	_, err := metrics.WriteRollouts(r.Dir, step, groups)
	return err
}

// rolloutSample is one rollout as the rollouts file records it.
func rolloutSample(it *item, beta float64) metrics.RolloutSample {
	s := metrics.RolloutSample{Index: it.sample.Index, Text: it.sample.Text, Offsets: it.sample.Offsets,
		Finish: string(it.sample.Finish)}
	if s.Offsets == nil {
		s.Offsets = [][2]int{}
	}
	if it.res != nil {
		s.Weights = rl.TokenWeights(s.Offsets, it.res.Spans, beta)
		for t := range s.Weights { // multi-turn: the environment's tokens are not trained
			if it.roll.Mask != nil && !it.roll.Mask[t] {
				s.Weights[t] = 0
			}
		}
		s.Spans, s.Reward, s.Gate, s.Parts = it.res.Spans, it.res.Reward, it.res.Gate, it.res.Parts
		l := it.res.Metrics
		s.Levels = map[string]bool{"tid": l.TID, "tsa": l.TSA, "aca": l.ACA, "alc": l.ALC, "fcm": l.FCM}
	}
	// The advantage before β: Â_t / w_t averaged over the tokens (GRPO:
	// the group z-score, equal on every token).
	var sum float64
	n := 0
	for t, a := range it.roll.Adv {
		if t < len(s.Weights) && s.Weights[t] != 0 {
			sum += float64(a) / float64(s.Weights[t])
			n++
		}
	}
	if n > 0 {
		s.Adv = sum / float64(n)
	}
	return s
}
