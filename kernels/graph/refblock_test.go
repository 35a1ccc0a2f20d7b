package graph

import (
	"math"

	"github.com/argrl/argrl/kernels"
)

func sqrt(x float64) float64 { return math.Sqrt(x) }

func mathLog(x float64) float64 { return math.Log(x) }

type refResult struct {
	lp    []float64
	loss  float64
	grads map[string][]float64 // by parameter name
}

// refBlock recomputes buildBlock's head graph (loss and every parameter
// gradient) by hand in float64, composing the kernels' Ref* functions:
// the forward in order, then the chain rule backwards.
func refBlock(bg *blockGraph, gv []float32) refResult {
	d, b := bg.d, bg.b
	B, T, C, Hq, Hkv, D, F, V := d.B, d.T, d.C, d.Hq, d.Hkv, d.D, d.F, d.V
	N := B * T
	p := map[string][]float64{}
	for _, n := range bg.params {
		p[n.Name()] = f64(bg.vals[n])
	}
	cos, sin := f64(bg.vals[bg.cos]), f64(bg.vals[bg.sin])
	pos, _ := b.positions()
	ap := kernels.AttnParams{B: B, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: B, Tmax: T, KLen: b.Lens}
	const eps = 1e-6

	lin := func(x, w []float64, in, out int) []float64 { // y = x·Wᵀ
		y := make([]float64, N*out)
		kernels.RefMatMul(y, x, w, kernels.MatMulParams{Batch: 1, M: N, N: out, K: in, TransB: true, Alpha: 1})
		return y
	}
	linBack := func(dy, x, w []float64, in, out int) (dx, dw []float64) {
		dx, dw = make([]float64, N*in), make([]float64, out*in)
		kernels.RefMatMul(dx, dy, w, kernels.MatMulParams{Batch: 1, M: N, N: in, K: out, Alpha: 1})
		kernels.RefMatMul(dw, dy, x, kernels.MatMulParams{Batch: 1, M: out, N: in, K: N, TransA: true, Alpha: 1})
		return
	}
	norm := func(x, w []float64) (y, rstd []float64) {
		y, rstd = make([]float64, N*C), make([]float64, N)
		kernels.RefRMSNorm(y, rstd, x, w, N, C, eps)
		return
	}
	normBack := func(dy, x, w, rstd []float64) (dx, dw []float64) {
		dx, dw = make([]float64, N*C), make([]float64, C)
		kernels.RefRMSNormBackward(dx, dw, dy, x, w, rstd, N, C)
		return
	}
	bias := func(x, bb []float64, n int) []float64 {
		y := make([]float64, N*n)
		kernels.RefAddBias(y, x, bb, N, n)
		return y
	}
	sumRows := func(x []float64, n int) []float64 {
		y := make([]float64, n)
		kernels.RefSumRows(y, x, N, n)
		return y
	}
	rope := func(x []float64, H int, inv bool) []float64 {
		y := make([]float64, len(x))
		kernels.RefRoPE(y, x, cos, sin, pos, N, H, D, inv)
		return y
	}
	add := func(a, c []float64) []float64 {
		y := make([]float64, len(a))
		kernels.RefAXPBY(y, a, c, 1, 1, len(a))
		return y
	}

	// Forward.
	x := make([]float64, N*C)
	kernels.RefEmbedding(x, p["embed"], b.IDs, C)
	h1, r1 := norm(x, p["n1"])
	qb := bias(lin(h1, p["wq"], C, Hq*D), p["bq"], Hq*D)
	kb := bias(lin(h1, p["wk"], C, Hkv*D), p["bk"], Hkv*D)
	v := bias(lin(h1, p["wv"], C, Hkv*D), p["bv"], Hkv*D)
	q, k := rope(qb, Hq, false), rope(kb, Hkv, false)
	att, lse := make([]float64, N*Hq*D), make([]float64, N*Hq)
	kernels.RefAttention(att, lse, q, k, v, ap)
	x2 := add(x, lin(att, p["wo"], Hq*D, C))
	h2, r2 := norm(x2, p["n2"])
	gt, up := lin(h2, p["wg"], C, F), lin(h2, p["wu"], C, F)
	m := make([]float64, N*F)
	kernels.RefSwiGLU(m, gt, up, 1, N*F, N*F)
	x3 := add(x2, lin(m, p["wd"], F, C))
	h3, r3 := norm(x3, p["nf"])
	logits := lin(h3, p["wlm"], C, V)
	lp, lse2 := make([]float64, N), make([]float64, N)
	kernels.RefLogProbs(lp, lse2, nil, logits, b.Targets, N, V)
	g := f64(gv)
	loss := make([]float64, 1)
	kernels.RefDot(loss, lp, g, N)

	// Backward.
	gr := map[string][]float64{}
	dlogits := make([]float64, N*V)
	kernels.RefLogProbsBackward(dlogits, g, logits, lse2, b.Targets, N, V)
	dh3, dwlm := linBack(dlogits, h3, p["wlm"], C, V)
	gr["wlm"] = dwlm
	dx3, dnf := normBack(dh3, x3, p["nf"], r3)
	gr["nf"] = dnf
	dm, dwd := linBack(dx3, m, p["wd"], F, C)
	gr["wd"] = dwd
	dgt, dup := make([]float64, N*F), make([]float64, N*F)
	kernels.RefSwiGLUBackward(dgt, dup, dm, gt, up, 1, N*F, N*F)
	dh2a, dwg := linBack(dgt, h2, p["wg"], C, F)
	dh2b, dwu := linBack(dup, h2, p["wu"], C, F)
	gr["wg"], gr["wu"] = dwg, dwu
	dx2n, dn2 := normBack(add(dh2a, dh2b), x2, p["n2"], r2)
	gr["n2"] = dn2
	dx2 := add(dx3, dx2n)
	datt, dwo := linBack(dx2, att, p["wo"], Hq*D, C)
	gr["wo"] = dwo
	dq, dk, dv := make([]float64, N*Hq*D), make([]float64, N*Hkv*D), make([]float64, N*Hkv*D)
	kernels.RefAttentionBackward(dq, dk, dv, datt, q, k, v, att, lse, ap)
	dqb, dkb := rope(dq, Hq, true), rope(dk, Hkv, true)
	gr["bq"], gr["bk"], gr["bv"] = sumRows(dqb, Hq*D), sumRows(dkb, Hkv*D), sumRows(dv, Hkv*D)
	dh1q, dwq := linBack(dqb, h1, p["wq"], C, Hq*D)
	dh1k, dwk := linBack(dkb, h1, p["wk"], C, Hkv*D)
	dh1v, dwv := linBack(dv, h1, p["wv"], C, Hkv*D)
	gr["wq"], gr["wk"], gr["wv"] = dwq, dwk, dwv
	dxn, dn1 := normBack(add(add(dh1q, dh1k), dh1v), x, p["n1"], r1)
	gr["n1"] = dn1
	dx := add(dx2, dxn)
	gr["embed"] = make([]float64, V*C)
	kernels.RefEmbeddingBackward(gr["embed"], dx, b.IDs, C)
	return refResult{lp: lp, loss: loss[0], grads: gr}
}
