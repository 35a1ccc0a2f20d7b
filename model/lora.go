package model

// LoRA at run time. Every targeted linear layer computes
//
//	y = W x + (α/r)·B A x        A [r, in], B [out, r]   (α/√r with rsLoRA)
//
// with dropout on the adapter's input x while training (Step), never in
// Forward or decoding. The scale (α/r) is a run-time value the graphs and
// the decode path read, so switching adapters off (SetAdapters(false): the
// frozen reference) or merging needs neither a rebuild nor a second copy
// of the weights. Merge adds (α/r)·B A into W in place and Unmerge
// subtracts it again (exact up to float32 rounding of W + Δ − Δ).

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/argrl/argrl/kernels"
)

// loraState holds the adapters of every targeted linear layer.
type loraState struct {
	r       int
	alpha   float64
	rslora  bool
	dropout float32
	seed    uint64
	targets []string    // AllTargets order
	pairs   []*loraPair // LinearModules order
}

// loraPair is one targeted layer's A [r, in] and B [out, r].
type loraPair struct {
	path    string
	A, B    *Param
	in, out int
}

func (s *loraState) scaleValue() float32 {
	if s.rslora {
		return float32(s.alpha / math.Sqrt(float64(s.r)))
	}
	return float32(s.alpha / float64(s.r))
}

// checkAdapterOptions refuses an adapter file (Options.Adapter) whose
// rank or targets disagree with Options.LoRA.
func checkAdapterOptions(dir string, file *Adapter, l *LoRAOptions) error {
	if l == nil {
		return nil
	}
	ts := l.Targets
	if len(ts) == 0 {
		ts = AllTargets
	}
	ts, err := orderTargets(ts)
	if err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	if (l.R != 0 && l.R != file.R) || (len(l.Targets) > 0 && !slices.Equal(ts, file.Targets)) {
		return &AdapterError{Dir: dir, Err: fmt.Errorf("model: adapter %s has r=%d, targets %v; the LoRA options say r=%d, targets %v", dir, file.R, file.Targets, l.R, ts)}
	}
	return nil
}

// setupLoRA creates (LoRA) or loads (file: Options.Adapter, read and
// checked by Open) the adapters.
func (m *Model) setupLoRA(file *Adapter) error {
	o, c := m.opt, m.Config
	if o.LoRA == nil && file == nil {
		return nil
	}
	s := &loraState{}
	if a := file; a != nil {
		s.r, s.alpha, s.rslora, s.dropout, s.targets = a.R, a.Alpha, a.RSLoRA, float32(a.Dropout), a.Targets
	}
	if l := o.LoRA; l != nil {
		targets := l.Targets
		if len(targets) == 0 {
			targets = AllTargets
		}
		ts, err := orderTargets(targets)
		if err != nil {
			return fmt.Errorf("lora: %w", err)
		}
		if !(l.Dropout >= 0 && l.Dropout < 1) {
			return fmt.Errorf("lora: dropout %v outside [0, 1)", l.Dropout)
		}
		if file == nil {
			if l.R <= 0 {
				return fmt.Errorf("lora: rank r must be positive, got %d", l.R)
			}
			if !(l.Alpha > 0) {
				return fmt.Errorf("lora: alpha must be positive, got %v", l.Alpha)
			}
			s.r, s.alpha, s.rslora, s.targets = l.R, l.Alpha, l.RSLoRA, ts
		}
		s.dropout, s.seed = float32(l.Dropout), l.Seed
	}
	rng := rand.New(rand.NewPCG(s.seed, 0x6c6f7261))
	for _, mod := range LinearModules(c) {
		if !contains(s.targets, mod.Short) {
			continue
		}
		a := make([]float32, s.r*mod.In)
		b := make([]float32, mod.Out*s.r)
		if file != nil {
			l := file.Modules[mod.Path]
			copy(a, l.A.Data)
			copy(b, l.B.Data)
		} else { // PEFT: kaiming_uniform_(A, a=√5) → U(±1/√in); B = 0
			bound := 1 / math.Sqrt(float64(mod.In))
			for i := range a {
				a[i] = float32((2*rng.Float64() - 1) * bound)
			}
		}
		p := &loraPair{path: mod.Path, in: mod.In, out: mod.Out,
			A: m.newParam(peftName(mod.Path, "A"), a, s.r, mod.In),
			B: m.newParam(peftName(mod.Path, "B"), b, mod.Out, s.r)}
		s.pairs = append(s.pairs, p)
		lin := m.linearOf(mod.Path)
		if lin == nil {
			return fmt.Errorf("lora: no linear layer %s", mod.Path)
		}
		lin.lora = p
	}
	m.lora = s
	m.scale = s.scaleValue()
	return nil
}

