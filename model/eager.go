package model

// eagerOps: the ops of ops.go run at once as Backend calls on the KV-cache
// decode buffers (decode.go). Every op writes a fresh row view from the
// current layer's arena; layer l uses arena l mod 2, so its input (layer
// l−1's output) stays intact while it runs.
//
//	x      [n, w]    n new tokens (of one or several sequences)
//	cache  [Pages, PageSize, Hkv, D] per layer

import (
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

func (e *eagerOps) rmsNorm(x act, w *Param) act {
	x = e.val(x)
	W := w.Len()
	rows := e.n * x.w / W
	o := e.out(x.w)
	e.d.m.be.RMSNorm(o.buf, e.d.scratchRstd(rows), x.buf, w.W, rows, W, e.d.m.eps)
	return o
}

// linear is x·Wᵀ (+ (α/r)·(x·Aᵀ)·Bᵀ while adapters are on and unmerged).
func (e *eagerOps) linear(x act, l *Linear) act {
	m := e.d.m
	x = e.val(x)
	out, in := l.W.Shape[0], l.W.Shape[1]
	o := e.out(out)
	m.be.MatMul(o.buf, x.buf, l.W.W, kernels.MatMulParams{Batch: 1, M: e.n, N: out, K: in, TransB: true, Alpha: 1, BF16: m.bf16})
	if l.lora == nil || m.scale == 0 {
		return o
	}
	r := m.lora.r
	t := e.a.get(e.n * r)
	m.be.MatMul(t, x.buf, l.lora.A.W, kernels.MatMulParams{Batch: 1, M: e.n, N: r, K: in, TransB: true, Alpha: 1, BF16: m.bf16})
	m.be.MatMul(o.buf, t, l.lora.B.W, kernels.MatMulParams{Batch: 1, M: e.n, N: out, K: r, TransB: true, Alpha: m.scale, Beta: 1, BF16: m.bf16})
	return o
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

func (e *eagerOps) swiGLU(gate, up act) act {
	gate, up = e.val(gate), e.val(up)
	o := e.out(gate.w)
	e.d.m.be.SwiGLU(o.buf, gate.buf, up.buf, e.n, gate.w, gate.w)
	return o
}
