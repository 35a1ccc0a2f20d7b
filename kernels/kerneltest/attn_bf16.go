package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
)

// Tolerances of AttentionBF16: the forward reads q, k, v rounded to bf16
// (the reference gets the same rounded values) and rounds the
// probabilities to bf16 (2⁻⁹ relative) before P·V, so out is within about
// 2⁻⁸ of max|v|; lse sums float32 probabilities. The backward recomputes
// P in float32 and reads the forward's out (dsum = Σ dout·out).
const (
	rtolAttnBF16, atolAttnBF16         = 1e-2, 1e-2
	rtolAttnBF16LSE, atolAttnBF16LSE   = 1e-4, 1e-4
	rtolAttnBF16Grad, atolAttnBF16Grad = 3e-2, 3e-2
)

// AttnBF16Cases are the shapes AttentionBF16 runs: the Qwen2.5-7B shape
// of one KV group (T = 1,536, D = 128, 7 query heads per KV head), and odd
// ones: T not a multiple of a 32-key tile or a 256-key chunk, one head,
// GQA ratios 1, 2 and 7, D = 16, 32, 64, right padding, decoding from a
// cache (Slot, QPos, KLen, Tq = 1, batch rows at different lengths), a
// chunked prefill into a cache, packed rows (KStart: sequence boundaries
// inside a block of rows, several sequences in one block, a sequence
// longer than a chunk starting mid-tile, one head, the 7B shape packed
// with two sequences) and paged caches (16-token pages in shuffled order:
// decoding, one head, a prefill chunk, and the 7B decode shape: 64 rows
// at a 1,536-token context sharing the pages of one prompt).
func AttnBF16Cases() []kernels.AttnParams {
	return []kernels.AttnParams{
		{B: 1, Tq: 1536, Hq: 7, Hkv: 1, D: 128, S: 1, Tmax: 1536},
		{B: 1, Tq: 37, Hq: 1, Hkv: 1, D: 64, S: 1, Tmax: 37},
		{B: 2, Tq: 300, Hq: 4, Hkv: 2, D: 64, S: 2, Tmax: 300, KLen: []int32{300, 259}},
		{B: 1, Tq: 77, Hq: 14, Hkv: 2, D: 128, S: 1, Tmax: 77},
		{B: 2, Tq: 19, Hq: 4, Hkv: 2, D: 16, S: 2, Tmax: 19, KLen: []int32{19, 5}},
		{B: 1, Tq: 45, Hq: 3, Hkv: 3, D: 32, S: 1, Tmax: 45, Scale: 0.2},
		{B: 3, Tq: 1, Hq: 14, Hkv: 2, D: 128, S: 4, Tmax: 600, Slot: []int32{2, 0, 3}, QPos: []int32{530, 7, 0}, KLen: []int32{531, 8, 1}},
		{B: 2, Tq: 9, Hq: 2, Hkv: 1, D: 64, S: 2, Tmax: 400, Slot: []int32{1, 0}, QPos: []int32{250, 3}, KLen: []int32{259, 12}},
		{B: 2, Tq: 340, Hq: 2, Hkv: 1, D: 64, S: 2, Tmax: 340,
			KStart: append(packedStarts(45, 290, 5), packedStarts(1, 2, 3, 4, 330)...)},
		{B: 1, Tq: 100, Hq: 7, Hkv: 1, D: 128, S: 1, Tmax: 100, KStart: packedStarts(33, 1, 66)},
		{B: 1, Tq: 77, Hq: 1, Hkv: 1, D: 64, S: 1, Tmax: 77, KStart: packedStarts(30, 47)},
		{B: 1, Tq: 1536, Hq: 7, Hkv: 1, D: 128, S: 1, Tmax: 1536, KStart: packedStarts(700, 836)},
		{B: 3, Tq: 1, Hq: 14, Hkv: 2, D: 128, S: 45, Tmax: 16, QPos: []int32{530, 7, 0}, KLen: []int32{531, 8, 1},
			Pages: shuffledPages(3, 34, 45, 1), MaxPages: 34},
		{B: 2, Tq: 9, Hq: 3, Hkv: 3, D: 32, S: 30, Tmax: 16, QPos: []int32{250, 3}, KLen: []int32{259, 12},
			Pages: shuffledPages(2, 17, 30, 2), MaxPages: 17},
		{B: 2, Tq: 1, Hq: 1, Hkv: 1, D: 64, S: 12, Tmax: 16, QPos: []int32{40, 130}, KLen: []int32{41, 131},
			Pages: shuffledPages(2, 9, 12, 4), MaxPages: 9},
		{B: 64, Tq: 1, Hq: 7, Hkv: 1, D: 128, S: 100, Tmax: 16, QPos: decodeRange(64, 1535), KLen: decodeRange(64, 1536),
			Pages: sharedPages(64, 96, 100), MaxPages: 96},
	}
}

