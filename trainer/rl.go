package trainer

// The machinery GRPO and PPO share (grpo.go and ppo.go read top to bottom
// and call these): the RL setup on top of the scaffold (run.go), rolling
// out a step's prompts, scoring, reference log-probs, the
// clipped-surrogate updates, the end of a step and evaluation. The maths
// (advantages, weighting, the objective, the logged stats, the reference)
// is trainer/rl.
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
//	            model.Step each; gradients accumulate over a mini-batch's
//	            micro-batches with mini-batch-wide loss weights (rl/loss.go).
//
// Data parallel (team.go, rl_dist.go): the step's prompts are dealt over
// the ranks' shares with their G rollouts; each rank rolls out, scores and
// runs the model on its shares' items, every rank holds the host view of
// every item (samples, rewards, values) so that advantages, loss_agg and
// metrics are global, and each mini-batch's gradients are all-reduced.
//
// Multi-turn (rollout.max_turns > 1, episodes.go): a rollout is an
// episode of several assistant turns with the environment's answers in
// between; only its sampled tokens are trained (rl.Rollout.Mask) and the
// trajectory reward scores it.
//
// Dropout. The RL recipes train with LoRA dropout 0 whatever lora.dropout
// says (as TRL's disable_dropout and verl), so the training forward of the
// first mini-batch computes exactly the rollout's log-probs (ρ = 1).

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/rl"
)

// RLOptions are the command line's (and tests') additions to the config.
type RLOptions struct {
	Resume bool      // continue from checkpoint.resume_from or RUN/checkpoints/latest
	Log    io.Writer // progress line and messages (nil: os.Stderr)
	// Reward replaces the reward reward.name builds (tests: synthetic tasks).
	Reward reward.Reward
	// StopAfter > 0 ends the loop after that step without a final
	// checkpoint, as a kill would (tests).
	StopAfter int
	// Comm is this process's rank of a data-parallel run (nil: one
	// process), Backend the one opened for it (nil: model.backend's).
	Comm    dist.Comm
	Backend kernels.Backend
}

// RLResult summarizes a finished run.
type RLResult struct {
	Steps      int
	Checkpoint string    // the last checkpoint's directory
	Best       *float64  // best checkpoint.best_metric
	Rewards    []float64 // reward_mean of each step this process ran
}

// item is one rollout of a step.
type item struct {
	ex      *Example
	sample  rollout.Sample
	seq     []int32 // prompt + response ids
	start   int     // len(prompt)
	res     *reward.Result
	shaping float64 // added to res.Reward before the advantages (overlong.mode penalty)
	roll    rl.Rollout
	share   int // the step's share holding it (team.go)
}

// rlSpec is what GRPO or PPO asks of the shared setup.
type rlSpec struct {
	name   string // grpo | ppo
	g      int    // rollouts per prompt
	critic bool   // a value head on the trunk (PPO), saved as value_head.safetensors
}

// rlRun is a GRPO or PPO run: the scaffold and what RL adds to it.
type rlRun struct {
	*Run
	rlSpec
	eng     *rollout.Engine
	params  rollout.Params // sampling; the seed is set per step
	rw      reward.Reward
	stu     *rl.Student // R2IF's CER student (nil: none)
	ref     *rl.Reference
	mt      *episodes // multi-turn rollouts (episodes.go); nil: one turn
	res     *RLResult
	cleanup []func() // run by close, last first
}

