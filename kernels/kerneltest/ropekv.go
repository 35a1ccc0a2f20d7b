package kerneltest

import (
	"fmt"
	"slices"

	"github.com/argrl/argrl/kernels"
)

// testBiasRoPEKV: a backend's fused decode prologue (the optional
// kernels.RoPEKVWriter) gives exactly the bits of its own AddBias, RoPE and
// KVScatter run one after another, into f32 and bf16 caches, with and
// without biases, at GQA ratios 1, 2 and 7, D = 6, 64 and 128, and sizes
// on both sides of a 256-thread block; rows of the cache it must not
// write keep their values; it matches the float64 reference; bad pages,
// positions and an odd D are refused.
func testBiasRoPEKV(h *harness) {
	t := h.t
	w, ok := h.b.(kernels.RoPEKVWriter)
	if !ok {
		t.Skipf("%s has no fused decode prologue (kernels.RoPEKVWriter is optional)", h.b.Name())
	}
	const P = 40
	cosT, sinT := map[int][2]kernels.Buffer{}, map[int][2][]float64{}
	tables := func(D int) ([2]kernels.Buffer, [2][]float64) {
		if _, ok := cosT[D]; !ok {
			c, s := kernels.RopeTables(kernels.RopeInvFreq(D, 10000), P)
			cd, sd := make([]float64, len(c)), make([]float64, len(s))
			for i := range c {
				cd[i], sd[i] = float64(c[i]), float64(s[i])
			}
			cosT[D] = [2]kernels.Buffer{h.f32(cd), h.f32(sd)}
			sinT[D] = [2][]float64{cd, sd}
		}
		return cosT[D], sinT[D]
	}
	for _, c := range []struct {
		N, Hq, Hkv, D int
		bias          bool
		dt            kernels.DType
	}{
		{1, 1, 1, 6, false, kernels.F32},
		{3, 2, 1, 6, true, kernels.F32},
		{5, 7, 1, 64, true, kernels.F32},   // 5·9·32 = 1440 threads: several blocks, a partial last one
		{2, 4, 2, 128, true, kernels.BF16}, // 2·8·64 = 1024
		{7, 7, 1, 64, false, kernels.BF16},
		{4, 2, 2, 128, false, kernels.F32}, // 4·6·64 = 1536
	} {
		N, Hq, Hkv, D := c.N, c.Hq, c.Hkv, c.D
		name := fmt.Sprintf("BiasRoPEKV N=%d Hq=%d Hkv=%d D=%d bias=%v %v", N, Hq, Hkv, D, c.bias, c.dt)
		const S, Tmax = 5, 4
		p := kernels.RoPEKVParams{N: N, Hq: Hq, Hkv: Hkv, D: D, Tmax: Tmax,
			Pos: make([]int32, N), Page: make([]int32, N), Off: make([]int32, N)}
		slots := h.r.Perm(S * Tmax)
		for n := range N {
			p.Pos[n] = int32(h.r.IntN(P))
			p.Page[n], p.Off[n] = int32(slots[n]/Tmax), int32(slots[n]%Tmax)
		}
		q, k, v := h.vec(N*Hq*D, 2), h.vec(N*Hkv*D, 2), h.vec(N*Hkv*D, 2)
		var qbv, kbv, vbv []float64
		var qb, kb, vb kernels.Buffer
		if c.bias {
			qbv, kbv, vbv = h.vec(Hq*D, 1), h.vec(Hkv*D, 1), h.vec(Hkv*D, 1)
			qb, kb, vb = h.f32(qbv), h.f32(kbv), h.f32(vbv)
		}
		cs, csv := tables(D)
		qB, kB, vB := h.f32(q), h.f32(k), h.f32(v)
		nc := S * Tmax * Hkv * D
		kInit, vInit := h.vec(nc, 3), h.vec(nc, 3)
		kc, kcv := h.up(kInit, c.dt)
		vc, vcv := h.up(vInit, c.dt)
		qo := h.zeros(N * Hq * D)
		w.BiasRoPEKV(qo, kc, vc, qB, kB, vB, qb, kb, vb, cs[0], cs[1], p)

		// the same backend, op by op
		kc2, _ := h.up(kInit, c.dt)
		vc2, _ := h.up(vInit, c.dt)
		qo2 := h.zeros(N * Hq * D)
		qt, kt, vt := h.zeros(N*Hq*D), h.zeros(N*Hkv*D), h.zeros(N*Hkv*D)
		h.b.Copy(qt, qB)
		h.b.Copy(kt, kB)
		h.b.Copy(vt, vB)
		if c.bias {
			h.b.AddBias(qt, qt, qb, N, Hq*D)
			h.b.AddBias(kt, kt, kb, N, Hkv*D)
			h.b.AddBias(vt, vt, vb, N, Hkv*D)
		}
		h.b.RoPE(qo2, qt, cs[0], cs[1], p.Pos, N, Hq, D, false)
		h.b.RoPE(kt, kt, cs[0], cs[1], p.Pos, N, Hkv, D, false)
		h.b.KVScatter(kc2, kt, p.Page, p.Off, N, Hkv, D, Tmax)
		h.b.KVScatter(vc2, vt, p.Page, p.Off, N, Hkv, D, Tmax)
		h.sync()
		for _, pair := range [][3]any{{"q", qo, qo2}, {"k cache", kc, kc2}, {"v cache", vc, vc2}} {
			a, b := pair[1].(kernels.Buffer), pair[2].(kernels.Buffer)
			if !slices.Equal(h.down(a), h.down(b)) {
				t.Errorf("%s: %s differs from AddBias, RoPE, KVScatter one by one", name, pair[0])
			}
		}

		// against the float64 reference (a bf16 cache rounds each element)
		wq := make([]float64, N*Hq*D)
		kernels.RefBiasRoPEKV(wq, kcv, vcv, q, k, v, qbv, kbv, vbv, csv[0], csv[1], p)
		approx(t, name+" q", h.down(qo), wq, rtolElem*4, atolElem*4)
		tol := rtolElem * 4
		if c.dt == kernels.BF16 {
			tol = 1.0 / 256
		}
		approx(t, name+" k cache", h.down(kc), kcv, tol, atolElem*4)
		approx(t, name+" v cache", h.down(vc), vcv, tol, atolElem*4)
	}

	// refusals
	cs, _ := tables(6)
	one := func(mod func(p *kernels.RoPEKVParams)) {
		p := kernels.RoPEKVParams{N: 1, Hq: 1, Hkv: 1, D: 6, Tmax: 2, Pos: []int32{0}, Page: []int32{0}, Off: []int32{0}}
		mod(&p)
		x := h.zeros(6)
		kc, vc := h.zeros(12), h.zeros(12)
		w.BiasRoPEKV(h.zeros(6), kc, vc, x, x, x, nil, nil, nil, cs[0], cs[1], p)
	}
	one(func(p *kernels.RoPEKVParams) { p.Page[0] = 1 })
	h.wantErr("BiasRoPEKV with a page past the cache", "page")
	one(func(p *kernels.RoPEKVParams) { p.Off[0] = 2 })
	h.wantErr("BiasRoPEKV with an offset past the page", "offset")
	one(func(p *kernels.RoPEKVParams) { p.Pos[0] = P })
	h.wantErr("BiasRoPEKV with a position past the tables", "pos")
	one(func(p *kernels.RoPEKVParams) { p.Pos = nil })
	h.wantErr("BiasRoPEKV without positions", "pos")
}
