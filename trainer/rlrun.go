package trainer

// The RL run GRPO and PPO share (grpo.go and ppo.go read top to bottom
// and call it): the setup on top of the scaffold (run.go) — rollout
// engine, reward, reference, the value head — and what a step works on
// (item). The step itself is rlstep.go; the maths (advantages, weighting,
// the objective, the logged stats, the reference) is trainer/rl.
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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
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
	dealt   int // the part of the step it was dealt to (ranks.Team.Deal)
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
	cleanup []func() error // run by close, last first
}

// newRLRun prepares a GRPO or PPO run from cfg.
func newRLRun(cfg config.Config, o RLOptions, spec rlSpec) (_ *rlRun, err error) {
	log := o.Log
	if log == nil {
		log = os.Stderr
	}
	algo := spec.name
	r := &rlRun{rlSpec: spec, res: &RLResult{}}
	defer func() {
		if err != nil {
			err = finish(o.Comm, err)
			err = withClose(err, r.close()) // r, not the nil that the failing return set
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
	if r.Run, err = ClaimRun(cfg, RunOptions{Name: algo, Resume: o.Resume, Log: log, Comm: o.Comm, Inputs: true}); err != nil {
		return nil, fmt.Errorf("%s: %w", algo, err)
	}

	// ---- model, tokenizer, data; the SFT adapter merged or kept trainable.
	scfg, so := cfg, SetupOptions{ValueHead: spec.critic, Log: log, Ranks: r.Ranks(), Backend: o.Backend}
	kept := cfg.Init.Adapter != "" && !cfg.Init.Merge
	if kept {
		so.Adapter = cfg.Init.Adapter
	} else if cfg.Init.Adapter != "" {
		tmp, err := os.MkdirTemp("", "argrl-merged-")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", algo, err)
		}
		r.cleanup = append(r.cleanup, func() error { return os.RemoveAll(tmp) })
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
	r.cleanup = append(r.cleanup, func() error { s.Close(); return nil })
	s.Config = cfg
	s.Model.Dir = cfg.Model.Path
	P := cfg.Optim.BatchSize * cfg.Optim.GradAccum
	most := r.Ranks().MostItems(P) // the most prompts one process rolls out
	if r.eng, err = rollout.New(s.Model, rollout.Options{Batch: max(r.g, most*r.g), MaxLen: cfg.Model.MaxLen, Tokenizer: s.Tokenizer}); err != nil {
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
	if err := r.ref.CheckTokens(cfg.Optim.MicroTokens); err != nil { // a separate reference model scores micro-batches of this budget too
		return nil, fmt.Errorf("%s: key \"optim.micro_tokens\": %w; lower optim.micro_tokens", algo, err)
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

// close frees what newRLRun made, last first, and returns the first
// failure to release it.
func (r *rlRun) close() error {
	if r == nil {
		return nil
	}
	r.stu.Close()
	r.ref.Close()
	if r.eng != nil {
		r.eng.Close()
	}
	var err error
	if r.Run != nil {
		err = r.Run.Close()
	}
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		if cerr := r.cleanup[i](); err == nil {
			err = cerr
		}
	}
	return err
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
