// Package trainer holds argrl's training recipes, SFT (sft.go), GRPO
// (grpo.go) and PPO (ppo.go), each reading top to bottom, on one scaffold
// (run.go: opening a run directory, the single restore and the single
// save) and one setup (setup.go: model, tokenizer, data, rewards); the RL
// step the two RL recipes share is rlstep.go (its setup rlrun.go). The
// pieces they call live in subpackages: config, ckpt, optim, batch,
// metrics and rl. Each recipe also runs data-parallel on the ranks of a
// dist.Comm: every phase of a step runs through the run's one team
// (trainer/ranks: the split of a step, the reductions, the failures).
// GRPO and PPO roll out multi-turn episodes with tool execution when
// rollout.max_turns > 1 (episodes.go). See docs/design.md for a GRPO step
// end to end.
package trainer

// The scaffold every recipe (SFT, GRPO, PPO) trains in, so that a recipe
// file holds its own step and nothing else:
//
//	run, err := ClaimRun(cfg, RunOptions{Name: "sft", Resume: resume, Log: log}) // lock; the checkpoint to resume
//	s, err := NewSetup(cfg, SetupOptions{…})
//	err = run.Prepare(s, lengths, parts...) // config.yaml, metrics.jsonl; AdamW, the Batcher, the LR schedule
//	err = run.Resume()                      // a continued run: restore everything from run.Resumed; watch SIGINT/SIGTERM
//	for step := run.Done + 1; step <= run.Total; step++ {
//		sb, err := run.Next(ctx, step)
//		… the recipe's step: forward, backward, clip, run.CheckFinite, run.Opt.Step(run.Sched.LR(step-1)) …
//		err = run.EndStep(ctx, step, sb, m, tokens, evaluate) // log, evaluate, checkpoint
//	}
//
// Resume and EndStep are the one place that restores and saves a recipe's
// state: the model files (Setup.SaveModel), the recipe's own Parts (PPO's
// value head, a lagged reference), optimizer.safetensors, the Batcher's
// position, the dropout counter and the token count, in trainer_state.json
// next to the schedule, the best metric and the config hash.
//
// ClaimRun (first, before the model is loaded) takes the run directory's
// lock (ckpt.LockRun: a second process on the same run.dir is refused,
// naming the holder), and only then removes what a kill left behind
// (half-written checkpoints, `latest` and config.yaml temp files), opens
// RUN/checkpoints and picks the checkpoint to resume. A fresh run refuses
// a directory that already holds a checkpoint, so a forgotten --resume
// never overwrites a run. Prepare writes RUN/config.yaml (the resolved
// config, reloadable with --config; a resumed run appends its changed keys
// to RUN/config.history instead, see config.LoadResume) and opens
// RUN/metrics.jsonl (cut back to the resumed step); OpenRun is ClaimRun
// with those files at once. A failed start leaves nothing behind: with
// RunOptions.Inputs the model's config.json and the data files are checked
// before the directory is made (CheckInputs), and Close removes what a
// fresh run's start made (directories, lock, config.yaml, metrics.jsonl)
// until Resume returns or a checkpoint is written.
//
// The config hash in trainer_state.json (ConfigHash, setup.go) covers
// every key except run.dir and the checkpoint and dist sections; resuming
// with a different hash prints a warning.
//
// Signals (trainer/internal/stop): from Resume on, the first SIGINT or SIGTERM lets the
// current step finish, writes a checkpoint and ends the run with an
// *Interrupted error (exit status 130 or 143); a second one exits at once.
//
// Data parallelism (trainer/ranks): ClaimRun makes the run's one team of
// ranks, which Setup and the recipes' phases use. With several ranks, rank 0 alone takes the
// lock, repairs the directory, picks the checkpoint to resume and writes
// config.yaml, metrics.jsonl, the checkpoints, best/ and rollouts/; the
// other ranks never write into the run directory: they read the
// checkpoint rank 0 picked, so it must be on a file system every rank
// sees. After Resume every rank holds rank 0's trainable weights
// (broadcast). A signal to any rank stops every rank after the same step.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/internal/atomicfile"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/internal/stop"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/ranks"
)

// ConfigFile is the resolved config's name inside RUN/.
const ConfigFile = "config.yaml"

