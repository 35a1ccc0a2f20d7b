package trainer

// One GRPO or PPO step, as grpo.go and ppo.go run it (r.loop):
//
//	sample     the step's prompts from the Batcher; roll out G responses
//	           each (rollOut), reward them (score); overlong shaping and
//	           dynamic sampling (sample.go)
//	advantages the recipe's own part: GRPO's group advantages, PPO's
//	           critic values (values) and GAE; β on argument tokens
//	reference  logπ_ref of every response token (reference)
//	update     ppo.epochs passes over mini-batches: the objective's loss
//	           and backward (miniBatch), the clip, AdamW (update)
//	end        log, evaluate, checkpoint (endStep, run.go)
//
// Batch vocabulary (verl's, mapped onto argrl's keys):
//
//	step        one RL iteration: P = optim.batch_size × optim.grad_accum
//	            prompts from the Batcher, G rollouts each (PPO: G = 1), so
//	            N = P·G rollouts. The LR schedule, eval_every,
//	            checkpoint.every and optim.max_steps count steps.
//	mini-batch  ppo.mini_batch rollouts, in rollout order (0: all N); one
//	            optimizer update each, ppo.epochs passes over the step.
//	micro-batch optim.batch_size prompts' rollouts (batch_size·G), one
//	            model call each; gradients accumulate over a mini-batch's
//	            micro-batches with mini-batch-wide loss weights (rl/loss.go).
//
// Every model call of a step is one phase over items run by the run's
// ranks (trainer/ranks): ranks.Map hands a function the micro-batches
// this process runs and returns every item's result (the small type the
// function returns: samples, rewards, log-probs, values) to every
// process, so what follows a phase (advantages, loss_agg, metrics) reads
// every item whatever the number of processes; ranks.Accumulate does the
// same for the backward pass and sums the gradients. An item keeps the
// part of the step it was dealt to (item.dealt) from its rollout on.

import (
	"context"
	"fmt"
	"time"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/ranks"
	"github.com/argrl/argrl/trainer/rl"
)

// advantages is a recipe's own part of a step: from the scored rollouts
// (rewards in rollout order) to the rollouts it trains on, with roll.Adv
// set (GRPO: group-normalized; PPO: GAE over the critic), β applied.
type advantages func(items []*item, rewards []float64, m metrics.Metrics) ([]*item, error)

// loop runs the steps common to GRPO and PPO, around the recipe's advantages:
// sample the step's prompts, roll out and score them, advantages, reference
// log-probs, the clipped-surrogate updates of obj, then log, evaluate and
// checkpoint. stopAfter > 0 ends it after that step, as a kill would.
func (r *rlRun) loop(ctx context.Context, stopAfter int, obj rl.Objective, adv advantages) (_ *RLResult, err error) {
	defer func() { err = r.Finish(err) }() // a failure anywhere ends every process of the run
	for step := r.Done + 1; step <= r.Total; step++ {
		if stopAfter > 0 && step > stopAfter {
			break
		}
		t0, m := time.Now(), metrics.Metrics{}
		sb, err := r.Next(ctx, step)
		if err != nil {
			return r.res, fmt.Errorf("%s: %w", r.rlSpec.name, err)
		}
		fail := func(err error) (*RLResult, error) {
			return r.res, fmt.Errorf("%s: step %d: %w", r.rlSpec.name, step, err)
		}

		// ---- roll out G responses per prompt (PPO: one); score them
		// (sample.go: overlong shaping, dynamic sampling).
		smp, err := r.sample(ctx, step, sb, m)
		if err != nil {
			return fail(err)
		}
		train, err := adv(smp.items, smp.rewards, m)
		if err != nil {
			return fail(err)
		}

		// ---- reference log-probs; clipped-surrogate updates.
		if err := r.reference(train, m); err != nil {
			return fail(err)
		}
		if err := r.update(train, obj, step, r.Sched.LR(step-1), m); err != nil {
			return fail(err)
		}

		// ---- log, evaluate, checkpoint.
		if err := r.endStep(ctx, step, sb, m, smp.all, t0); err != nil {
			return r.res, fmt.Errorf("%s: %w", r.rlSpec.name, err)
		}
	}
	r.res.Best = r.Best()
	return r.res, nil
}

