package model

// eagerOps: the ops of ops.go run at once as Backend calls on the KV-cache
// decode buffers (decode.go). Every op writes a fresh row view from the
// current layer's arena; layer l uses arena l mod 2, so its input (layer
// l−1's output) stays intact while it runs.
//
//	x      [n, w]    n new tokens (of one or several sequences)
//	cache  [Pages, PageSize, Hkv, D] per layer

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// arena hands out views of a few large scratch buffers for one layer's
// activations; reset makes them all free again. Chunks are allocated on
// first use and kept, so a steady decode loop allocates nothing.
type arena struct {
	be       kernels.Backend
	size     int // elements per chunk
	chunks   []kernels.Buffer
	cur, off int
	views    map[[3]int]kernels.Buffer // (chunk, offset, n) → view
}

func (a *arena) reset() { a.cur, a.off = 0, 0 }

// get returns n free elements.
func (a *arena) get(n int) kernels.Buffer {
	for {
		if a.cur == len(a.chunks) {
			a.chunks = append(a.chunks, a.be.Alloc(kernels.F32, max(a.size, n)))
		}
		if a.off+n <= a.chunks[a.cur].Len() {
			key := [3]int{a.cur, a.off, n}
			v := a.views[key]
			if v == nil {
				v = a.be.View(a.chunks[a.cur], a.off, n)
				a.views[key] = v
			}
			a.off += n
			return v
		}
		a.cur, a.off = a.cur+1, 0
	}
}

func (a *arena) free() {
	for _, b := range a.chunks {
		a.be.Free(b)
	}
	a.chunks, a.views = nil, map[[3]int]kernels.Buffer{}
	a.reset()
}

// eagerOps runs one KVCache.Step pass.
type eagerOps struct {
	d   *KVCache
	ids []int32
	n   int // new tokens
	a   *arena
	ap  kernels.AttnParams // one row per token, over the tokens' pages
	err error              // the first error an op returned (backend errors go to Sync)
	// adapt is each token's KVRow.Adapter; nil when every row is OwnAdapter
	adapt []int32
	// pend holds the deferred addBias and rope results (prologue.go)
	pend map[kernels.Buffer]pending
}

var _ ops = (*eagerOps)(nil)

func (e *eagerOps) out(w int) act { return act{buf: e.a.get(e.n * w), w: w} }

func (e *eagerOps) setLayer(l int) {
	e.flushPending()
	e.a = &e.d.arenas[l%2]
	e.a.reset()
}

func (e *eagerOps) embed(table *Param) act {
	C := e.d.m.Config.HiddenSize
	o := e.out(C)
	e.d.m.be.Embedding(o.buf, table.W, e.ids, C)
	return o
}

// preNorm is rmsNorm, written in bf16 (KVCache.normBF16, allocated when
// the model computes in bf16 on a backend with bf16 products) when x is
// one hidden vector per token. Its readers (the q/k/v and gate/up GEMMs,
// fused or not, and their LoRA A products) all ask for bf16 products and
// so round their A to bf16: reading the bf16 norm gives them the same
// bits (RMSNorm rounds its f32 result to nearest even, as the GEMM's
// rounding does) from half the bytes, without the f32 write.
func (e *eagerOps) preNorm(x act, w *Param) act {
	d := e.d
	if d.normBF16 == nil || x.w != w.Len() {
		return e.rmsNorm(x, w)
	}
	x = e.val(x)
	o := act{buf: d.cut(d.normViews, d.normBF16, e.n*x.w), w: x.w}
	d.m.be.RMSNorm(o.buf, d.scratchRstd(e.n), x.buf, w.W, e.n, x.w, d.m.eps)
	return o
}

func (e *eagerOps) rmsNorm(x act, w *Param) act {
	x = e.val(x)
	W := w.Len()
	rows := e.n * x.w / W
	o := e.out(x.w)
	e.d.m.be.RMSNorm(o.buf, e.d.scratchRstd(rows), x.buf, w.W, rows, W, e.d.m.eps)
	return o
}

// linear is x·Wᵀ plus, on each run of consecutive tokens of one adapter
// (e.adapt; nil: every token follows the model's own slots), that
// adapter's (α/r)·(x·Aᵀ)·Bᵀ (adapters.go).
func (e *eagerOps) linear(x act, l *Linear) act {
	m := e.d.m
	x = e.val(x)
	out, in := l.W.Shape[0], l.W.Shape[1]
	o := e.out(out)
	m.be.MatMul(o.buf, x.buf, l.W.W, kernels.MatMulParams{Batch: 1, M: e.n, N: out, K: in, TransB: true, Alpha: 1, BF16: m.bf16})
	e.withLoRA(x, o, l)
	return o
}

// fused is one MatMul over f's concatenated weights into scratch, its
// parts copied out (kernels.ColumnBlock), each with its LoRA branch; or,
// with f.inPlace, left in place as column blocks of it (act.ld).
func (e *eagerOps) fused(x act, f *fusedLinear) []act {
	m := e.d.m
	if f == nil || m.merged != nil {
		return nil
	}
	x = e.val(x)
	W, in := f.W.Shape[0], f.W.Shape[1]
	y := e.a.get(e.n * W)
	p := kernels.MatMulParams{Batch: 1, M: e.n, N: W, K: in, TransB: true, Alpha: 1, BF16: m.bf16}
	if f.bias != nil {
		p.Bias = f.bias.W
	}
	m.be.MatMul(y, x.buf, f.W.W, p)
	out := make([]act, len(f.parts))
	if f.inPlace { // column blocks of y, each LoRA branch into its own columns
		for i, off := range f.offsets() {
			out[i] = act{buf: m.be.View(y, off, e.n*W-off), w: f.widths[i], ld: W}
			e.withLoRA(x, out[i], f.parts[i])
		}
		return out
	}
	for i, off := range f.offsets() {
		out[i] = e.out(f.widths[i])
		if err := kernels.ColumnBlock(m.be, out[i].buf, y, e.n, W, off, f.widths[i]); err != nil && e.err == nil {
			e.err = err
		}
		e.withLoRA(x, out[i], f.parts[i])
	}
	return out
}