// shuffledPages is a page table of B rows of maxPages pages each, drawn
// without repetition within a row from S pages in a seeded shuffled order.
func shuffledPages(B, maxPages, S int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]int32, 0, B*maxPages)
	for range B {
		perm := r.Perm(S)
		for _, p := range perm[:maxPages] {
			out = append(out, int32(p))
		}
	}
	return out
}

// sharedPages: B rows reading the same maxPages pages of S (a prompt's G
// samples), in one shuffled order, each row's last page its own.
func sharedPages(B, maxPages, S int) []int32 {
	common := shuffledPages(1, maxPages, S, 3)
	out := make([]int32, 0, B*maxPages)
	for b := range B {
		out = append(out, common[:maxPages-1]...)
		out = append(out, int32((b*7)%S))
	}
	return out
}

// decodeRange is B decode positions or lengths ending at last, one apart
// downwards (rows at different lengths in one batch).
func decodeRange(B int, last int32) []int32 {
	out := make([]int32, B)
	for b := range out {
		out[b] = last - int32(b)
	}
	return out
}

// AttentionBF16 is the conformance test of a backend whose Attention runs
// on bf16 tensor cores (the CUDA bf16 backends): on every AttnBF16Cases
// shape, out and lse against kernels.RefAttention of the bf16-rounded
// inputs, and the backward against kernels.RefAttentionBackward. Each
// variant (set up by its function, e.g. one pass per block or keys split
// across blocks) must give the same bits (the 7B shape runs in the first
// variant by name only). Then the property ρ ≡ 1 needs
// (docs/design.md): a causal training call over T tokens and decoding one
// token at a time from a bf16 cache holding the same keys — alone, in a
// batch with other rows, and as a chunked prefill, from a slot or from
// shuffled pages — and the same sequence packed in a row with others
// (KStart) produce bit-identical rows.
func AttentionBF16(t *testing.T, b kernels.Backend, variants map[string]func()) {
	h := &harness{t: t, b: b, r: rand.New(rand.NewPCG(32, 7))}
	round := func(x []float64) []float64 {
		r := make([]float64, len(x))
		for i, v := range x {
			r[i] = float64(kernels.Float32FromBF16(kernels.BF16FromFloat32(float32(v))))
		}
		return r
	}
	names := make([]string, 0, len(variants))
	for name := range variants {
		names = append(names, name)
	}
	sort.Strings(names)
	for ci, p := range AttnBF16Cases() {
		t0 := time.Now()
		nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
		q, k, v, dout := h.vec(nq, 1.5), h.vec(nkv, 1.5), h.vec(nkv, 1), h.vec(nq, 1)
		qr, kr, vr := round(q), round(k), round(v)
		what := fmt.Sprintf("AttentionBF16 case %d {B:%d Tq:%d Hq:%d Hkv:%d D:%d Tmax:%d}", ci, p.B, p.Tq, p.Hq, p.Hkv, p.D, p.Tmax)
		qb, kb, vb := h.f32(q), h.f32(k), h.f32(v)
		wo, wl := make([]float64, nq), make([]float64, nr)
		kernels.RefAttention(wo, wl, qr, kr, vr, p)
		var first []float64
		var firstName string
		for vi, name := range names {
			if vi > 0 && attnHeavy(p) {
				break // the 7B shape in the first variant only (minutes on an emulator)
			}
			variants[name]()
			out, lse := h.zeros(nq), h.zeros(nr)
			b.Attention(out, lse, qb, kb, vb, p)
			o, l := h.down(out), h.down(lse)
			approx(t, what+" "+name+" out", o, wo, rtolAttnBF16, atolAttnBF16)
			approx(t, what+" "+name+" lse", l, wl, rtolAttnBF16LSE, atolAttnBF16LSE)
			got := append(o, l...)
			if first == nil {
				first, firstName = got, name
			} else if i := firstDiff(got, first); i >= 0 {
				t.Errorf("%s: variants %s and %s differ at element %d: %v vs %v", what, name, firstName, i, got[i], first[i])
			}
		}
		t.Logf("%s forward: %.1f s", what, time.Since(t0).Seconds())
		if attnHeavy(p) || p.Pages != nil {
			continue // the backward at the 7B shape takes minutes on an emulator; a paged cache has none
		}
		out, lse := h.zeros(nq), h.zeros(nr)
		b.Attention(out, lse, qb, kb, vb, p)
		dq, dk, dv := h.zeros(nq), h.zeros(nkv), h.zeros(nkv)
		b.AttentionBackward(dq, dk, dv, h.f32(dout), qb, kb, vb, out, lse, p)
		wdq, wdk, wdv := make([]float64, nq), make([]float64, nkv), make([]float64, nkv)
		kernels.RefAttentionBackward(wdq, wdk, wdv, dout, qr, kr, vr, wo, wl, p)
		approx(t, what+" dq", h.down(dq), wdq, rtolAttnBF16Grad, atolAttnBF16Grad)
		approx(t, what+" dk", h.down(dk), wdk, rtolAttnBF16Grad, atolAttnBF16Grad)
		approx(t, what+" dv", h.down(dv), wdv, rtolAttnBF16Grad, atolAttnBF16Grad)
		t.Logf("%s forward and backward: %.1f s", what, time.Since(t0).Seconds())
	}
	for _, name := range names {
		t0 := time.Now()
		variants[name]()
		attnDecodeMatchesTraining(h, name)
		attnPackedPagedMatchTraining(h, name)
		t.Logf("decoding against training (%s): %.1f s", name, time.Since(t0).Seconds())
	}
}