// linearOf returns the linear layer of a module path.
func (m *Model) linearOf(path string) *Linear {
	for _, l := range m.linears {
		if l.Path == path {
			return l
		}
	}
	return nil
}

// HasAdapters reports whether the model carries LoRA adapters.
func (m *Model) HasAdapters() bool { return m.lora != nil }

// AdaptersOn reports the SetAdapters state.
func (m *Model) AdaptersOn() bool { return m.lora != nil && m.adapters }

// SetAdapters switches the adapters on (the policy) or off (the frozen base
// model, i.e. the reference). It fails while merged.
func (m *Model) SetAdapters(on bool) error {
	if m.lora == nil {
		if on {
			return fmt.Errorf("model: SetAdapters: the model has no LoRA adapters")
		}
		if m.opt.FullFT {
			return fmt.Errorf("model: SetAdapters(false): full fine-tuning keeps no frozen copy of the base weights")
		}
		return nil
	}
	if m.merged != nil {
		return fmt.Errorf("model: SetAdapters: adapters are merged; Unmerge first")
	}
	m.adapters = on
	m.scale = 0
	if on {
		m.scale = m.lora.scaleValue()
	}
	return nil
}

// merged is one targeted layer while merged: its own weight and the f32
// buffer holding W + (α/r)·B A that replaces it.
type merged struct {
	lin  *Linear
	orig *Param
}

// Merge computes W + (α/r)·B A for every targeted layer into a new f32
// buffer (for faster decoding) that the layer uses until Unmerge; the
// checkpoint's weights are never written (they may be bf16, or a read-only
// mapping of the file). It holds an f32 copy of every targeted matrix while
// merged. Until Unmerge, Step, SetAdapters and ImportAdapter fail, and
// Forward(…, true) and the decode path use the merged weights.
func (m *Model) Merge() error {
	s := m.lora
	switch {
	case s == nil:
		return fmt.Errorf("model: Merge: the model has no LoRA adapters")
	case m.merged != nil:
		return fmt.Errorf("model: Merge: adapters are already merged")
	case !m.adapters:
		return fmt.Errorf("model: Merge: adapters are switched off")
	}
	sc := s.scaleValue()
	for _, p := range s.pairs { // W'[out, in] = W + sc · B[out, r] · A[r, in]
		lin := m.linearOf(p.path)
		w := &Param{Name: lin.W.Name, Shape: lin.W.Shape, W: m.be.Alloc(kernels.F32, lin.W.Len())}
		m.be.AXPBY(w.W, lin.W.W, nil, 1, 0, w.Len())
		m.be.MatMul(w.W, p.B.W, p.A.W, kernels.MatMulParams{Batch: 1, M: p.out, N: p.in, K: s.r, Alpha: sc, Beta: 1})
		m.merged = append(m.merged, merged{lin: lin, orig: lin.W})
		lin.W = w
	}
	m.graphs.clear() // graphs bind weight buffers: rebuild on the merged ones
	if err := m.be.Sync(); err != nil {
		m.restoreMerged()
		return fmt.Errorf("model: Merge: %w", err)
	}
	m.scale = 0
	return nil
}

