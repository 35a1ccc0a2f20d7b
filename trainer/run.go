package trainer

// A run directory, as every recipe opens it:
//
//	run, err := trainer.OpenRun(cfg, resume, os.Stderr)
//	// run.Resumed is nil for a fresh run, else the verified checkpoint:
//	//   restore weights from run.Resumed.Dir, opt.Load(run.Resumed.Path(OptimizerFile)),
//	//   batcher.Seek(st.Epoch, st.Cursor), st.GetRNG("dropout", rng), …
//	for step := start+1; step <= total; step++ {
//		… train, CheckFinite, opt.Step, run.Metrics.Log("train", step, m), progress.Step(…)
//		… every eval_every: evaluate, run.Metrics.Log("eval", step, e), best := run.Improved(step, e)
//		… every checkpoint.every, or best: run.Save(snapshot)
//	}
//
// OpenRun writes RUN/config.yaml (the resolved config, reloadable with
// --config), opens RUN/checkpoints, and opens RUN/metrics.jsonl (cut back
// to the resumed step). A fresh run refuses a directory that already holds
// a checkpoint, so a forgotten --resume never overwrites a run.
//
// The config hash in trainer_state.json covers every key except run.dir and
// the checkpoint section (which do not change the trajectory); resuming
// with a different hash prints a warning, since the continuation is then
// not the uninterrupted run.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// ConfigFile is the resolved config's name inside RUN/.
const ConfigFile = "config.yaml"

// Run is an open run directory.
type Run struct {
	Dir      string
	Config   Config
	Metrics  *MetricsLog
	Ckpt     *Checkpointer
	Resumed  *Checkpoint // nil for a fresh run
	warn     io.Writer
	bestSeen *float64
	bestStep int
}

// OpenRun prepares cfg.Run.Dir for a fresh run, or with resume (implied by
// checkpoint.resume_from) for a continuation from checkpoint.resume_from or
// `latest` (see Checkpointer.Resume). Warnings go to warn.
func OpenRun(cfg Config, resume bool, warn io.Writer) (*Run, error) {
	if warn == nil {
		warn = io.Discard
	}
	dir := cfg.Run.Dir
	if dir == "" {
		return nil, fmt.Errorf("key \"run.dir\" is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	ck, err := NewCheckpointer(dir, cfg.Checkpoint.KeepLast)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Config: cfg, Ckpt: ck, warn: warn}
	resumeStep := -1
	if resume || cfg.Checkpoint.ResumeFrom != "" {
		if r.Resumed, err = ck.Resume(cfg.Checkpoint.ResumeFrom, cfg.Checkpoint.Fallback, warn); err != nil {
			return nil, err
		}
		st := r.Resumed.State
		resumeStep = st.Step
		if h := ConfigHash(cfg); st.ConfigHash != "" && st.ConfigHash != h {
			fmt.Fprintf(warn, "resume: warning: the config differs from the one %s was trained with (config hash %s, now %s); the continuation will not match an uninterrupted run\n", r.Resumed.Name, st.ConfigHash, h)
		}
		r.bestSeen, r.bestStep = st.BestMetric, st.BestStep
	} else {
		latest, err := ck.Latest()
		if err != nil {
			return nil, err
		}
		if latest != "" {
			return nil, fmt.Errorf("run: %s already holds checkpoint %s; continue it with --resume, or choose another run.dir", dir, latest)
		}
	}
	if err := WriteConfigYAML(filepath.Join(dir, ConfigFile), cfg); err != nil {
		return nil, err
	}
	if r.Metrics, err = OpenMetrics(filepath.Join(dir, MetricsFile), resumeStep); err != nil {
		return nil, err
	}
	return r, nil
}

// Close closes the metrics log.
func (r *Run) Close() error { return r.Metrics.Close() }

// Improved reports whether the eval metrics e of step beat the best
// checkpoint.best_metric so far (higher is better) and records them; a
// missing or non-finite value never improves. Save the step's checkpoint
// with Snapshot.Best = true when it returns true.
func (r *Run) Improved(step int, e Metrics) bool {
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

// Best is the best metric value seen so far (nil: none).
func (r *Run) Best() *float64 { return r.bestSeen }

// Save syncs the metrics log, stamps the config hash and the best metric
// and step into the state, and writes the checkpoint.
func (r *Run) Save(s Snapshot) (string, error) {
	if err := r.Metrics.Sync(); err != nil {
		return "", err
	}
	s.State.ConfigHash = ConfigHash(r.Config)
	s.State.BestMetric, s.State.BestStep = r.bestSeen, r.bestStep
	return r.Ckpt.Save(s)
}

// CheckFinite is the NaN guard with this run's newest checkpoint named in
// the error.
func (r *Run) CheckFinite(step int, m Metrics, keys ...string) error {
	latest, _ := r.Ckpt.Latest()
	return CheckFinite(step, m, latest, keys...)
}

// ConfigHash is "sha256:<hex>" of the config's YAML without run.dir and
// the checkpoint section.
func ConfigHash(c Config) string {
	c.Run.Dir = ""
	c.Checkpoint = CheckpointConfig{}
	b, err := yaml.Marshal(c)
	if err != nil { // a plain struct of scalars and lists always marshals
		return "sha256:?"
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// WriteConfigYAML writes the resolved config atomically, reloadable by Load.
func WriteConfigYAML(path string, c Config) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("run: %s: %w", path, err)
	}
	head := fmt.Sprintf("# train %s --config %s\n# The resolved config of this run: defaults, the config file, ARGRL_* and --set.\n", c.Algo, path)
	if err := writeFileAtomic(path, append([]byte(head), b...)); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// PutRNG stores r's state under name.
func (s *TrainerState) PutRNG(name string, r *RNG) error {
	b, err := r.MarshalBinary()
	if err != nil {
		return fmt.Errorf("rng %q: %w", name, err)
	}
	if s.RNG == nil {
		s.RNG = map[string][]byte{}
	}
	s.RNG[name] = b
	return nil
}

// GetRNG restores r from the state stored under name.
func (s *TrainerState) GetRNG(name string, r *RNG) error {
	b, ok := s.RNG[name]
	if !ok {
		return fmt.Errorf("%s: no RNG state %q", StateFile, name)
	}
	if err := r.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("%s: rng %q: %w", StateFile, name, err)
	}
	return nil
}
