package rl

// The reference policy π_ref of the KL term (docs/contracts.md §5), in one of three
// forms, chosen from the config:
//
//	base      the policy's own weights with LoRA switched off (no second
//	          copy): the default, and with init.merge (the SFT adapter is
//	          then part of the base, so the reference is the SFT model)
//	snapshot  a host copy of the trainable weights swapped in for the
//	          reference pass and swapped back after (bit-exact F32 copies):
//	          ref.update_every N (refreshed from the policy every N steps),
//	          init.adapter kept trainable (the reference is the initial
//	          SFT adapter, paper 000 §4.4), full fine-tuning, or ref.path
//	          naming a PEFT adapter directory with the policy's r and targets
//	model     ref.path naming a model directory: a second, frozen model
//
// A snapshot that can change (update_every) is saved in each checkpoint
// (ref_model.safetensors) so a resumed run continues with the same
// reference.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer/config"
)

// RefFile holds a lagged reference snapshot inside a checkpoint.
const RefFile = "ref_model.safetensors"

// Reference is π_ref, in the form the config chose (see the file header).
type Reference struct {
	kind        string // base | snapshot | model
	m           *model.Model
	other       *model.Model   // kind model
	params      []*model.Param // swapped tensors (kind snapshot): the policy's trainable weights, value head excluded
	snap        map[string][]float32
	updateEvery int
}