// RunOptions say how ClaimRun (and OpenRun) takes the run directory.
type RunOptions struct {
	Name   string    // sft | grpo | ppo: the prefix of messages
	Resume bool      // continue from checkpoint.resume_from or RUN/checkpoints/latest
	Log    io.Writer // warnings and messages (nil: discarded)
	// Comm is this process's rank of a data-parallel run (nil: one
	// process); ClaimRun makes the run's team of it (trainer/ranks).
	Comm dist.Comm
	// Inputs: check the files a recipe reads first (CheckInputs), so
	// that a typo in a path fails before the run directory is made.
	Inputs bool
}

// A Part is recipe state that a checkpoint holds in files of its own,
// beside the model files and the optimizer: Save writes them into the
// checkpoint being assembled, Load restores them from a verified one.
type Part struct {
	Save func(dir string) error
	Load func(dir string) error
}

// Run is an open run directory and, after Prepare, the training state.
type Run struct {
	Dir     string
	Config  config.Config
	Log     io.Writer
	Metrics *metrics.Writer
	Ckpt    *ckpt.Checkpointer
	Resumed *ckpt.Checkpoint // nil for a fresh run

	// Set by Prepare and Resume:
	Setup      *Setup
	Opt        optim.Optimizer
	Batches    *batch.Batcher
	Sched      optim.Schedule
	Total      int               // optimizer steps of the run
	Done       int               // steps done when this process started
	TokensSeen int64             // kept in trainer_state.json; recipes add to it
	Progress   *metrics.Progress // the console line
	Saved      string            // the newest checkpoint this process wrote

	name      string
	ranks     *ranks.Team
	made      []string // what a fresh start created, removed by Close when the start fails
	started   bool     // Resume returned or a checkpoint was written: Close keeps the run
	latest    string   // ranks > 0: the checkpoint rank 0's `latest` names
	lock      *ckpt.Lock
	stop      *stop.Stopper
	savedStep int // the step of Saved (0: none)
	parts     []Part
	bestSeen  *float64
	bestStep  int
}

// ClaimRun takes cfg.Run.Dir for a fresh run, or with o.Resume (implied
// by checkpoint.resume_from) for a continuation from
// checkpoint.resume_from or `latest` (see ckpt.Checkpointer.Resume): it
// takes the directory's lock, removes what a kill left behind, and picks
// and verifies the checkpoint to resume, writing no file of the run yet.
// Recipes call it before their setup, so that a run directory in use or
// without the checkpoint asked for is refused before the model is loaded;
// Prepare then writes config.yaml and opens metrics.jsonl.
func ClaimRun(cfg config.Config, o RunOptions) (*Run, error) {
	warn := o.Log
	if warn == nil {
		warn = io.Discard
	}
	t, err := ranks.New(o.Comm, cfg.Dist.Shares)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: cfg.Run.Dir, Config: cfg, Log: warn, name: o.Name, ranks: t}
	if o.Inputs {
		err = CheckInputs(cfg)
	}
	if err == nil && t.Lead() {
		err = r.take(o)
	}
	if t.Size() > 1 {
		err = r.shareClaim(err)
	}
	if err != nil {
		err = withClose(err, r.Close())
		return nil, err
	}
	if d := t.Describe(); d != "" {
		fmt.Fprintf(warn, "%s: data parallel: %s\n", o.Name, d)
	}
	return r, nil
}

// take is rank 0's part of ClaimRun: the directory, its lock, the claim.
func (r *Run) take(o RunOptions) error {
	if r.Dir == "" {
		return fmt.Errorf("key \"run.dir\" is empty")
	}
	made, err := ckpt.MkdirNew(r.Dir)
	r.made = append(r.made, made...)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	lockFile := filepath.Join(r.Dir, ckpt.LockFile)
	if _, err := os.Stat(lockFile); errors.Is(err, fs.ErrNotExist) {
		r.made = append(r.made, lockFile)
	}
	lock, err := ckpt.LockRun(r.Dir)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	r.lock = lock
	made, err = ckpt.MkdirNew(filepath.Join(r.Dir, ckpt.CheckpointsDir))
	r.made = append(r.made, made...)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return r.claim(o)
}

// claimInfo is what rank 0's claim tells the other ranks.
type claimInfo struct {
	Resume string `json:"resume"` // the checkpoint directory to resume ("": none)
	Latest string `json:"latest"` // the name `latest` holds
}

