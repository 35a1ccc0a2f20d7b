package trainer

// The machinery GRPO and PPO share (grpo.go and ppo.go read top to bottom
// and call these): setup and resume, rolling out a step's prompts, scoring,
// reference log-probs, the clipped-surrogate updates, evaluation and
// checkpoints.
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
//	            micro-batches with mini-batch-wide loss weights (rl_loss.go).
//
// Dropout. The RL recipes train with LoRA dropout 0 whatever lora.dropout
// says (as TRL's disable_dropout and verl), so the training forward of the
// first mini-batch computes exactly the rollout's log-probs (ρ = 1).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
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
}

// RLResult summarizes a finished run.
type RLResult struct {
	Steps      int
	Checkpoint string    // the last checkpoint's directory
	Best       *float64  // best checkpoint.best_metric
	Rewards    []float64 // reward_mean of each step this process ran
}

// rlExtra is trainer_state.json's "extra" for GRPO and PPO.
type rlExtra struct {
	DropoutCounter uint64 `json:"dropout_counter"`
}

// item is one rollout of a step.
type item struct {
	ex     *Example
	sample rollout.Sample
	seq    []int32 // prompt + response ids
	start  int     // len(prompt)
	res    *reward.Result
	roll   Rollout
}

type rlRun struct {
	cfg     Config
	algo    string
	ppo     bool
	g       int // rollouts per prompt
	o       RLOptions
	log     io.Writer
	s       *Setup
	run     *Run
	eng     *rollout.Engine
	rw      reward.Reward
	stu     *student
	ref     *reference
	opt     *AdamW
	obj     Objective
	batches *Batcher
	sched   Schedule
	total   int
	start   int
	prog    *Progress
	res     *RLResult
	params  rollout.Params
	cleanup []func()
}