// NewReference builds the reference the config describes for the policy m
// (see the file header). initAdapterKept says init.adapter was loaded as
// the trainable adapter.
func NewReference(cfg config.Config, m *model.Model, be kernels.Backend, initAdapterKept bool) (*Reference, error) {
	r := &Reference{kind: "base", m: m, updateEvery: cfg.Ref.UpdateEvery}
	for _, p := range m.Trainable() {
		if !strings.HasPrefix(p.Name, "value_head.") {
			r.params = append(r.params, p)
		}
	}
	switch {
	case cfg.Ref.Path != "":
		if _, err := os.Stat(filepath.Join(cfg.Ref.Path, "adapter_config.json")); err == nil {
			a, err := model.ImportPEFT(cfg.Ref.Path, m.Config)
			if err != nil {
				return nil, fmt.Errorf("key \"ref.path\": %w", err)
			}
			if !m.HasAdapters() {
				return nil, fmt.Errorf("key \"ref.path\": %s is a LoRA adapter, but the policy has none (lora.enabled: false)", cfg.Ref.Path)
			}
			r.kind, r.snap = "snapshot", map[string][]float32{}
			byName := map[string]*model.Tensor{}
			for _, l := range a.Modules {
				byName[l.A.Name], byName[l.B.Name] = l.A, l.B
			}
			for _, p := range r.params {
				t := byName[p.Name]
				if t == nil || len(t.Data) != p.Len() {
					return nil, fmt.Errorf("key \"ref.path\": adapter %s does not match the policy's LoRA (r = %d, lora.targets) at %s; use an adapter of the same rank and targets", cfg.Ref.Path, cfg.LoRA.R, p.Name)
				}
				r.snap[p.Name] = t.Data
			}
			if a.Alpha != cfg.LoRA.Alpha || a.RSLoRA {
				return nil, fmt.Errorf("key \"ref.path\": adapter %s has lora_alpha %v (rslora %v), the policy's lora.alpha is %v; the swap needs the same scale", cfg.Ref.Path, a.Alpha, a.RSLoRA, cfg.LoRA.Alpha)
			}
			return r, nil
		}
		o, err := model.Open(cfg.Ref.Path, be, model.Options{MaxLen: cfg.Model.MaxLen, Compute: cfg.Model.Compute, Pack: cfg.Data.Packing})
		if err != nil {
			return nil, fmt.Errorf("key \"ref.path\": %w", err)
		}
		if o.Config.VocabSize != m.Config.VocabSize {
			o.Close()
			return nil, fmt.Errorf("key \"ref.path\": %s has vocab_size %d, the policy %d", cfg.Ref.Path, o.Config.VocabSize, m.Config.VocabSize)
		}
		r.kind, r.other = "model", o
	case cfg.Ref.UpdateEvery > 0 || initAdapterKept || !m.HasAdapters():
		r.kind = "snapshot"
		if err := r.refresh(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Kind is base, snapshot or model.
func (r *Reference) Kind() string { return r.kind }

// refresh copies the policy's current trainable weights into the snapshot.
func (r *Reference) refresh() error {
	be := r.m.Backend()
	snap := make(map[string][]float32, len(r.params))
	for _, p := range r.params {
		h := make([]float32, p.Len())
		be.CopyOut(h, p.W)
		snap[p.Name] = h
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	r.snap = snap
	return nil
}

// AfterStep refreshes a lagged reference after step (ref.update_every).
func (r *Reference) AfterStep(step int) error {
	if r.kind == "snapshot" && r.updateEvery > 0 && step%r.updateEvery == 0 {
		return r.refresh()
	}
	return nil
}

// LogProbs returns logπ_ref of every position of seqs (model.Outputs
// layout), one model call per micro-batch of micro (positions into seqs,
// each exactly once: the trainer cuts them by optim.micro_tokens, or by
// rows without it, ranks.Team.Cut). The weights are swapped once for all.
func (r *Reference) LogProbs(seqs [][]int32, micro [][]int) (_ [][]float32, err error) {
	var restore map[string][]float32
	if r.kind == "snapshot" {
		be := r.m.Backend()
		restore = make(map[string][]float32, len(r.params))
		for _, p := range r.params {
			h := make([]float32, p.Len())
			be.CopyOut(h, p.W)
			restore[p.Name] = h
			be.CopyIn(p.W, r.snap[p.Name])
		}
		if err := be.Sync(); err != nil {
			return nil, fmt.Errorf("reference: swap in: %w", err)
		}
		defer func() {
			for _, p := range r.params {
				be.CopyIn(p.W, restore[p.Name])
			}
			if serr := be.Sync(); serr != nil && err == nil {
				err = fmt.Errorf("reference: swap back: %w", serr)
			}
		}()
	}
	out := make([][]float32, len(seqs))
	for _, mb := range micro {
		part := make([][]int32, len(mb))
		for k, i := range mb {
			if i < 0 || i >= len(seqs) || out[i] != nil {
				return nil, fmt.Errorf("reference: micro-batch position %d of %d sequences out of range or repeated", i, len(seqs))
			}
			part[k] = seqs[i]
		}
		var lp [][]float32
		var err error
		switch r.kind {
		case "model":
			lp, err = r.other.LogProbs(part, false)
		case "snapshot":
			lp, err = r.m.LogProbs(part, true) // the swapped-in weights (LoRA or full)
		default:
			lp, err = r.m.LogProbs(part, false)
		}
		if err != nil {
			return nil, fmt.Errorf("reference: %w", err)
		}
		for k, i := range mb {
			out[i] = lp[k]
		}
	}
	for i, lp := range out {
		if lp == nil {
			return nil, fmt.Errorf("reference: sequence %d is in no micro-batch", i)
		}
	}
	return out, nil
}

// CheckTokens checks that a micro-batch of n tokens (optim.micro_tokens)
// fits in memory on a separate reference model (kind model; the others run
// on the policy, checked by the run).
func (r *Reference) CheckTokens(n int) error {
	if r.kind != "model" || n <= 0 {
		return nil
	}
	if err := r.other.CheckTokens(n); err != nil {
		return fmt.Errorf("reference model: %w", err)
	}
	return nil
}

// Save writes a changing snapshot into a checkpoint directory.
func (r *Reference) Save(dir string) error {
	if r.kind != "snapshot" || r.updateEvery <= 0 {
		return nil
	}
	var ts []safetensors.Tensor
	for _, p := range r.params {
		ts = append(ts, safetensors.FromFloat32(p.Name, p.Shape, r.snap[p.Name]))
	}
	if err := safetensors.WriteFile(filepath.Join(dir, RefFile), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	return nil
}

// Load restores a snapshot saved by Save.
func (r *Reference) Load(dir string) (err error) {
	if r.kind != "snapshot" || r.updateEvery <= 0 {
		return nil
	}
	f, err := safetensors.Open(filepath.Join(dir, RefFile))
	if err != nil {
		return fmt.Errorf("reference: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("reference: %w", cerr)
		}
	}()
	for _, p := range r.params {
		h, info, err := f.Float32(p.Name)
		if err != nil {
			return fmt.Errorf("reference: %s: %w", f.Path(), err)
		}
		if info.NumElements() != p.Len() {
			return fmt.Errorf("reference: %s: tensor %s has %d values, want %d", f.Path(), p.Name, info.NumElements(), p.Len())
		}
		r.snap[p.Name] = h
	}
	return nil
}

// Close frees a second reference model.
func (r *Reference) Close() {
	if r != nil && r.other != nil {
		r.other.Close()
	}
}
