package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// testPagedBF16: a bf16 paged cache (the GPU's page dtype), written by
// KVScatter (kv_scatter_bf16, rounding to nearest even) and read by a
// paged decode Attention (kv_gather_bf16), against the references over
// the bf16-rounded values. The f32 pages are in the conformance suite.
func testPagedBF16(t *testing.T, be *Backend) {
	h := &tb{t: t, be: be, r: rand.New(rand.NewPCG(33, 1))}
	const S, Tmax, Hkv, Hq, D = 6, 4, 2, 6, 8
	round := func(x []float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = float64(kernels.Float32FromBF16(kernels.BF16FromFloat32(float32(v))))
		}
		return out
	}
	nkv := S * Tmax * Hkv * D
	k0, v0 := round(h.vec(nkv, 1.5)), round(h.vec(nkv, 1))
	kb, vb := h.up(k0, kernels.BF16), h.up(v0, kernels.BF16)
	// Two new tokens: rows 1 and 2 of pages 3 and 0.
	page, off := []int32{3, 0}, []int32{1, 2}
	xk, xv := h.vec(2*Hkv*D, 1.5), h.vec(2*Hkv*D, 1)
	be.KVScatter(kb, h.f32(xk), page, off, 2, Hkv, D, Tmax)
	be.KVScatter(vb, h.f32(xv), page, off, 2, Hkv, D, Tmax)
	kernels.RefKVScatter(k0, round(xk), page, off, 2, Hkv, D, Tmax)
	kernels.RefKVScatter(v0, round(xv), page, off, 2, Hkv, D, Tmax)
	h.near("KVScatter bf16 k", h.down(kb), k0, 0, 0)
	h.near("KVScatter bf16 v", h.down(vb), v0, 0, 0)

	p := kernels.AttnParams{B: 2, Tq: 1, Hq: Hq, Hkv: Hkv, D: D, S: S, Tmax: Tmax,
		QPos: []int32{5, 10}, KLen: []int32{6, 11}, Pages: []int32{5, 3, -1, 1, 2, 0}, MaxPages: 3}
	q := h.vec(p.B*Hq*D, 1.5)
	out, lse := h.zeros(len(q)), h.zeros(p.B*Hq)
	be.Attention(out, lse, h.f32(q), kb, vb, p)
	wo, wl := make([]float64, len(q)), make([]float64, p.B*Hq)
	kernels.RefAttention(wo, wl, q, k0, v0, p)
	h.near("paged bf16 attention out", h.down(out), wo, 1e-4, 1e-4)
	h.near("paged bf16 attention lse", h.down(lse), wl, 1e-4, 1e-4)
}