// shareClaim gives every rank rank 0's claim (err: its failure): the
// other ranks verify and read the checkpoint it picked. It also makes
// sure every rank runs the same config.
func (r *Run) shareClaim(err error) error {
	t := r.ranks
	var msg []byte
	if err == nil && t.Lead() {
		info := claimInfo{}
		if r.Resumed != nil {
			info.Resume, err = filepath.Abs(r.Resumed.Dir)
		}
		if err == nil {
			info.Latest, err = r.Ckpt.Latest()
		}
		if err == nil {
			msg, err = json.Marshal(info)
		}
	}
	hashes, err := t.Gather(err, []byte(ConfigHash(r.Config)))
	if err != nil {
		return err
	}
	for rank, h := range hashes {
		if string(h) != string(hashes[0]) {
			return fmt.Errorf("run: rank %d's config differs from rank 0's (config hash %s, rank 0 %s): every rank must run the same config", rank, h, hashes[0])
		}
	}
	got, err := t.Comm().BroadcastBytes(0, msg)
	if err == nil && !t.Lead() {
		var info claimInfo
		if err = json.Unmarshal(got, &info); err == nil && info.Resume != "" {
			r.Resumed, err = ckpt.OpenDir(info.Resume, -1)
			if err == nil {
				r.bestSeen, r.bestStep = r.Resumed.State.BestMetric, r.Resumed.State.BestStep
			}
		}
		r.latest = info.Latest
	}
	return t.Check(err)
}

// OpenRun is ClaimRun followed at once by the run's files (config.yaml,
// metrics.jsonl), for a caller with no setup in between.
func OpenRun(cfg config.Config, o RunOptions) (*Run, error) {
	r, err := ClaimRun(cfg, o)
	if err != nil {
		return nil, err
	}
	if !r.ranks.Lead() {
		return r, nil
	}
	if err := r.openFiles(); err != nil {
		return nil, withClose(err, r.Close())
	}
	return r, nil
}

// claim is rank 0's ClaimRun once the lock is held.
func (r *Run) claim(o RunOptions) error {
	cfg, dir, warn := r.Config, r.Dir, r.Log
	if _, err := atomicfile.RemoveStale(dir, ConfigFile, config.HistoryFile); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	ck, err := ckpt.New(dir, cfg.Checkpoint.KeepLast)
	if err != nil {
		return err
	}
	r.Ckpt = ck
	if o.Resume || cfg.Checkpoint.ResumeFrom != "" {
		if r.Resumed, err = ck.Resume(cfg.Checkpoint.ResumeFrom, cfg.Checkpoint.Fallback, warn); err != nil {
			return err
		}
		st := r.Resumed.State
		if h := ConfigHash(cfg); st.ConfigHash != "" && st.ConfigHash != h {
			fmt.Fprintf(warn, "resume: warning: the config differs from the one %s was trained with (config hash %s, now %s)%s; the continuation will not match an uninterrupted run\n",
				r.Resumed.Name, st.ConfigHash, h, config.ChangedSince(dir, cfg))
		}
		r.bestSeen, r.bestStep = st.BestMetric, st.BestStep
		return nil
	}
	latest, err := ck.Latest()
	if err != nil {
		return err
	}
	if latest != "" {
		return fmt.Errorf("run: %s already holds checkpoint %s; continue it with --resume, or choose another run.dir", dir, latest)
	}
	return nil
}

// openFiles writes RUN/config.yaml and opens RUN/metrics.jsonl (cut back
// to the resumed step).
func (r *Run) openFiles() error {
	for _, f := range []string{ConfigFile, metrics.File} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); errors.Is(err, fs.ErrNotExist) {
			r.made = append(r.made, filepath.Join(r.Dir, f))
		}
	}
	resumeStep, err := -1, error(nil)
	if r.Resumed != nil {
		resumeStep = r.Resumed.State.Step
	}
	// A resumed run never rewrites config.yaml: the keys it changed go to
	// config.history (config.LoadResume decided they may change).
	if _, serr := os.Stat(filepath.Join(r.Dir, ConfigFile)); r.Resumed != nil && serr == nil {
		err = config.AppendHistory(r.Dir, r.Resumed.Name, r.Config, time.Now())
	} else {
		err = WriteConfigYAML(filepath.Join(r.Dir, ConfigFile), r.Config)
	}
	if err != nil {
		return err
	}
	r.Metrics, err = metrics.Open(filepath.Join(r.Dir, metrics.File), resumeStep)
	return err
}

