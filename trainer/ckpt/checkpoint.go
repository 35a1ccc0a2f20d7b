// Package ckpt is the checkpoint file protocol (docs/contracts.md §7):
// atomic step directories, SHA256SUMS, `latest`, RUN/best, and the resume
// state (trainer_state.json, optimizer.safetensors, parameter files).
//
// Checkpoints:
//
//	RUN/checkpoints/step-000200/  model files (adapter_config.json + adapter_model.safetensors,
//	                              or model.safetensors + config.json for full fine-tuning),
//	                              optimizer.safetensors, trainer_state.json,
//	                              value_head.safetensors (PPO), SHA256SUMS
//	RUN/checkpoints/latest        the newest complete checkpoint's name, e.g. "step-000200\n"
//	RUN/best/                     a copy (hard links) of the best validation checkpoint
//
// Save protocol, so a SIGKILL at any instant leaves the previous checkpoint
// and `latest` intact:
//
//  1. every file is written into RUN/checkpoints/.tmp-step-000200-XXXX/;
//  2. each file is hashed and fsynced; SHA256SUMS (sha256sum format, every
//     file but itself) is written and fsynced; the directory is fsynced;
//  3. the directory is renamed to step-000200 (an existing step-000200, left
//     by an abandoned timeline, is first renamed to .trash-step-000200-*) and
//     RUN/checkpoints is fsynced;
//  4. with Snapshot.Best, RUN/best is rebuilt the same way (.best-tmp-*,
//     swapped in through .best-old-*), before `latest` moves, so a resume
//     from `latest` never misses a best/ that its state records;
//  5. `latest` is replaced atomically (temp file, fsync, rename, fsync);
//  6. keep_last prunes older step directories (renamed to .del-* first).
//
// New repairs what a kill can leave behind: it deletes .tmp-*,
// .del-* and .best-tmp-* directories and a half-written `latest`
// (.latest.tmp-*), puts back a .trash-* or .best-old-* whose replacement
// never arrived, and deletes the rest. Open it only while holding the run's
// lock (LockRun): a .tmp-* directory may be another live process's
// checkpoint in progress.
//
// Loading verifies SHA256SUMS: a missing SHA256SUMS (a partial checkpoint),
// a missing, unlisted or altered file is refused with an error naming the
// file. Resume falls back to an older complete checkpoint only when asked
// (checkpoint.fallback: true), or starts from a named one
// (checkpoint.resume_from: step-000100).
package ckpt

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/argrl/argrl/internal/atomicfile"
	"github.com/argrl/argrl/internal/sha256sums"
	"github.com/argrl/argrl/trainer/optim"
)

// File names inside RUN/ and a checkpoint directory.
const (
	CheckpointsDir = "checkpoints"
	BestDir        = "best"
	LatestFile     = "latest"
	StateFile      = "trainer_state.json"
	SumsFile       = sha256sums.File
	OptimizerFile  = "optimizer.safetensors"
	ValueHeadFile  = "value_head.safetensors"
)

// TrainerState is trainer_state.json: everything besides tensors that a
// resumed run needs to continue bit-identically.
type TrainerState struct {
	Step       int               `json:"step"`        // optimizer steps done
	Epoch      int               `json:"epoch"`       // Batcher position of the next step
	Cursor     int               `json:"cursor"`      //   (step group within the epoch)
	RNG        map[string][]byte `json:"rng"`         // name → MarshalBinary of a random stream (base64 in JSON)
	Scheduler  optim.Schedule    `json:"scheduler"`   // the resolved LR schedule
	BestMetric *float64          `json:"best_metric"` // best validation metric so far (null: none yet)
	BestStep   int               `json:"best_step"`
	TokensSeen int64             `json:"tokens_seen"`
	ConfigHash string            `json:"config_hash"` // ConfigHash of the run's config
	Extra      json.RawMessage   `json:"extra,omitempty"`
}

// Snapshot is what Save writes. Nil parts are skipped.
type Snapshot struct {
	State     TrainerState
	Model     func(dir string) error // adapter (model.ExportPEFT) or full weights + config.json
	Optimizer optim.Optimizer        // its State → optimizer.safetensors (SaveOptimizer)
	Extra     func(dir string) error // e.g. WriteParams(be, dir/value_head.safetensors, head)
	Best      bool                   // also publish as RUN/best
}

