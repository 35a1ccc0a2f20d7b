package model

// The fused attention prologue of a decode pass. Qwen2 adds q/k/v biases,
// every architecture rotates q and k, and the decoder writes k and v into
// the layer's pages: seven launches one by one (3 AddBias, 2 RoPE, 2
// KVScatter). On a backend that fuses them (kernels.RoPEKVWriter: the
// CUDA backend's rope_kv) eagerOps defers addBias and rope, and attention
// runs the deferred work and the cache write as one BiasRoPEKV call. It is
// the same arithmetic, so decoding gives the same bits either way.
//
// A deferred value's arena view is reserved when its op is called; any
// other op that reads it (val) first computes it op by op, so an
// architecture that reads a biased or rotated value elsewhere still gets
// it. Only attention's own k and v are never written to their views (they
// go straight to the cache): attention is their last reader.

import "github.com/argrl/argrl/kernels"

// fusePrologue turns the fused prologue on where the backend has it
// (tests turn it off to compare with the op-by-op sequence).
var fusePrologue = true

// pending is a value not computed yet: src (computed) + bias, then RoPE if
// rope. absorbed marks a biased value a pending rope took over: it is
// computed only if something else reads it.
type pending struct {
	src      kernels.Buffer
	w        int
	bias     *Param
	rope     bool
	absorbed bool
}

// fuser returns the backend's fused prologue, or nil.
func (e *eagerOps) fuser() kernels.RoPEKVWriter {
	if !fusePrologue {
		return nil
	}
	f, _ := e.d.m.be.(kernels.RoPEKVWriter)
	return f
}

// deferOp records o as pending.
func (e *eagerOps) deferOp(o act, p pending) {
	if e.pend == nil {
		e.pend = map[kernels.Buffer]pending{}
	}
	e.pend[o.buf] = p
}

// val computes x if it is pending (AddBias, then RoPE in place: the ops the
// unfused path runs, so the same bits) and returns it.
func (e *eagerOps) val(x act) act {
	p, ok := e.pend[x.buf]
	if !ok {
		return x
	}
	delete(e.pend, x.buf)
	m := e.d.m
	src := p.src
	if p.bias != nil {
		m.be.AddBias(x.buf, src, p.bias.W, e.n, p.w)
		src = x.buf
	}
	if p.rope {
		D := m.Config.HeadDim
		m.be.RoPE(x.buf, src, m.cos, m.sin, e.d.pos[:e.n], e.n, p.w/D, D, false)
	}
	return x
}

// flushPending computes what is still pending and was not taken over by a
// later op (nothing, for the supported architectures), so no value
// outlives its layer uncomputed.
func (e *eagerOps) flushPending() {
	for b, p := range e.pend {
		if p.absorbed {
			delete(e.pend, b)
			continue
		}
		e.val(act{buf: b, w: p.w})
	}
}

// fusedAttention runs the deferred bias and RoPE of q and k, v's bias and
// the write of k and v into layer's pages as one BiasRoPEKV call, when q
// and k are pending rotations; it reports whether it did.
func (e *eagerOps) fusedAttention(q, k, v act, layer int) bool {
	f := e.fuser()
	if f == nil {
		return false
	}
	pq, okq := e.pend[q.buf]
	pk, okk := e.pend[k.buf]
	pv, okv := e.pend[v.buf]
	if !okq || !okk || !pq.rope || !pk.rope || (okv && pv.rope) {
		return false
	}
	vsrc, vbias := v.buf, (*Param)(nil)
	if okv {
		vsrc, vbias = pv.src, pv.bias
	}
	delete(e.pend, q.buf)
	delete(e.pend, k.buf)
	delete(e.pend, v.buf)
	d, ap := e.d, e.ap
	f.BiasRoPEKV(q.buf, d.k[layer], d.v[layer], pq.src, pk.src, vsrc, pq.bias.buf(), pk.bias.buf(), vbias.buf(),
		d.m.cos, d.m.sin, kernels.RoPEKVParams{N: e.n, Hq: ap.Hq, Hkv: ap.Hkv, D: ap.D, Tmax: PageSize,
			Pos: d.pos[:e.n], Page: d.page[:e.n], Off: d.off[:e.n]})
	d.fusedPrologues++
	return true
}

// buf is p's device tensor, nil for no parameter.
func (p *Param) buf() kernels.Buffer {
	if p == nil {
		return nil
	}
	return p.W
}
