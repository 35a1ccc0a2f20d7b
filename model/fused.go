package model

// Fused projections. On a backend that asks for them
// (kernels.FusedProjections: the CUDA backend) Open concatenates each
// layer's q, k and v weights into one [Hq·D + 2·Hkv·D, C] buffer and its
// gate and up weights into one [2F, C], and the layer's projections become
// one GEMM each:
//
//	y = x·[W_q; W_k; W_v]ᵀ     [n, Hq·D + 2·Hkv·D]   q, k, v in that order per row
//	y = x·[W_gate; W_up]ᵀ      [n, 2F]               gate in [0, F), up in [F, 2F)
//
// Each member's weight becomes a view of the concatenation (no second
// copy); its checkpoint name, its LoRA adapter and its PEFT path do not
// change. The parts are cut out of y as dense [n, w] activations
// (kernels.ColumnBlock, an exact copy) and each target's LoRA branch adds
// to its own part, as in the unfused linear. On the CPU backend (which
// maps the checkpoint in place) nothing is concatenated: that would be a
// second resident copy of the weights (see BENCHMARKS.md for what fusing
// would gain there).
//
// A fused GEMM computes every element of a part as the separate GEMM does
// (the same K-long dot product); on the CPU the order of that sum does not
// depend on N, so the parts are bit-identical to the unfused ones. The
// input gradient of a fused projection is one GEMM over all the parts'
// output gradients, summed in another order than the separate GEMMs'
// results added together: equal within float32 rounding. While adapters
// are merged (Merge) the layers run unfused over their merged weights.

import (
	"strings"

	"github.com/argrl/argrl/kernels"
)

// fusedLinear is several linear layers over one input, computed as one
// GEMM over their concatenated weights.
type fusedLinear struct {
	W      *Param    // [Σ out, in], the members' weights by rows
	parts  []*Linear // in output order; each member's W is a view of W
	widths []int     // each member's out
	// bias, when set, is the members' biases concatenated [Σ out] (Qwen2's
	// q, k and v; each member's bias a view of it), added by the GEMM
	// (MatMulParams.Bias: cuBLASLt's bias epilogue) before the LoRA
	// branches, as PEFT orders them: (x·Wᵀ + b) + (α/r)·B A x.
	bias *Param
	// inPlace: eagerOps leaves the parts in the GEMM's output as column
	// blocks (act.ld), each LoRA branch accumulating into its own columns
	// (MatMulParams.LdC), instead of copying them out: gate/up, whose one
	// reader, SwiGLU, takes a row stride. q, k and v are read by RoPE, the
	// bias and the KV write, which take dense rows, and are still copied.
	inPlace bool
}

// attnLayer and mlpLayer reach the shared blocks of an architecture's
// layer struct (every architecture embeds Attention and MLP).
type attnLayer interface{ attn() *Attention }
type mlpLayer interface{ mlp() *MLP }

func (a *Attention) attn() *Attention { return a }
func (m *MLP) mlp() *MLP              { return m }

// fuseProjections says whether Open fuses on be (a variable so tests can
// fuse on the CPU backend).
var fuseProjections = func(be kernels.Backend) bool {
	f, ok := be.(kernels.FusedProjections)
	return ok && f.FusedProjections()
}

// foldBiases says whether Open also folds Qwen2's q/k/v biases into the
// fused GEMM: in the bf16 tensor-core modes of the CUDA backend (where it
// fuses and computes in bf16), the one place a separate bias pass costs a
// read and a write of the projection's output on the GPU.
var foldBiases = func(be kernels.Backend) bool { return fuseProjections(be) && kernels.BF16Products(be) }

// fuse concatenates every layer's q/k/v and gate/up weights when the
// backend asks for it (and Qwen2's q/k/v biases with foldBiases). Full
// fine-tuning keeps separate trainable weights.
func (m *Model) fuse() {
	if m.opt.FullFT || !fuseProjections(m.be) {
		return
	}
	for i := range m.w.numLayers() {
		l := m.w.layer(i)
		if a, ok := l.(attnLayer); ok {
			at := a.attn()
			at.qkv = m.concat(at.Q, at.K, at.V)
			if q2, ok := l.(*Qwen2Layer); ok && at.qkv != nil && foldBiases(m.be) {
				at.qkv.bias = m.concatBias(q2.QBias, q2.KBias, q2.VBias)
			}
		}
		if f, ok := l.(mlpLayer); ok {
			ml := f.mlp()
			ml.gateUp = m.concat(ml.Gate, ml.Up)
			if ml.gateUp != nil {
				ml.gateUp.inPlace = true
			}
		}
	}
}

// concat puts the members' weights one after another in a new buffer and
// makes each member's W a view of it; nil (nothing changed) when their
// storage types or input sizes differ.
func (m *Model) concat(ls ...*Linear) *fusedLinear {
	dt, in := ls[0].W.W.DType(), ls[0].W.Shape[1]
	f := &fusedLinear{parts: ls}
	names := make([]string, len(ls))
	rows := 0
	for i, l := range ls {
		if l.W.W.DType() != dt || len(l.W.Shape) != 2 || l.W.Shape[1] != in {
			return nil
		}
		f.widths = append(f.widths, l.W.Shape[0])
		names[i] = l.W.Name
		rows += l.W.Shape[0]
	}
	buf := m.be.Alloc(dt, rows*in)
	off := 0
	for _, l := range ls {
		n := l.W.Len()
		v := m.be.View(buf, off, n)
		m.be.Copy(v, l.W.W)
		m.be.Free(l.W.W)
		l.W.W = v
		off += n
	}
	f.W = &Param{Name: strings.Join(names, "+"), Shape: []int{rows, in}, W: buf}
	m.fusedW = append(m.fusedW, buf)
	return f
}

// concatBias puts f32 vectors one after another in a new buffer and makes
// each a view of it.
func (m *Model) concatBias(ps ...*Param) *Param {
	n, names := 0, make([]string, len(ps))
	for i, p := range ps {
		n += p.Len()
		names[i] = p.Name
	}
	buf := m.be.Alloc(kernels.F32, n)
	off := 0
	for _, p := range ps {
		v := m.be.View(buf, off, p.Len())
		m.be.Copy(v, p.W)
		m.be.Free(p.W)
		p.W = v
		off += p.Len()
	}
	m.fusedW = append(m.fusedW, buf)
	return &Param{Name: strings.Join(names, "+"), Shape: []int{n}, W: buf}
}

// offsets is the part offsets of f's output rows.
func (f *fusedLinear) offsets() []int {
	out := make([]int, len(f.widths))
	off := 0
	for i, w := range f.widths {
		out[i] = off
		off += w
	}
	return out
}