// Checkpoint is a verified checkpoint directory.
type Checkpoint struct {
	Name  string // step-000200
	Dir   string
	State TrainerState
}

// Path is the path of a file inside the checkpoint.
func (ck *Checkpoint) Path(file string) string { return filepath.Join(ck.Dir, file) }

// Checkpointer writes and reads RUN/checkpoints.
type Checkpointer struct {
	run, dir string
	keepLast int // 0: keep all
}

// StepName is a checkpoint's directory name: step-000200.
func StepName(step int) string { return fmt.Sprintf("step-%06d", step) }

// ParseStepName returns the step of "step-NNNNNN" (at least 6 digits).
func ParseStepName(s string) (int, bool) {
	d, ok := strings.CutPrefix(s, "step-")
	if !ok || len(d) < 6 {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	if err != nil || n < 0 || StepName(n) != s {
		return 0, false
	}
	return n, true
}

// New opens RUN/checkpoints (creating it) and repairs what an interrupted
// Save left behind (see the file header); hold the run's lock.
func New(runDir string, keepLast int) (*Checkpointer, error) {
	c := &Checkpointer{run: runDir, dir: filepath.Join(runDir, CheckpointsDir), keepLast: keepLast}
	if err := os.MkdirAll(c.dir, atomicfile.DirMode); err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	if err := c.repair(); err != nil {
		return nil, fmt.Errorf("checkpoints: repair %s: %w", c.dir, err)
	}
	return c, nil
}

func (c *Checkpointer) repair() error {
	for _, d := range []struct{ dir, tmp, old, final string }{
		{c.dir, ".tmp-", ".trash-", ""},
		{c.run, ".best-tmp-", ".best-old-", BestDir},
	} {
		ents, err := os.ReadDir(d.dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			n := e.Name()
			switch {
			case strings.HasPrefix(n, d.tmp) || strings.HasPrefix(n, ".del-"):
				if err := os.RemoveAll(filepath.Join(d.dir, n)); err != nil {
					return err
				}
			case strings.HasPrefix(n, d.old):
				final := d.final
				if final == "" { // .trash-step-000200-XXXX
					final = strings.TrimPrefix(n, d.old)
					if i := strings.LastIndexByte(final, '-'); i > 0 {
						final = final[:i]
					}
				}
				if _, err := os.Stat(filepath.Join(d.dir, final)); errors.Is(err, fs.ErrNotExist) {
					if err := os.Rename(filepath.Join(d.dir, n), filepath.Join(d.dir, final)); err != nil {
						return err
					}
				} else if err := os.RemoveAll(filepath.Join(d.dir, n)); err != nil {
					return err
				}
			}
		}
		if err := syncDir(d.dir); err != nil {
			return err
		}
	}
	_, err := atomicfile.RemoveStale(c.dir, LatestFile)
	return err
}

// Save writes s as step-NNNNNN (NNNNNN = s.State.Step) by the protocol in
// the file header and returns the checkpoint's directory.
func (c *Checkpointer) Save(s Snapshot) (_ string, err error) {
	name := StepName(s.State.Step)
	tmp, err := atomicfile.MkdirTemp(c.dir, ".tmp-"+name+"-*")
	if err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", name, err)
	}
	ok := false
	defer func() {
		if !ok {
			if rerr := os.RemoveAll(tmp); rerr != nil {
				err = errors.Join(err, fmt.Errorf("checkpoint %s: removing %s: %w", name, tmp, rerr))
			}
		}
	}()
	if s.Model != nil {
		if err := s.Model(tmp); err != nil {
			return "", fmt.Errorf("checkpoint %s: model: %w", name, err)
		}
	}
	if s.Optimizer != nil {
		if err := SaveOptimizer(filepath.Join(tmp, OptimizerFile), s.Optimizer); err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", name, err)
		}
	}
	if s.Extra != nil {
		if err := s.Extra(tmp); err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", name, err)
		}
	}
	js, err := json.MarshalIndent(s.State, "", "  ")
	if err != nil {
		return "", fmt.Errorf("checkpoint %s: %s: %w", name, StateFile, err)
	}
	if err := WriteFileAtomic(filepath.Join(tmp, StateFile), append(js, '\n')); err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", name, err)
	}
	if err := sha256sums.Write(tmp); err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", name, err)
	}
	final := filepath.Join(c.dir, name)
	trash := ""
	if _, err := os.Stat(final); err == nil {
		trash = filepath.Join(c.dir, ".trash-"+name+"-"+filepath.Base(tmp)[len(".tmp-"+name+"-"):])
		if err := os.Rename(final, trash); err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", name, err)
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", name, err)
	}
	ok = true
	if err := syncDir(c.dir); err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", name, err)
	}
	if trash != "" {
		if err := os.RemoveAll(trash); err != nil {
			return "", fmt.Errorf("checkpoint %s: %w", name, err)
		}
	}
	if s.Best {
		if err := c.publishBest(final); err != nil {
			return "", fmt.Errorf("checkpoint %s: best: %w", name, err)
		}
	}
	if err := WriteFileAtomic(filepath.Join(c.dir, LatestFile), []byte(name+"\n")); err != nil {
		return "", fmt.Errorf("checkpoint %s: %w", name, err)
	}
	if err := c.prune(s.State.Step); err != nil {
		return "", fmt.Errorf("checkpoint %s: keep_last: %w", name, err)
	}
	return final, nil
}