// rollOut samples r.g responses for each of the step's prompts (rollout
// seed: a hash of run.seed, the step and, for dynamic sampling's further
// batches, the batch) and returns them group by group.
func (r *rlRun) rollOut(ctx context.Context, step, batch int, recs []int, m metrics.Metrics) ([]*item, error) {
	t0 := time.Now()
	exs := r.Setup.Train.Examples
	p := r.params
	p.Seed = rl.StreamSeed(r.Config.Run.Seed, "rollout", step)
	if batch > 0 {
		p.Seed = rl.StreamSeed(r.Config.Run.Seed, fmt.Sprintf("rollout/%d", batch), step)
	}
	if r.Setup.Model.HasAdapters() { // the policy: adapters on
		if err := r.Setup.Model.SetAdapters(true); err != nil {
			return nil, err
		}
	}
	dealt := r.ranks.Deal(len(recs), r.Config.Optim.BatchSize)
	samples, err := ranks.Map(r.ranks, dealt, 0, nil, func(b ranks.Batch) ([][]rollout.Sample, error) {
		prompts := make([]rollout.Prompt, len(b.At))
		for i, at := range b.At {
			ex := &exs[recs[at]]
			prompts[i] = rollout.Prompt{ID: ex.Rec.ID, IDs: ex.IDs[:ex.PromptLen]}
		}
		groups, err := r.generate(ctx, prompts, b.At, recs, p)
		if err != nil {
			return nil, fmt.Errorf("rollout: %w", err)
		}
		out := make([][]rollout.Sample, len(groups))
		for i, g := range groups {
			out[i] = g.Samples
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	var items []*item
	var lens []int
	var trunc []bool
	newTok := 0
	for at, smps := range samples {
		ex := &exs[recs[at]]
		prompt := ex.IDs[:ex.PromptLen]
		for _, smp := range smps {
			seq := append(append([]int32(nil), prompt...), smp.IDs...)
			items = append(items, &item{ex: ex, sample: smp, seq: seq, start: len(prompt),
				roll: rl.Rollout{OldLP: smp.LogProbs, Mask: smp.Mask}, dealt: dealt[at]})
			lens = append(lens, sampledLen(&smp))
			trunc = append(trunc, truncated(&smp))
			newTok += sampledLen(&smp)
		}
	}
	if r.ranks.Budget() > 0 { // the model phases deal the rollouts by tokens (trainer/ranks)
		for i, s := range r.ranks.DealTokens(seqLens(items), 0) {
			items[i].dealt = s
		}
	}
	dt := time.Since(t0).Seconds()
	rl.LengthMetrics(m, lens, trunc)
	r.episodeMetrics(m, items)
	m["time_rollout_s"], m["rollout_tokens_per_s"] = dt, float64(newTok)/dt
	return items, nil
}

// rewardWire is what the step reads of a rollout's reward (the metrics,
// the advantages, the rollouts file): a Result without Args and Outcome.
type rewardWire struct {
	Reward  float64
	Gate    string
	Metrics reward.Levels
	Parts   map[string]float64
	Terms   map[string]float64 // adv.per_part normalizes each term
	Spans   [][2]int
}

// score computes every rollout's reward.
func (r *rlRun) score(ctx context.Context, items []*item, m metrics.Metrics) ([]float64, error) {
	t0 := time.Now()
	got, err := ranks.Map(r.ranks, dealtOf(items), 0, nil, func(b ranks.Batch) ([]rewardWire, error) {
		out := make([]rewardWire, len(b.At))
		for i, at := range b.At {
			it := items[at]
			res, err := r.scoreItem(ctx, it)
			if err != nil {
				return nil, fmt.Errorf("reward %s on %s: %w", r.rw.Name(), it.ex.Rec.ID, err)
			}
			out[i] = rewardWire{res.Reward, res.Gate, res.Metrics, res.Parts, res.Terms, res.Spans}
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	rewards := make([]float64, len(items))
	results := make([]*reward.Result, len(items))
	for i, it := range items {
		w := got[i]
		it.res = &reward.Result{Reward: w.Reward, Gate: w.Gate, Metrics: w.Metrics, Parts: w.Parts, Terms: w.Terms, Spans: w.Spans}
		results[i], rewards[i] = it.res, it.res.Reward
	}
	rl.RewardMetrics(m, results, r.g)
	m["time_reward_s"] = time.Since(t0).Seconds()
	return rewards, nil
}

// micro is the model.Step batch size in sequences.
func (r *rlRun) micro() int { return max(1, r.Config.Optim.BatchSize*r.g) }

// seqLens returns the tokens of items' sequences (a token budget's cut).
func seqLens(items []*item) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = len(it.seq)
	}
	return out
}

// dealtOf returns the part of the step each item was dealt to, as the
// phases over items take it.
func dealtOf(items []*item) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = it.dealt
	}
	return out
}

// trainable returns the items with at least one response token (an empty
// response has nothing to train on; it still counts in the rewards) and,
// with overlong.mode filter, that ended on a stop (a truncated one counts
// in its group's baseline only).
func (r *rlRun) trainable(items []*item) []*item {
	filter := r.Config.Overlong.Mode == "filter"
	var out []*item
	for _, it := range items {
		if len(it.sample.IDs) > 0 && (!filter || it.sample.Finish == rollout.FinishStop) {
			out = append(out, it)
		}
	}
	return out
}

// reference fills RefLP (logπ_ref of each response token) when kl.coef ≠ 0.
func (r *rlRun) reference(items []*item, m metrics.Metrics) error {
	if r.Config.KL.Coef == 0 || len(items) == 0 {
		return nil
	}
	t0 := time.Now()
	tok := 0
	for _, it := range items {
		tok += len(it.seq)
	}
	lps, err := ranks.Map(r.ranks, dealtOf(items), 0, nil, func(b ranks.Batch) ([][]float32, error) {
		seqs, lens := make([][]int32, len(b.At)), make([]int, len(b.At))
		for i, at := range b.At {
			seqs[i], lens[i] = items[at].seq, len(items[at].seq)
		}
		// the share's micro-batches, cut as the training ones (by
		// optim.micro_tokens when set), in one call: one weight swap
		lp, err := r.ref.LogProbs(seqs, r.ranks.Cut(len(seqs), r.micro(), lens))
		if err != nil {
			return nil, err
		}
		for i, at := range b.At {
			lp[i] = lp[i][items[at].start:]
		}
		return lp, nil
	})
	if err != nil {
		return err
	}
	for i, it := range items {
		it.roll.RefLP = lps[i]
	}
	dt := time.Since(t0).Seconds()
	m["time_ref_s"], m["ref_tokens_per_s"] = dt, float64(tok)/dt
	return nil
}

// values fills OldV with the critic's values before the update (PPO).
func (r *rlRun) values(items []*item) error {
	vs, err := r.forward(items, "values", func(o *model.Outputs, b int, it *item) []float32 {
		return append([]float32(nil), o.Values[b][it.start-1:len(it.seq)-1]...)
	})
	if err != nil {
		return err
	}
	for i, it := range items {
		it.roll.OldV = vs[i]
	}
	return nil
}

// forward runs the policy's forward (adapters on, no gradient) over
// items in micro-batches and returns what each item reads of its row b
// of the outputs.
func (r *rlRun) forward(items []*item, what string, each func(o *model.Outputs, b int, it *item) []float32) ([][]float32, error) {
	return ranks.Map(r.ranks, dealtOf(items), r.micro(), seqLens(items), func(b ranks.Batch) ([][]float32, error) {
		seqs := make([][]int32, len(b.At))
		for i, at := range b.At {
			seqs[i] = items[at].seq
		}
		o, err := r.Setup.Model.Forward(seqs, true)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out := make([][]float32, len(b.At))
		for i, at := range b.At {
			out[i] = each(o, i, items[at])
		}
		return out, nil
	})
}

// update runs ppo.epochs passes of updates on the objective obj over the
// step's rollouts, mini-batch by mini-batch, at learning rate lr.
func (r *rlRun) update(items []*item, obj rl.Objective, step int, lr float64, m metrics.Metrics) error {
	if err := r.trainOldLogProbs(items, m); err != nil {
		return err
	}
	t0 := time.Now()
	mb := r.Config.PPO.MiniBatch
	if mb <= 0 || mb > len(items) {
		mb = len(items)
	}
	var total, first rl.LossStats
	var norms []float64
	updates, tokens := 0, 0
	for epoch := 0; epoch < r.Config.PPO.Epochs; epoch++ {
		for lo := 0; lo < len(items); lo += mb {
			mini := items[lo:min(lo+mb, len(items))]
			lens := make([]int, len(mini))
			for i, it := range mini {
				lens[i] = it.roll.Tokens()
			}
			agg, err := rl.NewAggregation(r.Config.LossAgg, lens, r.maxSampled())
			if err != nil {
				return err
			}
			st, err := r.miniBatch(mini, obj, agg)
			if err != nil {
				return err
			}
			for _, it := range mini {
				tokens += len(it.seq)
			}
			norm, err := optim.ClipGradNorm(r.Setup.Backend, r.Opt.Params(), r.Config.Optim.GradClip)
			if err != nil {
				return err
			}
			if err := r.CheckFinite(step, metrics.Metrics{"loss": st.Loss, "grad_norm": norm}, "loss", "grad_norm"); err != nil {
				return err
			}
			if err := r.Opt.Step(lr); err != nil {
				return err
			}
			if updates == 0 {
				first = st
			}
			total.Add(st)
			norms = append(norms, norm)
			updates++
		}
	}
	rl.LossMetrics(m, total, updates, first, r.critic)
	var gsum float64
	for _, n := range norms {
		gsum += n
	}
	dt := time.Since(t0).Seconds()
	m["grad_norm"], m["updates"], m["lr"] = gsum/float64(max(1, len(norms))), float64(updates), lr
	m["time_train_s"], m["train_tokens_per_s"] = dt, float64(tokens)/dt
	return nil
}

// miniBatch is the loss and backward of one mini-batch: the objective's
// per-token gradients (rl/loss.go) through model.Step, micro-batch by
// micro-batch, leaving the mini-batch's gradients in the trainable
// params. The stats are summed over the micro-batches in a fixed order.
func (r *rlRun) miniBatch(mini []*item, obj rl.Objective, agg rl.Aggregation) (rl.LossStats, error) {
	m := r.Setup.Model
	base := m.DropoutCounter()
	stats, n, err := ranks.Accumulate(r.ranks, r.Setup.Backend, r.Opt.Params(), dealtOf(mini), r.micro(), seqLens(mini),
		func(b ranks.Batch, st *rl.LossStats) error {
			seqs := make([][]int32, len(b.At))
			specs := make([]rl.Seq, len(b.At))
			for i, at := range b.At {
				it := mini[at]
				seqs[i], specs[i] = it.seq, rl.Seq{Start: it.start, R: &it.roll, Agg: at}
			}
			m.SetDropoutCounter(base + uint64(b.Index))
			err := m.Step(seqs, func(o *model.Outputs) (*model.Grads, error) {
				// o.Values is nil without a value head (GRPO).
				dlp, dv, s, err := obj.Grads(specs, agg, o.LogProbs, o.Entropy, o.Values)
				st.Add(s)
				return &model.Grads{LogProbs: dlp, Values: dv}, err
			})
			if err != nil {
				return fmt.Errorf("update: %w", err)
			}
			return nil
		})
	m.SetDropoutCounter(base + uint64(n))
	var st rl.LossStats
	for _, s := range stats {
		st.Add(s)
	}
	return st, err
}

// endStep ends an RL step: the step's time and new tokens, the result, a
// lagged reference's refresh (ref.update_every), a sample of the rollouts
// at the steps that evaluate (sample.go), then the scaffold's log,
// evaluation and checkpoint.
func (r *rlRun) endStep(ctx context.Context, step int, sb batch.StepBatch, m metrics.Metrics, items []*item, t0 time.Time) error {
	m["time_step_s"] = time.Since(t0).Seconds()
	newTok := 0
	for _, it := range items {
		newTok += sampledLen(&it.sample)
	}
	r.res.Steps = step
	r.res.Rewards = append(r.res.Rewards, m["reward_mean"])
	if err := r.ref.AfterStep(step); err != nil {
		return err
	}
	if err := r.recordRollouts(step, items); err != nil {
		return err
	}
	err := r.EndStep(ctx, step, sb, m, newTok, r.evaluate)
	r.res.Checkpoint = r.Saved
	return err
}