// withLoRA adds l's LoRA branch of x to o, o += (α/r)·(x·Aᵀ)·Bᵀ: the
// model's own adapters while on and unmerged, or per run of tokens the
// adapter its KVRow names (KVRow.Adapter: own, none, or a loaded one).
func (e *eagerOps) withLoRA(x, o act, l *Linear) {
	m := e.d.m
	in, out := l.W.Shape[1], l.W.Shape[0]
	ld := out // o's row stride
	if o.ld != 0 {
		ld = o.ld
	}
	if e.adapt == nil {
		if p, r, sc := m.loraOf(l, OwnAdapter); p != nil {
			e.lora(o.buf, x.buf, p, r, sc, e.n, o.ld)
		}
		return
	}
	for lo := 0; lo < e.n; {
		hi := lo + 1
		for hi < e.n && e.adapt[hi] == e.adapt[lo] {
			hi++
		}
		if p, r, sc := m.loraOf(l, int(e.adapt[lo])); p != nil {
			if lo == 0 && hi == e.n {
				e.lora(o.buf, x.buf, p, r, sc, e.n, o.ld)
			} else {
				e.lora(m.be.View(o.buf, lo*ld, (hi-lo-1)*ld+out), m.be.View(x.buf, lo*in, (hi-lo)*in), p, r, sc, hi-lo, o.ld)
			}
		}
		lo = hi
	}
}

// lora adds scale·(x·Aᵀ)·Bᵀ to o for n token rows; ld is o's row stride
// (0: dense; a column block of the fused gate/up output otherwise).
func (e *eagerOps) lora(o, x kernels.Buffer, p *loraPair, r int, scale float32, n, ld int) {
	m := e.d.m
	t := e.a.get(n * r)
	m.be.MatMul(t, x, p.A.W, kernels.MatMulParams{Batch: 1, M: n, N: r, K: p.in, TransB: true, Alpha: 1, BF16: m.bf16})
	m.be.MatMul(o, t, p.B.W, kernels.MatMulParams{Batch: 1, M: n, N: p.out, K: r, TransB: true, Alpha: scale, Beta: 1, BF16: m.bf16, LdC: ld})
}

func (e *eagerOps) addBias(x act, b *Param) act {
	o := e.out(x.w)
	if _, busy := e.pend[x.buf]; !busy && e.fuser() != nil {
		e.deferOp(o, pending{src: x.buf, w: x.w, bias: b})
		return o
	}
	x = e.val(x)
	e.d.m.be.AddBias(o.buf, x.buf, b.W, e.n, x.w)
	return o
}

func (e *eagerOps) rope(x act) act {
	m := e.d.m
	D := m.Config.HeadDim
	o := e.out(x.w)
	if e.fuser() != nil {
		p, ok := e.pend[x.buf]
		switch {
		case !ok:
			e.deferOp(o, pending{src: x.buf, w: x.w, rope: true})
			return o
		case !p.rope && !p.absorbed: // a pending bias: rotate it in the same pass
			p.absorbed = true
			e.pend[x.buf] = p
			e.deferOp(o, pending{src: p.src, w: x.w, bias: p.bias, rope: true})
			return o
		}
	}
	x = e.val(x)
	m.be.RoPE(o.buf, x.buf, m.cos, m.sin, e.d.pos[:e.n], e.n, x.w/D, D, false)
	return o
}

// attention writes each token's k and v into its page of layer's cache,
// then attends over the pages.
func (e *eagerOps) attention(q, k, v act, layer int) act {
	d, be, ap := e.d, e.d.m.be, e.ap
	if e.fusedAttention(q, k, v, layer) {
		o := e.out(q.w)
		be.Attention(o.buf, d.scratchLse(e.n*ap.Hq), q.buf, d.k[layer], d.v[layer], ap)
		return o
	}
	q, k, v = e.val(q), e.val(k), e.val(v)
	be.KVScatter(d.k[layer], k.buf, d.page[:e.n], d.off[:e.n], e.n, ap.Hkv, ap.D, PageSize)
	be.KVScatter(d.v[layer], v.buf, d.page[:e.n], d.off[:e.n], e.n, ap.Hkv, ap.D, PageSize)
	o := e.out(q.w)
	be.Attention(o.buf, d.scratchLse(e.n*ap.Hq), q.buf, d.k[layer], d.v[layer], ap)
	return o
}

func (e *eagerOps) add(a, b act) act {
	a, b = e.val(a), e.val(b)
	o := e.out(a.w)
	e.d.m.be.AXPBY(o.buf, a.buf, b.buf, 1, 1, e.n*a.w)
	return o
}

// swiGLU reads gate and up dense, or in place as the column blocks of the
// fused gate/up output (act.ld: both at its row stride).
func (e *eagerOps) swiGLU(gate, up act) act {
	gate, up = e.val(gate), e.val(up)
	o := e.out(gate.w)
	ld := gate.w
	if gate.ld != 0 || up.ld != 0 {
		if gate.ld != up.ld && e.err == nil {
			e.err = fmt.Errorf("model: swiGLU: gate and up row strides %d and %d differ", gate.ld, up.ld)
			return o
		}
		ld = gate.ld
	}
	e.d.m.be.SwiGLU(o.buf, gate.buf, up.buf, e.n, gate.w, ld)
	return o
}