// attnHeavy: the 7B training shape (a minute per call on an emulator).
func attnHeavy(p kernels.AttnParams) bool { return p.Tq*p.Tmax > 200000 }

// firstDiff is the first index where a and b differ as float32 bits, or -1.
func firstDiff(a, b []float64) int {
	for i := range a {
		if math.Float32bits(float32(a[i])) != math.Float32bits(float32(b[i])) {
			return i
		}
	}
	return -1
}

// attnDecodeMatchesTraining: training attention over T = 600 tokens (three
// 256-key chunks, the last partial; GQA 7) against the same rows computed
// from a bf16 KV cache: one position at a time, three positions of three
// slots in one batch, and a 9-token prefill chunk; every row bit-identical.
func attnDecodeMatchesTraining(h *harness, variant string) {
	t := h.t
	const T, Hq, Hkv, D = 600, 7, 1, 128
	train := kernels.AttnParams{B: 1, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T}
	nq, nkv, row := T*Hq*D, T*Hkv*D, Hq*D
	q, k, v := h.vec(nq, 1.5), h.vec(nkv, 1.5), h.vec(nkv, 1)
	out, lse := h.zeros(nq), h.zeros(T*Hq)
	h.b.Attention(out, lse, h.f32(q), h.f32(k), h.f32(v), train)
	want := h.down(out)
	wantL := h.down(lse)
	// a cache of 3 slots, each holding the same keys (bf16)
	ck, _ := h.up(append(append(append([]float64{}, k...), k...), k...), kernels.BF16)
	cv, _ := h.up(append(append(append([]float64{}, v...), v...), v...), kernels.BF16)
	check := func(what string, pos []int, p kernels.AttnParams) {
		t.Helper()
		var qs []float64
		for _, i := range pos {
			qs = append(qs, q[i*row:(i+1)*row]...)
		}
		o, l := h.zeros(len(qs)), h.zeros(len(qs)/D)
		h.b.Attention(o, l, h.f32(qs), ck, cv, p)
		got, gotL := h.down(o), h.down(l)
		for n, i := range pos {
			if d := firstDiff(got[n*row:(n+1)*row], want[i*row:(i+1)*row]); d >= 0 {
				t.Errorf("%s (%s): position %d: out[%d] = %v, training gives %v", what, variant, i, d, got[n*row+d], want[i*row+d])
				return
			}
			if d := firstDiff(gotL[n*Hq:(n+1)*Hq], wantL[i*Hq:(i+1)*Hq]); d >= 0 {
				t.Errorf("%s (%s): position %d: lse[%d] = %v, training gives %v", what, variant, i, d, gotL[n*Hq+d], wantL[i*Hq+d])
				return
			}
		}
	}
	for _, i := range []int{0, 1, 31, 32, 255, 256, 257, 511, 512, 599} {
		check("decode one token", []int{i}, kernels.AttnParams{B: 1, Tq: 1, Hq: Hq, Hkv: Hkv, D: D, S: 3, Tmax: T,
			Slot: []int32{1}, QPos: []int32{int32(i)}, KLen: []int32{int32(i + 1)}})
	}
	check("decode a batch", []int{599, 3, 300}, kernels.AttnParams{B: 3, Tq: 1, Hq: Hq, Hkv: Hkv, D: D, S: 3, Tmax: T,
		Slot: []int32{0, 2, 1}, QPos: []int32{599, 3, 300}, KLen: []int32{600, 4, 301}})
	check("prefill chunk", []int{250, 251, 252, 253, 254, 255, 256, 257, 258}, kernels.AttnParams{B: 1, Tq: 9, Hq: Hq, Hkv: Hkv, D: D,
		S: 3, Tmax: T, Slot: []int32{2}, QPos: []int32{250}, KLen: []int32{259}})
}