// newRLRun prepares a GRPO or PPO run from cfg.
func newRLRun(ctx context.Context, cfg Config, o RLOptions, algo string) (r *rlRun, err error) {
	r = &rlRun{algo: algo, ppo: algo == "ppo", o: o, log: o.Log, res: &RLResult{}}
	if r.log == nil {
		r.log = os.Stderr
	}
	defer func() {
		if err != nil {
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
		fmt.Fprintf(r.log, "%s: lora.dropout %g is not used: RL trains without dropout so that ρ = 1 on-policy\n", algo, cfg.LoRA.Dropout)
		cfg.LoRA.Dropout = 0
	}
	r.cfg, r.g = cfg, cfg.Rollout.G
	if r.ppo {
		r.g = 1
	}
	r.obj = ObjectiveFrom(cfg)

	// ---- model, tokenizer, data; the SFT adapter merged or kept trainable.
	scfg, so := cfg, SetupOptions{ValueHead: r.ppo, Log: r.log}
	kept := cfg.Init.Adapter != "" && !cfg.Init.Merge
	if kept {
		so.Adapter = cfg.Init.Adapter
	} else if cfg.Init.Adapter != "" {
		tmp, err := os.MkdirTemp("", "argrl-merged-")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", algo, err)
		}
		r.cleanup = append(r.cleanup, func() { os.RemoveAll(tmp) })
		if err := MergeAdapter(cfg.Model.Path, cfg.Init.Adapter, tmp); err != nil {
			return nil, fmt.Errorf("%s: %w", algo, err)
		}
		scfg.Model.Path = tmp
		if scfg.Model.Tokenizer == "" {
			scfg.Model.Tokenizer = cfg.Model.Path
		}
		fmt.Fprintf(r.log, "%s: merged %s into %s; training fresh LoRA on the merged model\n", algo, cfg.Init.Adapter, cfg.Model.Path)
	}
	if r.s, err = NewSetup(scfg, so); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	r.s.Config = cfg
	r.s.Model.Dir = cfg.Model.Path
	if r.run, err = OpenRun(cfg, o.Resume, r.log); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	P := cfg.Optim.BatchSize * cfg.Optim.GradAccum
	if r.eng, err = rollout.New(r.s.Model, rollout.Options{Batch: max(r.g, min(64, P*r.g)), MaxLen: cfg.Model.MaxLen, Tokenizer: r.s.Tokenizer}); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	r.params = rollout.Params{G: r.g, Temperature: float32(cfg.Rollout.Temperature), TopP: float32(cfg.Rollout.TopP),
		TopK: cfg.Rollout.TopK, MaxNewTokens: cfg.Rollout.MaxNewTokens, Stop: cfg.Rollout.Stop,
		StopIDs: rollout.StopIDs(r.s.Tokenizer, r.s.Model.Config)}

	// ---- reward (and R2IF's student), reference, optimizer, batches.
	if r.rw = o.Reward; r.rw == nil {
		rc := RewardPackageConfig(cfg)
		if cfg.Reward.Name == "r2if" && rc.R2IF.WCER != 0 {
			if r.stu, err = newStudent(cfg, r.s, r.s.Backend, r.eng); err != nil {
				return nil, fmt.Errorf("%s: %w", algo, err)
			}
			rc.Student = r.stu
		}
		if r.rw, err = reward.Get(cfg.Reward.Name, rc); err != nil {
			return nil, fmt.Errorf("%s: key \"reward.name\": %w", algo, err)
		}
	}
	if r.ref, err = newReference(cfg, r.s.Model, r.s.Backend, kept); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	if r.opt, err = NewAdamW(r.s.Backend, r.s.TrainableParams(), cfg.Optim); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	plens := make([]int, len(r.s.Train.Examples))
	for i, ex := range r.s.Train.Examples {
		plens[i] = ex.PromptLen
	}
	if r.batches, err = NewBatcher(plens, cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Data.BucketWindow, cfg.Run.Seed); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}
	r.total = TotalSteps(cfg.Optim, r.batches.StepsPerEpoch())
	if r.sched, err = NewSchedule(cfg.Optim, r.total); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}

	// ---- resume.
	if ck := r.run.Resumed; ck != nil {
		st := ck.State
		if err := r.s.LoadModel(ck.Dir); err != nil {
			return nil, fmt.Errorf("%s: resume from %s: %w", algo, ck.Dir, err)
		}
		if r.ppo {
			if err := ReadParams(r.s.Backend, ck.Path(ValueHeadFile), r.valueHead()); err != nil {
				return nil, fmt.Errorf("%s: resume from %s: %w", algo, ck.Dir, err)
			}
		}
		if err := r.ref.load(ck.Dir); err != nil {
			return nil, fmt.Errorf("%s: resume from %s: %w", algo, ck.Dir, err)
		}
		if err := r.opt.Load(ck.Path(OptimizerFile)); err != nil {
			return nil, fmt.Errorf("%s: resume from %s: %w", algo, ck.Dir, err)
		}
		if err := r.batches.Seek(st.Epoch, st.Cursor); err != nil {
			return nil, fmt.Errorf("%s: resume from %s: %w", algo, ck.Dir, err)
		}
		var ex rlExtra
		if err := json.Unmarshal(st.Extra, &ex); err != nil {
			return nil, fmt.Errorf("%s: resume from %s: %s: extra: %w", algo, ck.Dir, StateFile, err)
		}
		r.s.Model.SetDropoutCounter(ex.DropoutCounter)
		if !reflect.DeepEqual(st.Scheduler, r.sched) {
			fmt.Fprintf(r.log, "%s: warning: the schedule changed since %s (%+v, now %+v)\n", algo, ck.Name, st.Scheduler, r.sched)
		}
		r.start = st.Step
		r.res.Steps = st.Step
		fmt.Fprintf(r.log, "%s: resuming from %s (step %d of %d)\n", algo, ck.Dir, r.start, r.total)
	}
	fmt.Fprintf(r.log, "%s: %d prompts, %d steps of %d prompts × %d rollouts, reward %s, β %g, reference %s, %s\n",
		algo, len(r.s.Train.Examples), r.total, P, r.g, r.rw.Name(), cfg.TokenWeight.Beta, r.ref.kind, modeName(cfg))
	r.prog = NewProgress(r.log, r.total, r.start)
	return r, nil
}

func (r *rlRun) close() {
	if r == nil {
		return
	}
	r.stu.close()
	r.ref.close()
	if r.opt != nil {
		r.opt.Free()
	}
	if r.eng != nil {
		r.eng.Close()
	}
	if r.run != nil {
		r.run.Close()
	}
	r.s.Close()
	for _, f := range r.cleanup {
		f()
	}
}

// valueHead is PPO's value head as optimizer params.
func (r *rlRun) valueHead() []Param {
	var out []Param
	for _, p := range r.s.TrainableParams() {
		if strings.HasPrefix(p.Name, "value_head.") {
			out = append(out, p)
		}
	}
	return out
}