// newRLRun prepares a GRPO or PPO run from cfg.
func newRLRun(cfg config.Config, o RLOptions, spec rlSpec) (r *rlRun, err error) {
	log := o.Log
	if log == nil {
		log = os.Stderr
	}
	algo := spec.name
	r = &rlRun{rlSpec: spec, res: &RLResult{}}
	defer func() {
		if err != nil {
			err = settle(o.Comm, err)
			r.close()
			r = nil
		}
	}()
	if cfg.Algo != algo {
		return nil, fmt.Errorf("%s: key \"algo\" is %q", algo, cfg.Algo)
	}
	if err := cfg.ValidateRL(); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	if cfg.LoRA.Dropout != 0 {
		fmt.Fprintf(log, "%s: lora.dropout %g is not used: RL trains without dropout so that ρ = 1 on-policy\n", algo, cfg.LoRA.Dropout)
		cfg.LoRA.Dropout = 0
	}
	if r.Run, err = ClaimRun(cfg, RunOptions{Name: algo, Resume: o.Resume, Log: log, Comm: o.Comm}); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}

	// ---- model, tokenizer, data; the SFT adapter merged or kept trainable.
	scfg, so := cfg, SetupOptions{ValueHead: spec.critic, Log: log, Comm: o.Comm, Backend: o.Backend}
	kept := cfg.Init.Adapter != "" && !cfg.Init.Merge
	if kept {
		so.Adapter = cfg.Init.Adapter
	} else if cfg.Init.Adapter != "" {
		tmp, err := os.MkdirTemp("", "argrl-merged-")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", algo, err)
		}
		r.cleanup = append(r.cleanup, func() { os.RemoveAll(tmp) })
		if err := rl.MergeAdapter(cfg.Model.Path, cfg.Init.Adapter, tmp); err != nil {
			return nil, fmt.Errorf("%s: %w", algo, err)
		}
		scfg.Model.Path = tmp
		if scfg.Model.Tokenizer == "" {
			scfg.Model.Tokenizer = cfg.Model.Path
		}
		fmt.Fprintf(log, "%s: merged %s into %s; training fresh LoRA on the merged model\n", algo, cfg.Init.Adapter, cfg.Model.Path)
	}
	s, err := NewSetup(scfg, so)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	r.cleanup = append(r.cleanup, s.Close)
	s.Config = cfg
	s.Model.Dir = cfg.Model.Path
	P := cfg.Optim.BatchSize * cfg.Optim.GradAccum
	held := r.team.per * ((P + r.team.shares - 1) / r.team.shares) // the most prompts a rank rolls out
	if r.eng, err = rollout.New(s.Model, rollout.Options{Batch: max(r.g, held*r.g), MaxLen: cfg.Model.MaxLen, Tokenizer: s.Tokenizer}); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	r.params = rollout.Params{G: r.g, Temperature: float32(cfg.Rollout.Temperature), TopP: float32(cfg.Rollout.TopP),
		TopK: cfg.Rollout.TopK, MaxNewTokens: cfg.Rollout.MaxNewTokens, Stop: cfg.Rollout.Stop,
		StopIDs: rollout.StopIDs(s.Tokenizer, s.Model.Config)}

	// ---- reward (and R2IF's student), reference; optimizer, batches,
	// schedule (the scaffold); resume.
	if r.rw = o.Reward; r.rw == nil {
		rc := RewardPackageConfig(cfg)
		if cfg.Reward.Name == "r2if" && rc.R2IF.WCER != 0 {
			policy := rl.Policy{Model: s.Model, Engine: r.eng, Tokenizer: s.Tokenizer, Template: s.Template, Format: s.Format}
			if r.stu, err = rl.NewStudent(cfg, policy); err != nil {
				return nil, fmt.Errorf("%s: %w", algo, err)
			}
			rc.Student = r.stu
		}
		if r.rw, err = reward.Get(cfg.Reward.Name, rc); err != nil {
			return nil, fmt.Errorf("%s: key \"reward.name\": %w", algo, err)
		}
	}
	if err := r.setupEpisodes(cfg, s, log); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	if r.ref, err = rl.NewReference(cfg, s.Model, s.Backend, kept); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	var parts []Part
	if spec.critic {
		head := valueHead(s)
		parts = append(parts, Part{
			Save: func(dir string) error {
				return ckpt.WriteParams(s.Backend, filepath.Join(dir, ckpt.ValueHeadFile), head)
			},
			Load: func(dir string) error {
				return ckpt.ReadParams(s.Backend, filepath.Join(dir, ckpt.ValueHeadFile), head)
			},
		})
	}
	parts = append(parts, Part{Save: r.ref.Save, Load: r.ref.Load})
	plens := make([]int, len(s.Train.Examples))
	for i, ex := range s.Train.Examples {
		plens[i] = ex.PromptLen
	}
	if err := r.Prepare(s, plens, parts...); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	if err := r.Resume(); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	r.res.Steps = r.Done
	fmt.Fprintf(log, "%s: %d prompts, %d steps of %d prompts × %d rollouts, reward %s, β %g, reference %s, %s\n",
		algo, len(s.Train.Examples), r.Total, P, r.g, r.rw.Name(), cfg.TokenWeight.Beta, r.ref.Kind(), modeName(cfg))
	return r, nil
}

func (r *rlRun) close() {
	if r == nil {
		return
	}
	r.stu.Close()
	r.ref.Close()
	if r.eng != nil {
		r.eng.Close()
	}
	if r.Run != nil {
		r.Run.Close()
	}
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
}

// valueHead is PPO's value head among the trainable params.
func valueHead(s *Setup) []*model.Param {
	var out []*model.Param
	for _, p := range s.TrainableParams() {
		if strings.HasPrefix(p.Name, "value_head.") {
			out = append(out, p)
		}
	}
	return out
}

// rollOut samples r.g responses for each of the step's prompts (rollout
// seed: a hash of run.seed, the step and, for dynamic sampling's further
// batches, the batch) and returns them group by group. Each rank samples
// its shares' prompts; every rank gets every group.
func (r *rlRun) rollOut(ctx context.Context, step, batch int, recs []int, m metrics.Metrics) ([]*item, error) {
	t0 := time.Now()
	exs := r.Setup.Train.Examples
	shares := r.team.split(len(recs), r.Config.Optim.BatchSize)
	held := r.team.heldPositions(shares)
	prompts := make([]rollout.Prompt, len(held))
	for i, at := range held {
		k := recs[at]
		prompts[i] = rollout.Prompt{ID: exs[k].Rec.ID, IDs: exs[k].IDs[:exs[k].PromptLen]}
	}
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
	var groups []*rollout.Group
	var err error
	if len(prompts) > 0 {
		if groups, err = r.generate(ctx, prompts, held, recs, p); err != nil {
			err = fmt.Errorf("rollout: %w", err)
		}
	}
	samples, err := r.team.spreadGroups(err, shares, held, groups)
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
				roll: rl.Rollout{OldLP: smp.LogProbs, Mask: smp.Mask}, share: shares[at]})
			lens = append(lens, sampledLen(&smp))
			trunc = append(trunc, truncated(&smp))
			newTok += sampledLen(&smp)
		}
	}
	dt := time.Since(t0).Seconds()
	rl.LengthMetrics(m, lens, trunc)
	r.episodeMetrics(m, items)
	m["time_rollout_s"], m["rollout_tokens_per_s"] = dt, float64(newTok)/dt
	return items, nil
}