// Close stops the signal handling, closes the metrics log, frees the
// optimizer and releases the run directory's lock. A start that failed
// (Resume never returned) leaves nothing behind: what ClaimRun and
// Prepare created for a fresh run is removed.
func (r *Run) Close() error {
	r.stop.Close()
	if r.Opt != nil {
		r.Opt.Free()
	}
	r.ranks.Free()
	var err error
	if r.Metrics != nil {
		err = r.Metrics.Close()
	}
	if uerr := r.lock.Unlock(); err == nil {
		err = uerr
	}
	if !r.started {
		for i := len(r.made) - 1; i >= 0; i-- { // files first, then their directories
			if rerr := os.Remove(r.made[i]); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
				err = fmt.Errorf("run: removing what the failed start made: %w", rerr)
			}
		}
	}
	r.made = nil
	return err
}

// Prepare writes the run's files when ClaimRun opened it (config.yaml,
// metrics.jsonl) and builds the training state for s: AdamW over every
// trainable tensor, a Batcher over records of the given lengths (tokens)
// and the schedule for the run's steps. parts are saved in every
// checkpoint and restored by Resume, in this order, after the model files.
func (r *Run) Prepare(s *Setup, lengths []int, parts ...Part) error {
	cfg := r.Config
	if r.Metrics == nil && r.ranks.Lead() {
		if err := r.openFiles(); err != nil {
			return err
		}
	}
	r.Setup, r.parts = s, parts
	opt, err := optim.NewAdamW(s.Backend, s.TrainableParams(), adamWConfig(cfg.Optim))
	if err != nil {
		return err
	}
	r.Opt = opt
	if r.Batches, err = batch.New(lengths, cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Data.BucketWindow, cfg.Run.Seed); err != nil {
		return err
	}
	r.Total = cfg.Optim.TotalSteps(r.Batches.StepsPerEpoch())
	if r.Sched, err = optim.NewSchedule(scheduleConfig(cfg.Optim), r.Total); err != nil {
		return err
	}
	return nil
}

// stateExtra is trainer_state.json's "extra".
type stateExtra struct {
	DropoutCounter uint64 `json:"dropout_counter"` // model.Step calls so far (every rank's)
	// Ranks and Shares are the data-parallel split that wrote it (0: one
	// process, one share).
	Ranks  int `json:"ranks,omitempty"`
	Shares int `json:"shares,omitempty"`
}

// Resume restores, when the run continues a checkpoint, everything Prepare
// built and EndStep saves: the model files, the parts, the optimizer, the
// Batcher's position, the dropout counter and the token count. A changed
// schedule is reported. With several ranks every rank reads the
// checkpoint, then receives rank 0's trainable weights. It then starts the
// progress line.
func (r *Run) Resume() error {
	err := r.restore()
	if t := r.ranks; t.Size() > 1 {
		if err = t.Check(err); err == nil {
			ws := make([]kernels.Buffer, 0, len(r.Opt.Params()))
			for _, p := range r.Opt.Params() {
				ws = append(ws, p.W)
			}
			if err = t.Comm().Broadcast(r.Setup.Backend, 0, ws...); err != nil {
				err = fmt.Errorf("broadcast of the trainable weights: %w", err)
			}
		}
	}
	if err != nil {
		return err
	}
	r.started = true
	r.Progress = metrics.NewProgress(r.Log, r.Total, r.Done)
	r.stop = stop.Watch(r.Log, r.name)
	return nil
}