// rollOut samples r.g responses for each of the step's prompts (rollout
// seed: a hash of run.seed and the step) and returns them group by group.
func (r *rlRun) rollOut(ctx context.Context, step int, recs []int, m Metrics) ([]*item, error) {
	t0 := time.Now()
	exs := r.s.Train.Examples
	prompts := make([]rollout.Prompt, len(recs))
	for i, k := range recs {
		prompts[i] = rollout.Prompt{ID: exs[k].Rec.ID, IDs: exs[k].IDs[:exs[k].PromptLen]}
	}
	p := r.params
	p.Seed = seedFor(r.cfg.Run.Seed, "rollout", step)
	if r.s.Model.HasAdapters() { // the policy: adapters on
		if err := r.s.Model.SetAdapters(true); err != nil {
			return nil, err
		}
	}
	groups, err := r.eng.Generate(ctx, prompts, p)
	if err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	var items []*item
	var lens []int
	var trunc []bool
	newTok := 0
	for gi, g := range groups {
		ex := &exs[recs[gi]]
		for _, smp := range g.Samples {
			seq := append(append([]int32(nil), g.PromptIDs...), smp.IDs...)
			items = append(items, &item{ex: ex, sample: smp, seq: seq, start: len(g.PromptIDs),
				roll: Rollout{OldLP: smp.LogProbs}})
			lens = append(lens, len(smp.IDs))
			trunc = append(trunc, smp.Finish != rollout.FinishStop)
			newTok += len(smp.IDs)
		}
	}
	dt := time.Since(t0).Seconds()
	LengthMetrics(m, lens, trunc)
	m["time_rollout_s"], m["rollout_tokens_per_s"] = dt, float64(newTok)/dt
	return items, nil
}

// score computes every rollout's reward.
func (r *rlRun) score(ctx context.Context, items []*item, m Metrics) ([]float64, error) {
	t0 := time.Now()
	rewards := make([]float64, len(items))
	results := make([]*reward.Result, len(items))
	for i, it := range items {
		res, err := r.rw.Score(ctx, it.ex.Rec, it.sample.Text)
		if err != nil {
			return nil, fmt.Errorf("reward %s on %s: %w", r.rw.Name(), it.ex.Rec.ID, err)
		}
		it.res, results[i], rewards[i] = res, res, res.Reward
	}
	RewardMetrics(m, results, r.g)
	m["time_reward_s"] = time.Since(t0).Seconds()
	return rewards, nil
}

// micro is the model.Step batch size in sequences.
func (r *rlRun) micro() int { return max(1, r.cfg.Optim.BatchSize*r.g) }

// trainable returns the items with at least one response token (an empty
// response has nothing to train on; it still counts in the rewards).
func trainable(items []*item) []*item {
	var out []*item
	for _, it := range items {
		if len(it.sample.IDs) > 0 {
			out = append(out, it)
		}
	}
	return out
}

// reference fills RefLP (logπ_ref of each response token) when kl.coef ≠ 0.
func (r *rlRun) reference(items []*item, m Metrics) error {
	if r.cfg.KL.Coef == 0 {
		return nil
	}
	t0 := time.Now()
	seqs, tok := make([][]int32, len(items)), 0
	for i, it := range items {
		seqs[i] = it.seq
		tok += len(it.seq)
	}
	lp, err := r.ref.logProbs(seqs, r.micro())
	if err != nil {
		return err
	}
	for i, it := range items {
		it.roll.RefLP = lp[i][it.start:]
	}
	dt := time.Since(t0).Seconds()
	m["time_ref_s"], m["ref_tokens_per_s"] = dt, float64(tok)/dt
	return nil
}

// values fills OldV with the critic's values before the update (PPO).
func (r *rlRun) values(items []*item) error {
	ch := r.micro()
	for i := 0; i < len(items); i += ch {
		part := items[i:min(i+ch, len(items))]
		seqs := make([][]int32, len(part))
		for b, it := range part {
			seqs[b] = it.seq
		}
		o, err := r.s.Model.Forward(seqs, true)
		if err != nil {
			return fmt.Errorf("values: %w", err)
		}
		for b, it := range part {
			it.roll.OldV = append([]float32(nil), o.Values[b][it.start-1:len(it.seq)-1]...)
		}
	}
	return nil
}