// score computes every rollout's reward: each rank scores its shares'
// rollouts, and every rank gets every reward.
func (r *rlRun) score(ctx context.Context, items []*item, m metrics.Metrics) ([]float64, error) {
	t0 := time.Now()
	rewards := make([]float64, len(items))
	results := make([]*reward.Result, len(items))
	var err error
	for _, it := range items {
		if !r.team.holds(it.share) {
			continue
		}
		if it.res, err = r.scoreItem(ctx, it); err != nil {
			err = fmt.Errorf("reward %s on %s: %w", r.rw.Name(), it.ex.Rec.ID, err)
			break
		}
	}
	err = spread(r.team, err, items, func(it *item) resultWire { return toWire(it.res) },
		func(it *item, w resultWire) { it.res = fromWire(w) })
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		results[i], rewards[i] = it.res, it.res.Reward
	}
	rl.RewardMetrics(m, results, r.g)
	m["time_reward_s"] = time.Since(t0).Seconds()
	return rewards, nil
}

// micro is the model.Step batch size in sequences.
func (r *rlRun) micro() int { return max(1, r.Config.Optim.BatchSize*r.g) }

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
	for _, held := range r.team.heldShares(items) { // this rank's items only
		seqs := make([][]int32, len(held))
		for i, it := range held {
			seqs[i] = it.seq
		}
		lp, err := r.ref.LogProbs(seqs, r.micro())
		if err != nil {
			return err
		}
		for i, it := range held {
			it.roll.RefLP = lp[i][it.start:]
		}
	}
	dt := time.Since(t0).Seconds()
	m["time_ref_s"], m["ref_tokens_per_s"] = dt, float64(tok)/dt
	return nil
}

// values fills OldV with the critic's values before the update (PPO): each
// rank runs its shares' items, and every rank gets every item's values.
func (r *rlRun) values(items []*item) error {
	err := r.forwardEach(items, "values", func(o *model.Outputs, b int, it *item) error {
		it.roll.OldV = append([]float32(nil), o.Values[b][it.start-1:len(it.seq)-1]...)
		return nil
	})
	return spread(r.team, err, items, func(it *item) []float32 { return it.roll.OldV },
		func(it *item, v []float32) { it.roll.OldV = v })
}

// forwardEach runs the policy's forward (adapters on, no gradient) over
// the items this rank holds, in micro-batches dealt as the step's shares
// (team.go), and hands each item its row b of the outputs. The caller
// spreads what it stores to the other ranks.
func (r *rlRun) forwardEach(items []*item, what string, each func(o *model.Outputs, b int, it *item) error) error {
	for _, c := range r.team.deal(r.micro(), shareOf(items)) {
		if !r.team.holds(c.share) {
			continue
		}
		seqs := make([][]int32, len(c.at))
		for b, at := range c.at {
			seqs[b] = items[at].seq
		}
		o, err := r.Setup.Model.Forward(seqs, true)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for b, at := range c.at {
			if err := each(o, b, items[at]); err != nil {
				return err
			}
		}
	}
	return nil
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

// advantages is a recipe's own part of a step: from the scored rollouts
// (rewards in rollout order) to the rollouts it trains on, with roll.Adv
// set (GRPO: group-normalized; PPO: GAE over the critic), β applied.
type advantages func(items []*item, rewards []float64, m metrics.Metrics) ([]*item, error)

// loop runs the steps GRPO and PPO share, around the recipe's advantages:
// sample the step's prompts, roll out and score them, advantages, reference
// log-probs, the clipped-surrogate updates of obj, then log, evaluate and
// checkpoint. stopAfter > 0 ends it after that step, as a kill would.
func (r *rlRun) loop(ctx context.Context, stopAfter int, obj rl.Objective, adv advantages) (_ *RLResult, err error) {
	defer func() { err = r.team.settle(err) }() // every rank ends with any rank's failure
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

// endStep ends an RL step: the step's time and new tokens, the result, a
// lagged reference's refresh (ref.update_every), a sample of the rollouts
// at the steps that evaluate (rollouts.go), then the scaffold's log,
// evaluation and checkpoint.
func (r *rlRun) endStep(ctx context.Context, step int, sb batch.StepBatch, m metrics.Metrics, items []*item, t0 time.Time) error {
	m["time_step_s"] = time.Since(t0).Seconds()
	r.team.takeTimes(m)
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