// publishBest makes RUN/best a copy of the checkpoint at src.
func (c *Checkpointer) publishBest(src string) error {
	tmp, err := atomicfile.MkdirTemp(c.run, ".best-tmp-*")
	if err != nil {
		return err
	}
	files, err := sha256sums.ListFiles(src)
	if err != nil {
		return err
	}
	for _, f := range files {
		dst := filepath.Join(tmp, f)
		if err := os.MkdirAll(filepath.Dir(dst), atomicfile.DirMode); err != nil {
			return err
		}
		if err := linkOrCopy(filepath.Join(src, f), dst); err != nil {
			return err
		}
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	best := filepath.Join(c.run, BestDir)
	old := ""
	if _, err := os.Stat(best); err == nil {
		old = filepath.Join(c.run, ".best-old-"+filepath.Base(tmp)[len(".best-tmp-"):])
		if err := os.Rename(best, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, best); err != nil {
		return err
	}
	if err := syncDir(c.run); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// prune keeps the newest keepLast step directories with step ≤ upTo (those
// above belong to an abandoned timeline and are overwritten when reached).
func (c *Checkpointer) prune(upTo int) error {
	if c.keepLast <= 0 {
		return nil
	}
	names, err := c.List()
	if err != nil {
		return err
	}
	var old []string
	for _, n := range names {
		if s, _ := ParseStepName(n); s <= upTo {
			old = append(old, n)
		}
	}
	for len(old) > c.keepLast {
		n := old[0]
		old = old[1:]
		del := filepath.Join(c.dir, ".del-"+n)
		if err := os.Rename(filepath.Join(c.dir, n), del); err != nil {
			return err
		}
		if err := os.RemoveAll(del); err != nil {
			return err
		}
	}
	return nil
}

// List returns the step directories, oldest first (complete or not).
func (c *Checkpointer) List() ([]string, error) {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	type st struct {
		n    string
		step int
	}
	var out []st
	for _, e := range ents {
		if s, ok := ParseStepName(e.Name()); ok && e.IsDir() {
			out = append(out, st{e.Name(), s})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].step < out[j].step })
	names := make([]string, len(out))
	for i, o := range out {
		names[i] = o.n
	}
	return names, nil
}

// Latest returns the name in RUN/checkpoints/latest, or "" when there is none.
func (c *Checkpointer) Latest() (string, error) {
	p := filepath.Join(c.dir, LatestFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("checkpoints: %w", err)
	}
	name := strings.TrimSpace(string(b))
	if _, ok := ParseStepName(name); !ok {
		return "", fmt.Errorf("checkpoints: %s holds %q, not a checkpoint name like step-000200", p, name)
	}
	return name, nil
}

// Open verifies the named checkpoint and reads its trainer state.
func (c *Checkpointer) Open(name string) (*Checkpoint, error) {
	step, ok := ParseStepName(name)
	if !ok {
		return nil, fmt.Errorf("checkpoint %q: not a checkpoint name like step-000200", name)
	}
	return OpenDir(filepath.Join(c.dir, name), step)
}

// OpenDir verifies the checkpoint directory dir (RUN/best too) and reads
// its trainer state. wantStep < 0 skips the step check.
func OpenDir(dir string, wantStep int) (*Checkpoint, error) {
	if err := Verify(dir); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, StateFile)
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	ck := &Checkpoint{Name: filepath.Base(dir), Dir: dir}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ck.State); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", p, err)
	}
	if wantStep >= 0 && ck.State.Step != wantStep {
		return nil, fmt.Errorf("checkpoint: %s: step %d does not match the directory name %s", p, ck.State.Step, ck.Name)
	}
	return ck, nil
}

