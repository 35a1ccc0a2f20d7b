package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionRowIndependentOfTile: a query row's output is the same bits
// whether it is computed in a training tile of 64 rows (whose longest row
// sets the tile's key count) or alone as a decode step over the cache,
// for key counts on both sides of the SGEMM's 256-key block. This is what
// makes the first mini-batch's ratio exactly 1 at any sequence length.
func TestAttentionRowIndependentOfTile(t *testing.T) {
	be := NewCPU()
	const Hq, Hkv, D = 4, 2, 16
	for _, T := range []int{200, 257, 300, 513, 800} {
		r := rand.New(rand.NewPCG(uint64(T), 1))
		fill := func(n int) Buffer {
			h := make([]float32, n)
			for i := range h {
				h[i] = float32(r.NormFloat64())
			}
			b := be.Alloc(F32, n)
			be.CopyIn(b, h)
			return b
		}
		q, k, v := fill(T*Hq*D), fill(T*Hkv*D), fill(T*Hkv*D)
		out, lse := be.Alloc(F32, T*Hq*D), be.Alloc(F32, T*Hq)
		be.Attention(out, lse, q, k, v, AttnParams{B: 1, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T})
		full := make([]float32, T*Hq*D)
		be.CopyOut(full, out)
		qh := make([]float32, T*Hq*D)
		be.CopyOut(qh, q)
		one, lse1, q1 := be.Alloc(F32, Hq*D), be.Alloc(F32, Hq), be.Alloc(F32, Hq*D)
		got := make([]float32, Hq*D)
		for _, pos := range []int{0, 255, 256, T / 2, T - 1} {
			if pos >= T {
				continue
			}
			be.CopyIn(q1, qh[pos*Hq*D:(pos+1)*Hq*D])
			be.Attention(one, lse1, q1, k, v, AttnParams{B: 1, Tq: 1, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T,
				QPos: []int32{int32(pos)}, KLen: []int32{int32(pos + 1)}})
			be.CopyOut(got, one)
			for i, x := range got {
				if w := full[pos*Hq*D+i]; math.Float32bits(x) != math.Float32bits(w) {
					t.Fatalf("T=%d row %d element %d: decode %v, training tile %v", T, pos, i, x, w)
				}
			}
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAttentionPackedRowBitIdentical: sequences laid end to end in one row
// with KStart give each sequence's out and lse the same bits as that
// sequence alone in a row of its own, and as decoding its last token from
// the cache, for lengths on both sides of the 64-row tile and the 256-key
// P·V block, and offsets that are not multiples of either.
func TestAttentionPackedRowBitIdentical(t *testing.T) {
	be := NewCPU()
	const Hq, Hkv, D = 4, 2, 16
	lens := []int{70, 300, 1, 257, 45, 520}
	T := 0
	for _, n := range lens {
		T += n
	}
	r := rand.New(rand.NewPCG(7, 34))
	host := func(n int) []float32 {
		h := make([]float32, n)
		for i := range h {
			h[i] = float32(r.NormFloat64())
		}
		return h
	}
	up := func(h []float32) Buffer {
		b := be.Alloc(F32, len(h))
		be.CopyIn(b, h)
		return b
	}
	qh, kh, vh := host(T*Hq*D), host(T*Hkv*D), host(T*Hkv*D)
	ks := make([]int32, 0, T)
	for s, n := range lens {
		start := 0
		for _, m := range lens[:s] {
			start += m
		}
		for range n {
			ks = append(ks, int32(start))
		}
	}
	out, lse := be.Alloc(F32, T*Hq*D), be.Alloc(F32, T*Hq)
	be.Attention(out, lse, up(qh), up(kh), up(vh), AttnParams{B: 1, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T, KStart: ks})
	packed, packedL := make([]float32, T*Hq*D), make([]float32, T*Hq)
	be.CopyOut(packed, out)
	be.CopyOut(packedL, lse)
	start := 0
	for s, n := range lens {
		q1 := up(qh[start*Hq*D : (start+n)*Hq*D])
		k1, v1 := up(kh[start*Hkv*D:(start+n)*Hkv*D]), up(vh[start*Hkv*D:(start+n)*Hkv*D])
		o1, l1 := be.Alloc(F32, n*Hq*D), be.Alloc(F32, n*Hq)
		be.Attention(o1, l1, q1, k1, v1, AttnParams{B: 1, Tq: n, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: n})
		alone, aloneL := make([]float32, n*Hq*D), make([]float32, n*Hq)
		be.CopyOut(alone, o1)
		be.CopyOut(aloneL, l1)
		for i, w := range alone {
			if g := packed[start*Hq*D+i]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("sequence %d (%d tokens at %d) element %d: packed %v, alone %v", s, n, start, i, g, w)
			}
		}
		for i, w := range aloneL {
			if g := packedL[start*Hq+i]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("sequence %d lse %d: packed %v, alone %v", s, i, g, w)
			}
		}
		// Its last token decoded from the packed row's cache.
		qd := up(qh[(start+n-1)*Hq*D : (start+n)*Hq*D])
		od := be.Alloc(F32, Hq*D)
		be.Attention(od, be.Alloc(F32, Hq), qd, up(kh), up(vh), AttnParams{B: 1, Tq: 1, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T,
			QPos: []int32{int32(start + n - 1)}, KLen: []int32{int32(start + n)}, KStart: []int32{int32(start)}})
		dec := make([]float32, Hq*D)
		be.CopyOut(dec, od)
		for i, x := range dec {
			if w := alone[(n-1)*Hq*D+i]; math.Float32bits(x) != math.Float32bits(w) {
				t.Fatalf("sequence %d: decode element %d %v, alone %v", s, i, x, w)
			}
		}
		start += n
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
}
