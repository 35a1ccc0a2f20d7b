package model

// Served adapters (multi-LoRA, as vLLM's): PEFT adapters loaded side by
// side next to the model's own LoRA slots, each in its own f32 buffers,
// so that one KVCache.Step can run rows of different adapters (and rows of
// the base model) together. A KVRow names its adapter; the eager linear
// layer (eager.go) applies to each run of consecutive tokens its own
// adapter's branch (x·Aᵀ)·Bᵀ·scale, with the same two matmuls as the
// model's own slots, so a row computes the same bits whichever adapters
// its neighbours use (the CPU SGEMM sums each output in an order set by K
// alone).
//
//	bank k   per targeted layer: A [r, in], B [out, r]    (f32)

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// Adapter choices of a KVRow besides LoadAdapter's numbers.
const (
	// OwnAdapter (the zero value) follows the model's own LoRA slots:
	// SetAdapters, Merge.
	OwnAdapter = 0
	// NoAdapter is the base model, whatever SetAdapters says.
	NoAdapter = -1
)

// adapterBank is one adapter loaded by LoadAdapter.
type adapterBank struct {
	dir   string
	r     int
	scale float32
	pairs map[string]*loraPair // by module path
	bufs  []kernels.Buffer
}

// LoadAdapter loads the PEFT adapter in dir as a served adapter and
// returns its number (1, 2, …) for KVRow.Adapter. It may have any rank and
// targets of the model's linear layers; the model needs no LoRA of its
// own. The adapter is read-only: training and Merge use the model's own
// slots only.
func (m *Model) LoadAdapter(dir string) (int, error) {
	a, err := ImportPEFT(dir, m.Config)
	if err != nil {
		return 0, err
	}
	s := &loraState{r: a.R, alpha: a.Alpha, rslora: a.RSLoRA}
	b := &adapterBank{dir: dir, r: a.R, scale: s.scaleValue(), pairs: map[string]*loraPair{}}
	for _, mod := range LinearModules(m.Config) {
		l := a.Modules[mod.Path]
		if l == nil {
			continue
		}
		if m.linearOf(mod.Path) == nil {
			b.free(m.be)
			return 0, fmt.Errorf("model: LoadAdapter %s: no linear layer %s", dir, mod.Path)
		}
		p := &loraPair{path: mod.Path, in: mod.In, out: mod.Out,
			A: &Param{Name: peftName(mod.Path, "A"), Shape: []int{a.R, mod.In}, W: m.be.Alloc(kernels.F32, a.R*mod.In)},
			B: &Param{Name: peftName(mod.Path, "B"), Shape: []int{mod.Out, a.R}, W: m.be.Alloc(kernels.F32, mod.Out*a.R)}}
		b.bufs = append(b.bufs, p.A.W, p.B.W)
		m.be.CopyIn(p.A.W, l.A.Data)
		m.be.CopyIn(p.B.W, l.B.Data)
		b.pairs[mod.Path] = p
	}
	if err := m.be.Sync(); err != nil {
		b.free(m.be)
		return 0, fmt.Errorf("model: LoadAdapter %s: %w", dir, err)
	}
	m.banks = append(m.banks, b)
	return len(m.banks), nil
}

// LoadedAdapters is the number of adapters LoadAdapter loaded.
func (m *Model) LoadedAdapters() int { return len(m.banks) }

func (b *adapterBank) free(be kernels.Backend) {
	for _, x := range b.bufs {
		be.Free(x)
	}
	b.bufs = nil
}

// checkAdapter validates a KVRow's adapter choice.
func (m *Model) checkAdapter(a int) error {
	switch {
	case a < NoAdapter || a > len(m.banks):
		return fmt.Errorf("adapter %d: want %d (none), %d (the model's own) or a loaded adapter 1..%d", a, NoAdapter, OwnAdapter, len(m.banks))
	case a != OwnAdapter && m.merged != nil:
		return fmt.Errorf("adapter %d: the model's own adapters are merged into the weights; Unmerge first", a)
	}
	return nil
}

// loraOf returns the LoRA branch of linear layer l for adapter a (nil:
// none, or a scale of 0) and its rank and scale.
func (m *Model) loraOf(l *Linear, a int) (p *loraPair, r int, scale float32) {
	switch {
	case a == OwnAdapter:
		if l.lora == nil || m.scale == 0 {
			return nil, 0, 0
		}
		return l.lora, m.lora.r, m.scale
	case a > 0:
		b := m.banks[a-1]
		if p := b.pairs[l.Path]; p != nil && b.scale != 0 {
			return p, b.r, b.scale
		}
	}
	return nil, 0, 0
}
