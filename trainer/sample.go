package trainer

// The sampling half of an RL step (docs/contracts.md §5): roll out the
// step's prompts and score them, add DAPO's overlong penalty
// (overlong.mode penalty), and, with dynamic_sampling.enabled (GRPO), drop
// the groups whose G rewards are all equal and roll out further batches
// until the step holds a full batch of informative groups or
// dynamic_sampling.max_batches batches were rolled out.
//
// The further prompts are the Batcher's next step groups (Batches.Next),
// so the data order stays a pure function of the run's seed and the
// checkpoint's Batcher position covers them: a resumed run draws exactly
// the batches an uninterrupted one does. Batch b > 0 of step s samples
// with its own seed, StreamSeed(run.seed, "rollout/b", s).
//
// Logged besides the rollout and reward metrics:
//
//	zero_std_frac          over the groups trained on (0 with dynamic sampling)
//	zero_std_frac_sampled  over every group rolled out (dynamic sampling)
//	resampled_groups       groups rolled out beyond the step's first batch
//	groups_trained         groups kept for the update (dynamic sampling)
//	overlong_penalty_mean  the mean penalty added to the rewards (penalty)
//
// The reward, length and level metrics cover every rollout of the step.
//
// At the steps that evaluate, a bounded sample of the step's rollouts is
// written to RUN/rollouts/ (recordRollouts) for the run report.

import (
	"context"
	"fmt"
	"time"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/rl"
)

// stepSample is what sample rolled out.
type stepSample struct {
	all     []*item   // every rollout of the step, batch after batch, group by group
	items   []*item   // the groups the step trains on
	rewards []float64 // their rewards, with the overlong penalty
}

// sample rolls out and scores step's prompts (see the file header).
func (r *rlRun) sample(ctx context.Context, step int, sb batch.StepBatch, m metrics.Metrics) (stepSample, error) {
	ds := r.Config.DynamicSampling
	recs := sb.Records()
	if !ds.Enabled {
		items, rewards, err := r.rollAndScore(ctx, step, 0, recs, m)
		if err != nil {
			return stepSample{}, err
		}
		if r.g > 1 {
			m["zero_std_frac"] = rl.ZeroStdFraction(rewards, r.g)
		}
		return stepSample{all: items, items: items, rewards: rewards}, nil
	}

	want := len(recs) // groups of a full step
	var smp stepSample
	var shaped []float64
	var kept []int // group indices into smp.all
	var tRoll, tReward float64
	m["resampled_groups"] = 0
	for b := 0; ; b++ {
		bm := metrics.Metrics{}
		items, rewards, err := r.rollAndScore(ctx, step, b, recs, bm)
		if err != nil {
			return stepSample{}, err
		}
		tRoll, tReward = tRoll+bm["time_rollout_s"], tReward+bm["time_reward_s"]
		base := len(smp.all) / r.g
		for _, gi := range rl.InformativeGroups(rewards, r.g) {
			kept = append(kept, base+gi)
		}
		smp.all, shaped = append(smp.all, items...), append(shaped, rewards...)
		if b > 0 {
			m["resampled_groups"] += float64(len(items) / r.g)
		}
		if len(kept) >= want || b+1 >= ds.MaxBatches {
			break
		}
		recs = r.Batches.Next().Records()
	}
	kept = kept[:min(len(kept), want)]
	for _, gi := range kept {
		lo := gi * r.g
		smp.items = append(smp.items, smp.all[lo:lo+r.g]...)
		smp.rewards = append(smp.rewards, shaped[lo:lo+r.g]...)
	}

	// Metrics over every rollout, as one batch would log them.
	newTok := 0
	lens, trunc := make([]int, len(smp.all)), make([]bool, len(smp.all))
	results := make([]*reward.Result, len(smp.all))
	var pen float64
	for i, it := range smp.all {
		lens[i], trunc[i], results[i] = sampledLen(&it.sample), truncated(&it.sample), it.res
		newTok += lens[i]
		pen += it.shaping
	}
	rl.LengthMetrics(m, lens, trunc)
	r.episodeMetrics(m, smp.all)
	rl.RewardMetrics(m, results, r.g)
	m["time_rollout_s"], m["time_reward_s"] = tRoll, tReward
	m["rollout_tokens_per_s"] = float64(newTok) / tRoll
	if r.Config.Overlong.Mode == "penalty" {
		m["overlong_penalty_mean"] = pen / float64(len(smp.all))
	}
	m["zero_std_frac_sampled"] = rl.ZeroStdFraction(shaped, r.g)
	m["zero_std_frac"] = rl.ZeroStdFraction(smp.rewards, r.g) // 0: only informative groups were kept
	m["groups_trained"] = float64(len(kept))
	return smp, nil
}

