package kerneltest

import (
	"fmt"
	"math"

	"github.com/argrl/argrl/kernels"
)

// attnCases cover training (padding via KLen, GQA ratios 1, 2 and 4, more
// query rows than one CPU tile), decoding from a cache (Slot, QPos, KLen,
// Tq = 1), chunked prefill into a cache, rows that see no key, an explicit
// Scale, two batch rows sharing one slot, and packed rows (KStart).
func attnCases() []kernels.AttnParams {
	return []kernels.AttnParams{
		{B: 2, Tq: 5, Hq: 4, Hkv: 2, D: 6, S: 2, Tmax: 5, KLen: []int32{5, 3}},
		{B: 1, Tq: 7, Hq: 3, Hkv: 3, D: 5, S: 1, Tmax: 7},
		{B: 1, Tq: 70, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 70, KLen: []int32{67}},
		{B: 3, Tq: 1, Hq: 8, Hkv: 2, D: 8, S: 4, Tmax: 9, Slot: []int32{2, 0, 3}, QPos: []int32{3, 8, 0}, KLen: []int32{4, 9, 1}},
		{B: 2, Tq: 3, Hq: 4, Hkv: 1, D: 4, S: 2, Tmax: 10, Slot: []int32{1, 0}, QPos: []int32{2, 5}, KLen: []int32{5, 8}},
		{B: 2, Tq: 2, Hq: 2, Hkv: 2, D: 3, S: 2, Tmax: 2, KLen: []int32{0, 2}},
		{B: 2, Tq: 4, Hq: 2, Hkv: 1, D: 7, S: 2, Tmax: 4, Scale: 0.3},
		{B: 2, Tq: 2, Hq: 2, Hkv: 1, D: 4, S: 2, Tmax: 6, Slot: []int32{1, 1}, QPos: []int32{0, 2}, KLen: []int32{2, 4}},
		// Packed rows (KStart): row 0 holds sequences of 3, 1 and 2 tokens
		// and a padded tail past KLen; row 1 one sequence of 6.
		{B: 2, Tq: 7, Hq: 4, Hkv: 2, D: 5, S: 2, Tmax: 7, KLen: []int32{6, 6},
			KStart: []int32{0, 0, 0, 3, 4, 4, 6, 0, 0, 0, 0, 0, 0, 0}},
		// More rows than one CPU tile, a sequence boundary inside a tile.
		{B: 1, Tq: 90, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 90, KStart: packedStarts(50, 40)},
		// Decoding with KStart (Tq = 1).
		{B: 2, Tq: 1, Hq: 2, Hkv: 1, D: 4, S: 2, Tmax: 6, QPos: []int32{4, 2}, KLen: []int32{5, 3}, KStart: []int32{2, 0}},
	}
}

// packedStarts is the KStart of one row packing sequences of the given
// lengths end to end.
func packedStarts(lens ...int) []int32 {
	var out []int32
	start := 0
	for _, n := range lens {
		for range n {
			out = append(out, int32(start))
		}
		start += n
	}
	return out
}

// testAttention: forward (out, lse) and backward (dq, dk, dv) against the
// references on every case; the reference backward against finite
// differences on small cases.
func testAttention(h *harness) {
	t := h.t
	for ci, p := range attnCases() {
		nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
		q, k, v := h.vec(nq, 1.5), h.vec(nkv, 1.5), h.vec(nkv, 1)
		dout := h.vec(nq, 1)
		what := fmt.Sprintf("Attention case %d %+v", ci, p)
		qb, kb, vb := h.f32(q), h.f32(k), h.f32(v)
		out, lse := h.f32(h.vec(nq, 9)), h.f32(h.vec(p.B*p.Tq*p.Hq, 9))
		h.b.Attention(out, lse, qb, kb, vb, p)
		wo, wl := make([]float64, nq), make([]float64, p.B*p.Tq*p.Hq)
		kernels.RefAttention(wo, wl, q, k, v, p)
		approx(t, what+" out", h.down(out), wo, rtolAttn, atolAttn)
		approx(t, what+" lse", h.down(lse), wl, rtolAttn, atolAttn)

		dq, dk, dv := h.f32(h.vec(nq, 9)), h.f32(h.vec(nkv, 9)), h.f32(h.vec(nkv, 9))
		h.b.AttentionBackward(dq, dk, dv, h.f32(dout), qb, kb, vb, out, lse, p)
		wdq, wdk, wdv := make([]float64, nq), make([]float64, nkv), make([]float64, nkv)
		kernels.RefAttentionBackward(wdq, wdk, wdv, dout, q, k, v, wo, wl, p)
		approx(t, what+" dq", h.down(dq), wdq, rtolAttn, atolAttn)
		approx(t, what+" dk", h.down(dk), wdk, rtolAttn, atolAttn)
		approx(t, what+" dv", h.down(dv), wdv, rtolAttn, atolAttn)

		if nq*nkv > 20000 {
			continue // finite differences on the small cases only
		}
		o, l := make([]float64, nq), make([]float64, p.B*p.Tq*p.Hq)
		fdCheck(t, what+" reference backward", func() []float64 {
			kernels.RefAttention(o, l, q, k, v, p)
			return o
		}, dout, [][]float64{q, k, v}, [][]float64{wdq, wdk, wdv})
	}
	// A row that sees no key has out = 0 and lse = −Inf (case 5, b = 0).
	p := attnCases()[5]
	nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
	out, lse := h.zeros(nq), h.zeros(p.B*p.Tq*p.Hq)
	h.b.Attention(out, lse, h.f32(h.vec(nq, 1)), h.f32(h.vec(nkv, 1)), h.f32(h.vec(nkv, 1)), p)
	o, l := h.down(out), h.down(lse)
	for i := 0; i < p.Tq*p.Hq; i++ {
		if !math.IsInf(l[i], -1) {
			t.Errorf("empty row %d: lse = %v, want -Inf", i, l[i])
		}
		for d := 0; d < p.D; d++ {
			if o[i*p.D+d] != 0 {
				t.Errorf("empty row %d: out[%d] = %v, want 0", i, d, o[i*p.D+d])
			}
		}
	}
}