// update runs ppo.epochs passes of clipped-surrogate updates over the
// step's rollouts, mini-batch by mini-batch, at learning rate lr.
func (r *rlRun) update(items []*item, step int, lr float64, m Metrics) error {
	t0 := time.Now()
	mb := r.cfg.PPO.MiniBatch
	if mb <= 0 || mb > len(items) {
		mb = len(items)
	}
	var total, first LossStats
	var norms []float64
	updates, tokens := 0, 0
	for epoch := 0; epoch < r.cfg.PPO.Epochs; epoch++ {
		for lo := 0; lo < len(items); lo += mb {
			mini := items[lo:min(lo+mb, len(items))]
			lens := make([]int, len(mini))
			for i, it := range mini {
				lens[i] = it.roll.Len()
			}
			agg, err := NewAggregation(r.cfg.LossAgg, lens, r.cfg.Rollout.MaxNewTokens)
			if err != nil {
				return err
			}
			r.s.Model.ZeroGrad()
			var st LossStats
			for mlo := 0; mlo < len(mini); mlo += r.micro() {
				part := mini[mlo:min(mlo+r.micro(), len(mini))]
				seqs := make([][]int32, len(part))
				specs := make([]RLSeq, len(part))
				for b, it := range part {
					seqs[b], specs[b] = it.seq, RLSeq{Start: it.start, R: &it.roll, Agg: mlo + b}
					tokens += len(it.seq)
				}
				err := r.s.Model.Step(seqs, func(o *model.Outputs) (*model.Grads, error) {
					var vals [][]float32
					if r.ppo {
						vals = o.Values
					}
					dlp, dv, s, err := r.obj.Grads(specs, agg, o.LogProbs, o.Entropy, vals)
					st.Add(s)
					return &model.Grads{LogProbs: dlp, Values: dv}, err
				})
				if err != nil {
					return fmt.Errorf("update: %w", err)
				}
			}
			norm, err := ClipGradNorm(r.s.Backend, r.opt.Params(), r.cfg.Optim.GradClip)
			if err != nil {
				return err
			}
			if err := r.run.CheckFinite(step, Metrics{"loss": st.Loss, "grad_norm": norm}, "loss", "grad_norm"); err != nil {
				return err
			}
			if err := r.opt.Step(lr); err != nil {
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
	LossMetrics(m, total, updates, first, r.ppo)
	var gsum float64
	for _, n := range norms {
		gsum += n
	}
	dt := time.Since(t0).Seconds()
	m["grad_norm"], m["updates"], m["lr"] = gsum/float64(max(1, len(norms))), float64(updates), lr
	m["time_train_s"], m["train_tokens_per_s"] = dt, float64(tokens)/dt
	return nil
}

// endStep logs the step, evaluates and checkpoints as the config says.
func (r *rlRun) endStep(ctx context.Context, step int, m Metrics, sb StepBatch, newTokens int) error {
	m["epoch"] = float64(sb.Epoch) + float64(sb.Index+1)/float64(r.batches.StepsPerEpoch())
	if err := r.run.Metrics.Log("train", step, m); err != nil {
		return err
	}
	r.prog.Step(step, m, newTokens)
	r.res.Steps = step
	r.res.Rewards = append(r.res.Rewards, m["reward_mean"])
	if err := r.ref.afterStep(step); err != nil {
		return err
	}
	best := false
	last := step == r.total
	if r.s.Val != nil && ((r.cfg.EvalEvery > 0 && step%r.cfg.EvalEvery == 0) || last) {
		e, err := r.evaluate(ctx)
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		if err := r.run.Metrics.Log("eval", step, e); err != nil {
			return err
		}
		best = r.run.Improved(step, e)
		r.prog.Printf("eval step %d: reward %.3f  TID %.3f TSA %.3f ACA %.3f ALC %.3f FCM %.3f", step,
			e["reward_mean"], e["tid"], e["tsa"], e["aca"], e["alc"], e["fcm"])
	}
	if (r.cfg.Checkpoint.Every > 0 && step%r.cfg.Checkpoint.Every == 0) || last || best {
		epoch, cursor := r.batches.Position()
		st := TrainerState{Step: step, Epoch: epoch, Cursor: cursor, Scheduler: r.sched}
		var err error
		if st.Extra, err = json.Marshal(rlExtra{DropoutCounter: r.s.Model.DropoutCounter()}); err != nil {
			return err
		}
		extra := func(dir string) error {
			if r.ppo {
				if err := WriteParams(r.s.Backend, filepath.Join(dir, ValueHeadFile), r.valueHead()); err != nil {
					return err
				}
			}
			return r.ref.save(dir)
		}
		dir, err := r.run.Save(Snapshot{State: st, Model: r.s.SaveModel, Optimizer: r.opt, Extra: extra, Best: best})
		if err != nil {
			return err
		}
		r.res.Checkpoint = dir
	}
	return nil
}

// evaluate runs the shared validation (loss, greedy generation, REFERENCE
// §3 rates) and adds the reward of the greedy responses.
func (r *rlRun) evaluate(ctx context.Context) (Metrics, error) {
	e, _, texts, err := r.s.Evaluate(ctx, r.s.Val, EvalOptions{Max: r.cfg.Data.ValMax, Generate: true})
	if err != nil {
		return nil, err
	}
	var sum float64
	for i, t := range texts {
		res, err := r.rw.Score(ctx, r.s.Val.Examples[i].Rec, t)
		if err != nil {
			return nil, fmt.Errorf("eval reward: %w", err)
		}
		sum += res.Reward
	}
	if len(texts) > 0 {
		e["reward_mean"] = sum / float64(len(texts))
	}
	return e, nil
}