// Unmerge returns every targeted layer to its own weight (exactly: it was
// never modified) and frees the merged copies.
func (m *Model) Unmerge() error {
	if m.lora == nil {
		return fmt.Errorf("model: Merge: the model has no LoRA adapters")
	}
	if m.merged == nil {
		return fmt.Errorf("model: Unmerge: adapters are not merged")
	}
	m.restoreMerged()
	m.scale = m.lora.scaleValue()
	if err := m.be.Sync(); err != nil {
		return fmt.Errorf("model: Unmerge: %w", err)
	}
	return nil
}

// restoreMerged puts the original weights back and frees the merged ones.
func (m *Model) restoreMerged() {
	if m.merged == nil {
		return
	}
	m.graphs.clear()
	m.freeMerged()
}

func (m *Model) freeMerged() {
	for _, x := range m.merged {
		m.be.Free(x.lin.W.W)
		x.lin.W = x.orig
	}
	m.merged = nil
}

// Merged reports whether the adapters are merged into the weights.
func (m *Model) Merged() bool { return m.merged != nil }

// decimal32 widens f to the float64 of its shortest decimal form, so that a
// dropout of 0.05 is written 0.05, not 0.05000000074505806.
func decimal32(f float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(f), 'g', -1, 32), 64)
	if err != nil { // a float32's own formatting always parses
		return float64(f)
	}
	return v
}

// Adapter copies the adapters to the host in PEFT form.
func (m *Model) Adapter() (*Adapter, error) {
	s := m.lora
	if s == nil {
		return nil, fmt.Errorf("model: the model has no LoRA adapters")
	}
	a := &Adapter{R: s.r, Alpha: s.alpha, Dropout: decimal32(s.dropout), RSLoRA: s.rslora,
		Targets: append([]string(nil), s.targets...), BaseModel: m.Dir, Modules: map[string]*LoRA{}}
	for _, p := range s.pairs {
		l := &LoRA{A: NewTensor(p.A.Name, p.A.Shape...), B: NewTensor(p.B.Name, p.B.Shape...)}
		m.be.CopyOut(l.A.Data, p.A.W)
		m.be.CopyOut(l.B.Data, p.B.W)
		a.Modules[p.path] = l
	}
	if err := m.be.Sync(); err != nil {
		return nil, fmt.Errorf("model: read adapters: %w", err)
	}
	return a, nil
}

// ExportAdapter writes the adapters to dir in PEFT's layout
// (adapter_config.json + adapter_model.safetensors).
func (m *Model) ExportAdapter(dir string) error {
	a, err := m.Adapter()
	if err != nil {
		return err
	}
	return ExportPEFT(dir, a, m.Config)
}

// ImportAdapter loads a PEFT adapter directory into the existing adapters:
// r and the targets must match; α (and rsLoRA) are taken from the file.
func (m *Model) ImportAdapter(dir string) error {
	s := m.lora
	if s == nil {
		return fmt.Errorf("model: ImportAdapter %s: the model has no LoRA adapters (open with Options.Adapter)", dir)
	}
	if m.merged != nil {
		return fmt.Errorf("model: ImportAdapter %s: adapters are merged; Unmerge first", dir)
	}
	a, err := ImportPEFT(dir, m.Config)
	if err != nil {
		return err
	}
	if a.R != s.r || !slices.Equal(a.Targets, s.targets) {
		return fmt.Errorf("model: ImportAdapter %s: r=%d targets %v, the model's adapters have r=%d targets %v", dir, a.R, a.Targets, s.r, s.targets)
	}
	for _, p := range s.pairs {
		l := a.Modules[p.path]
		m.be.CopyIn(p.A.W, l.A.Data)
		m.be.CopyIn(p.B.W, l.B.Data)
	}
	if err := m.be.Sync(); err != nil {
		return fmt.Errorf("model: ImportAdapter %s: %w", dir, err)
	}
	s.alpha, s.rslora = a.Alpha, a.RSLoRA
	if m.adapters {
		m.scale = s.scaleValue()
	}
	return nil
}
