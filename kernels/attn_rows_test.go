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