// Resume picks the checkpoint to continue from: from (a step name) if
// given, else `latest`. A checkpoint that fails verification is an error,
// unless fallback is set: then older step directories are tried, newest
// first, and each one skipped is reported on warn.
func (c *Checkpointer) Resume(from string, fallback bool, warn io.Writer) (*Checkpoint, error) {
	name := from
	if name == "" {
		var err error
		if name, err = c.Latest(); err != nil {
			return nil, err
		}
	}
	if name == "" {
		names, err := c.List()
		if err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if len(names) == 0 || !fallback {
			return nil, fmt.Errorf("resume: %s has no complete checkpoint (no %s file); start without --resume", c.dir, LatestFile)
		}
	} else {
		if _, err := os.Stat(filepath.Join(c.dir, name)); errors.Is(err, fs.ErrNotExist) && !fallback {
			return nil, c.missing(name)
		}
		ck, err := c.Open(name)
		if err == nil {
			return ck, nil
		}
		if !fallback {
			return nil, fmt.Errorf("resume: %w\n  the checkpoint is corrupt or partial and was not used; to resume from the newest older complete checkpoint, add --set checkpoint.fallback=true, or name one with --set checkpoint.resume_from=step-NNNNNN", err)
		}
		fmt.Fprintf(warn, "resume: skipping %s: %v\n", name, err)
	}
	names, err := c.List()
	if err != nil {
		return nil, err
	}
	limit, _ := ParseStepName(name)
	for i := len(names) - 1; i >= 0; i-- {
		s, _ := ParseStepName(names[i])
		if name != "" && s >= limit {
			continue
		}
		ck, err := c.Open(names[i])
		if err == nil {
			fmt.Fprintf(warn, "resume: falling back to %s\n", names[i])
			return ck, nil
		}
		fmt.Fprintf(warn, "resume: skipping %s: %v\n", names[i], err)
	}
	return nil, fmt.Errorf("resume: no complete checkpoint in %s", c.dir)
}

// missing is the error for a checkpoint name with no directory: it lists
// the checkpoints there are.
func (c *Checkpointer) missing(name string) error {
	names, err := c.List()
	if err != nil {
		return fmt.Errorf("resume: no checkpoint %s in %s (%w)", name, c.dir, err)
	}
	if len(names) == 0 {
		return fmt.Errorf("resume: no checkpoint %s in %s: it holds no checkpoint; start without --resume", name, c.dir)
	}
	have := strings.Join(names, ", ")
	switch latest, err := c.Latest(); {
	case err != nil:
		have += " (the latest pointer cannot be read: " + err.Error() + ")"
	case latest != "":
		have += " (latest: " + latest + ")"
	}
	return fmt.Errorf("resume: no checkpoint %s in %s; it holds %s: name one of them with --resume-from, or give --resume for the latest", name, c.dir, have)
}

// PutRNG stores the state of the random stream r under name.
func (s *TrainerState) PutRNG(name string, r encoding.BinaryMarshaler) error {
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
func (s *TrainerState) GetRNG(name string, r encoding.BinaryUnmarshaler) error {
	b, ok := s.RNG[name]
	if !ok {
		return fmt.Errorf("%s: no RNG state %q", StateFile, name)
	}
	if err := r.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("%s: rng %q: %w", StateFile, name, err)
	}
	return nil
}