// restore is Resume's checkpoint part.
func (r *Run) restore() error {
	if ck := r.Resumed; ck != nil {
		st := ck.State
		if err := r.Setup.LoadModel(ck.Dir); err != nil {
			return fmt.Errorf("resume from %s: %w", ck.Dir, err)
		}
		for _, p := range r.parts {
			if err := p.Load(ck.Dir); err != nil {
				return fmt.Errorf("resume from %s: %w", ck.Dir, err)
			}
		}
		if err := ckpt.LoadOptimizer(ck.Path(ckpt.OptimizerFile), r.Opt); err != nil {
			return fmt.Errorf("resume from %s: %w", ck.Dir, err)
		}
		if err := r.Batches.Seek(st.Epoch, st.Cursor); err != nil {
			return fmt.Errorf("resume from %s: %w", ck.Dir, err)
		}
		var ex stateExtra
		if err := json.Unmarshal(st.Extra, &ex); err != nil {
			return fmt.Errorf("resume from %s: %s: extra: %w", ck.Dir, ckpt.StateFile, err)
		}
		r.Setup.Model.SetDropoutCounter(ex.DropoutCounter)
		if was := max(ex.Shares, 1); was != r.ranks.Shares() {
			fmt.Fprintf(r.Log, "%s: note: %s was written summing %d shares per step, this run sums %d: the continuation matches an uninterrupted run to float32 rounding, not bit for bit (dist.shares: %d on %d ranks or on one process reproduces it)\n",
				r.name, ck.Name, was, r.ranks.Shares(), was, was)
		}
		if d := optim.ScheduleChange(st.Scheduler, r.Sched); d != "" {
			fmt.Fprintf(r.Log, "%s: warning: the learning-rate schedule changed since %s: %s; the learning rates from step %d on are not the uninterrupted run's\n", r.name, ck.Name, d, st.Step+1)
		}
		r.Done, r.TokensSeen = st.Step, st.TokensSeen
		fmt.Fprintf(r.Log, "%s: resuming from %s (step %d of %d)\n", r.name, ck.Dir, r.Done, r.Total)
	}
	return nil
}

// Next returns step's batch, or the context's error when the run was
// stopped before it, or an *Interrupted error (after a checkpoint of the
// steps done) when a signal arrived since the last step ended.
func (r *Run) Next(ctx context.Context, step int) (batch.StepBatch, error) {
	if err := ctx.Err(); err != nil {
		return batch.StepBatch{}, fmt.Errorf("stopped before step %d: %w", step, err)
	}
	if err := r.interrupted(step - 1); err != nil {
		return batch.StepBatch{}, err
	}
	return r.Batches.Next(), nil
}

// EndStep finishes step sb: it logs m (with the epoch) as the step's train
// line and shows it on the progress line (tokens processed), then — every
// eval_every steps and at the last, when there is a validation set —
// logs evaluate's metrics as an eval line, and writes a checkpoint every
// checkpoint.every steps, at the last step and at each new best
// checkpoint.best_metric. The train and eval lines precede the checkpoint
// (metrics.jsonl's resume rule). When a signal arrived during the step, it
// then makes sure a checkpoint holds the step and returns *Interrupted.
// With several ranks every rank calls it (evaluate is collective); rank 0
// alone logs and writes, evaluate returning nil metrics elsewhere.
func (r *Run) EndStep(ctx context.Context, step int, sb batch.StepBatch, m metrics.Metrics, tokens int, evaluate func(ctx context.Context, step int) (metrics.Metrics, error)) error {
	cfg := r.Config
	lead := r.ranks.Lead()
	r.ranks.TakeTimes(m)
	m["epoch"] = float64(sb.Epoch) + float64(sb.Index+1)/float64(r.Batches.StepsPerEpoch())
	if lead {
		if err := r.Metrics.Log("train", step, m); err != nil {
			return err
		}
	}
	r.Progress.Step(step, m, tokens)
	best, last := false, step == r.Total
	if r.Setup.Val != nil && ((cfg.EvalEvery > 0 && step%cfg.EvalEvery == 0) || last) {
		e, err := evaluate(ctx, step)
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		if lead {
			if err := r.Metrics.Log("eval", step, e); err != nil {
				return err
			}
			best = r.Improved(step, e)
		}
	}
	if (cfg.Checkpoint.Every > 0 && step%cfg.Checkpoint.Every == 0) || last || best {
		if err := r.checkpoint(step, best); err != nil {
			return err
		}
	}
	return r.interrupted(step)
}