// rollAndScore rolls out batch b of step (prompts recs), scores the
// rollouts and adds the overlong penalty, logging into m.
func (r *rlRun) rollAndScore(ctx context.Context, step, b int, recs []int, m metrics.Metrics) ([]*item, []float64, error) {
	items, err := r.rollOut(ctx, step, b, recs, m)
	if err != nil {
		return nil, nil, err
	}
	rewards, err := r.score(ctx, items, m)
	if err != nil {
		return nil, nil, err
	}
	if r.mt == nil {
		texts := make([]string, len(items))
		for i, it := range items {
			texts[i] = it.sample.Text
		}
		r.Setup.warnFormat("step", fmt.Sprintf("step %d", step), texts)
	}
	r.shape(items, rewards, m)
	return items, rewards, nil
}

// shape adds the overlong penalty (overlong.mode penalty) to rewards, in
// place, records it in each item and logs its mean in m.
func (r *rlRun) shape(items []*item, rewards []float64, m metrics.Metrics) {
	o := r.Config.Overlong
	if o.Mode != "penalty" || len(items) == 0 {
		return
	}
	var sum float64
	for i, it := range items {
		it.shaping = rl.OverlongPenalty(len(it.sample.IDs), r.Config.Rollout.MaxNewTokens, o.Buffer, o.Penalty)
		rewards[i] += it.shaping
		sum += it.shaping
	}
	m["overlong_penalty_mean"] = sum / float64(len(items))
}

// trainOldLogProbs, with tis.cap > 0, makes π_old of every item the
// training forward's log-probs (adapters on, before the step's first
// update), keeps the sampler's as π_rollout, computes the truncated
// importance weights (rl/mismatch.go) and logs the mismatch.
func (r *rlRun) trainOldLogProbs(items []*item, m metrics.Metrics) error {
	cp := r.Config.TIS.Cap
	if cp <= 0 || len(items) == 0 {
		return nil
	}
	t0 := time.Now()
	lps, err := r.forward(items, "tis: π_old", func(o *model.Outputs, b int, it *item) []float32 {
		return append([]float32(nil), o.LogProbs[b][it.start:len(it.seq)]...)
	})
	if err != nil {
		return err
	}
	rolls := make([]*rl.Rollout, len(items))
	for i, it := range items {
		if err := it.roll.SetTIS(lps[i], cp); err != nil {
			return err
		}
		rolls[i] = &it.roll
	}
	rl.MismatchMetrics(m, rolls, cp)
	m["time_old_s"] = time.Since(t0).Seconds()
	return nil
}

// recordRollouts writes a bounded sample of the step's rollouts to
// RUN/rollouts/step-NNNNNN.jsonl (metrics/rollouts.go) at the steps that
// evaluate: every eval_every steps and the last step. It is what the run
// report shows for the last evaluated checkpoint; rank 0 writes it. items are in group order
// (r.g consecutive rollouts per prompt), after the recipe's advantages.
func (r *rlRun) recordRollouts(step int, items []*item) error {
	last := step == r.Total
	if !r.Ranks().Lead() || (!last && (r.Config.EvalEvery <= 0 || step%r.Config.EvalEvery != 0)) {
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