// pagedCases are decode and chunked-prefill shapes over a paged cache:
// pages of Tmax = 3 tokens in a shuffled order, rows sharing a page (the
// G samples of a prompt), keys ending mid-page, unused page entries -1,
// and more keys than one CPU P·V block (attnKeyBlock, 256).
func pagedCases() []kernels.AttnParams {
	return []kernels.AttnParams{
		{B: 3, Tq: 1, Hq: 8, Hkv: 2, D: 8, S: 7, Tmax: 3, QPos: []int32{3, 7, 0}, KLen: []int32{4, 8, 1},
			Pages: []int32{5, 2, -1, 6, 0, 4, 1, -1, -1}, MaxPages: 3},
		{B: 2, Tq: 4, Hq: 4, Hkv: 1, D: 4, S: 6, Tmax: 3, QPos: []int32{2, 5}, KLen: []int32{6, 9},
			Pages: []int32{3, 1, -1, 3, 4, 0}, MaxPages: 3},
		{B: 2, Tq: 1, Hq: 2, Hkv: 2, D: 3, S: 5, Tmax: 3, QPos: []int32{5, 2}, KLen: []int32{6, 3},
			Pages: []int32{4, 4, 1, -1}, MaxPages: 2}, // row 0 reads one page twice
		{B: 1, Tq: 1, Hq: 2, Hkv: 1, D: 4, S: 20, Tmax: 16, QPos: []int32{299}, KLen: []int32{300},
			Pages: []int32{19, 3, 7, 0, 11, 2, 14, 5, 9, 1, 18, 6, 12, 4, 16, 8, 10, 13, 15}, MaxPages: 19},
	}
}

// testAttentionPaged: paged forward against the reference, and equal to
// the same attention over the pages laid out contiguously in each row's
// slot (the reference's two layouts agree; the backend's, to tolerance).
func testAttentionPaged(h *harness) {
	t := h.t
	for ci, p := range pagedCases() {
		nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
		q, k, v := h.vec(nq, 1.5), h.vec(nkv, 1.5), h.vec(nkv, 1)
		what := fmt.Sprintf("paged Attention case %d", ci)
		out, lse := h.f32(h.vec(nq, 9)), h.f32(h.vec(p.B*p.Tq*p.Hq, 9))
		h.b.Attention(out, lse, h.f32(q), h.f32(k), h.f32(v), p)
		wo, wl := make([]float64, nq), make([]float64, p.B*p.Tq*p.Hq)
		kernels.RefAttention(wo, wl, q, k, v, p)
		approx(t, what+" out", h.down(out), wo, rtolAttn, atolAttn)
		approx(t, what+" lse", h.down(lse), wl, rtolAttn, atolAttn)

		// The same keys gathered into one slot per row.
		c := p
		c.Pages, c.MaxPages, c.S, c.Tmax = nil, 0, p.B, p.MaxPages*p.Tmax
		row := c.Tmax * p.Hkv * p.D
		ck, cv := make([]float64, p.B*row), make([]float64, p.B*row)
		for b := 0; b < p.B; b++ {
			for j := 0; j < int(p.KLen[b]); j++ {
				pg := int(p.Pages[b*p.MaxPages+j/p.Tmax])
				src := (pg*p.Tmax + j%p.Tmax) * p.Hkv * p.D
				copy(ck[b*row+j*p.Hkv*p.D:][:p.Hkv*p.D], k[src:])
				copy(cv[b*row+j*p.Hkv*p.D:][:p.Hkv*p.D], v[src:])
			}
		}
		co, cl := make([]float64, nq), make([]float64, p.B*p.Tq*p.Hq)
		kernels.RefAttention(co, cl, q, ck, cv, c)
		approx(t, what+" reference, paged vs contiguous out", wo, co, 0, 0)
		approx(t, what+" reference, paged vs contiguous lse", wl, cl, 0, 0)
	}
}

// testKVScatter: rows land at (page, off) and nothing else changes.
func testKVScatter(h *harness) {
	N, Hkv, D, S, Tmax := 4, 2, 3, 3, 4
	page, off := []int32{2, 0, 2, 1}, []int32{3, 0, 0, 2}
	cache := h.vec(S*Tmax*Hkv*D, 1)
	x := h.vec(N*Hkv*D, 1)
	cb := h.f32(cache)
	h.b.KVScatter(cb, h.f32(x), page, off, N, Hkv, D, Tmax)
	kernels.RefKVScatter(cache, x, page, off, N, Hkv, D, Tmax)
	approx(h.t, "KVScatter", h.down(cb), cache, 0, 0)
}

// testKVWrite: rows land at (slot, pos) and nothing else changes.
func testKVWrite(h *harness) {
	B, T, Hkv, D, S, Tmax := 3, 2, 2, 3, 4, 5
	slot, pos := []int32{3, 0, 1}, []int32{0, 3, 2}
	cache := h.vec(S*Tmax*Hkv*D, 1)
	x := h.vec(B*T*Hkv*D, 1)
	cb := h.f32(cache)
	h.b.KVWrite(cb, h.f32(x), slot, pos, B, T, Hkv, D, Tmax)
	kernels.RefKVWrite(cache, x, slot, pos, B, T, Hkv, D, Tmax)
	approx(h.t, "KVWrite", h.down(cb), cache, 0, 0)
}