// checkpoint saves the state after step (see Resume for what it holds);
// ranks > 0 only note the checkpoint rank 0 writes.
func (r *Run) checkpoint(step int, best bool) error {
	if !r.ranks.Lead() {
		r.Saved = filepath.Join(r.Dir, ckpt.CheckpointsDir, ckpt.StepName(step))
		r.latest, r.savedStep = ckpt.StepName(step), step
		return nil
	}
	epoch, cursor := r.Batches.Position()
	st := ckpt.TrainerState{Step: step, Epoch: epoch, Cursor: cursor, Scheduler: r.Sched, TokensSeen: r.TokensSeen}
	ex := stateExtra{DropoutCounter: r.Setup.Model.DropoutCounter()}
	if r.ranks.Size() > 1 || r.ranks.Shares() > 1 {
		ex.Ranks, ex.Shares = r.ranks.Size(), r.ranks.Shares()
	}
	var err error
	if st.Extra, err = json.Marshal(ex); err != nil {
		return fmt.Errorf("step %d: %w", step, err)
	}
	snap := ckpt.Snapshot{State: st, Model: r.Setup.SaveModel, Optimizer: r.Opt, Best: best}
	if len(r.parts) > 0 {
		snap.Extra = func(dir string) error {
			for _, p := range r.parts {
				if err := p.Save(dir); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if r.Saved, err = r.Save(snap); err != nil {
		return err
	}
	r.savedStep = step
	return nil
}

// Improved reports whether the eval metrics e of step beat the best
// checkpoint.best_metric so far (higher is better) and records them; a
// missing or non-finite value never improves. Save the step's checkpoint
// with Snapshot.Best = true when it returns true.
func (r *Run) Improved(step int, e metrics.Metrics) bool {
	v, ok := e[r.Config.Checkpoint.BestMetric]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if r.bestSeen != nil && v <= *r.bestSeen {
		return false
	}
	r.bestSeen, r.bestStep = &v, step
	return true
}

// Ranks is the run's team (trainer/ranks), which Setup and the
// recipes' phases run their work on.
func (r *Run) Ranks() *ranks.Team { return r.ranks }

// Shared reports whether err ended every rank of a data-parallel run, the
// failing rank's message included, so that rank 0's report of it
// suffices (train prints a failure from ranks > 0 only when it is not).
func Shared(err error) bool { return ranks.Shared(err) }

// Finish ends a recipe's run with err on every rank: each returns with
// any rank's failure (ranks.Settle).
func (r *Run) Finish(err error) error { return ranks.Settle(r.ranks.Comm(), err) }

// finish ends a recipe on the ranks of c (nil: one process): every rank
// returns with any rank's failure (ranks.Settle).
func finish(c dist.Comm, err error) error { return ranks.Settle(c, err) }

// withClose is err, or when only closing failed, that failure (err wins:
// a run's own error is what to report; a close failure after it is
// joined to it).
func withClose(err, cerr error) error {
	switch {
	case cerr == nil:
		return err
	case err == nil:
		return cerr
	}
	return errors.Join(err, cerr)
}

// Best is the best metric value seen so far (nil: none).
func (r *Run) Best() *float64 { return r.bestSeen }

// Save syncs the metrics log, stamps the config hash and the best metric
// and step into the state, and writes the checkpoint.
func (r *Run) Save(s ckpt.Snapshot) (string, error) {
	if err := r.Metrics.Sync(); err != nil {
		return "", err
	}
	s.State.ConfigHash = ConfigHash(r.Config)
	s.State.BestMetric, s.State.BestStep = r.bestSeen, r.bestStep
	r.started = true
	return r.Ckpt.Save(s)
}

// CheckFinite is the NaN guard with this run's newest checkpoint named in
// the error.
func (r *Run) CheckFinite(step int, m metrics.Metrics, keys ...string) error {
	latest := r.latest
	if r.Ckpt != nil {
		var err error
		if latest, err = r.Ckpt.Latest(); err != nil {
			latest = fmt.Sprintf("unknown (%v)", err)
		}
	}
	return metrics.CheckFinite(step, m, latest, keys...)
}

// Interrupted is the error a run stopped by a signal ends with
// (trainer/internal/stop): the command exits with its ExitCode.
type Interrupted = stop.Interrupted

// interrupted returns nil when no signal arrived (at any rank: the ranks
// agree, so that all stop after the same step). Otherwise it makes sure a
// checkpoint holds the state after step (the steps done so far) and
// returns the *Interrupted error that ends the run.
func (r *Run) interrupted(step int) error {
	sig, err := r.ranks.Signal(r.stop.Signal())
	if err != nil {
		return err
	}
	if sig == 0 {
		return nil
	}
	e := &Interrupted{Signal: sig, Step: step}
	switch {
	case step > r.Done && r.savedStep != step:
		if err := r.checkpoint(step, false); err != nil {
			return fmt.Errorf("%s: saving the checkpoint after step %d: %w", stop.Name(sig), step, err)
		}
		e.Checkpoint = r.Saved
	case step > r.Done:
		e.Checkpoint = r.Saved
	case r.Resumed != nil:
		e.Checkpoint = r.Resumed.Dir
	}
	return e
}
