package kerneltest

import (
	"fmt"
	"math"

	"github.com/argrl/argrl/kernels"
)

// testMatMul: every transpose combination, batch with broadcast (zero)
// strides, padded strides, Alpha/Beta, K = 0, a BF16 B operand; and the
// backward identities dA = dC·op(B)ᵀ, dB = op(A)ᵀ·dC expressed as MatMul
// calls, checked with finite differences on RefMatMul.
func testMatMul(h *harness) {
	t := h.t
	type cs struct {
		batch, m, n, k int
		ta, tb         bool
		alpha, beta    float32
		sa, sb, sc     int // -1: dense stride
		dt             kernels.DType
	}
	var cases []cs
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			cases = append(cases, cs{1, 7, 5, 3, ta, tb, 1, 0, -1, -1, -1, kernels.F32})
			cases = append(cases, cs{3, 9, 17, 33, ta, tb, 0.5, 0.25, -1, -1, -1, kernels.F32})
		}
	}
	cases = append(cases,
		cs{4, 6, 5, 11, false, true, 1, 0, -1, 0, -1, kernels.F32},    // shared weight (y = x·Wᵀ)
		cs{3, 4, 6, 5, true, false, 1, 1, 0, -1, -1, kernels.F32},     // broadcast A, accumulate
		cs{2, 5, 3, 4, false, false, 2, 0, 23, 17, 19, kernels.F32},   // padded strides
		cs{1, 65, 67, 70, false, true, 1, 0, -1, -1, -1, kernels.F32}, // past BLAS block sizes
		// ≥ 2²¹ multiply-adds: big enough for a backend to split the
		// product by rows (M ≥ N) or columns (N > M) across threads.
		cs{1, 160, 100, 140, true, false, 1, 0.5, -1, -1, -1, kernels.F32},
		cs{1, 40, 500, 110, false, true, 1, 0, -1, -1, -1, kernels.F32},
		cs{1, 40, 500, 110, true, false, 1, 0, -1, -1, -1, kernels.F32},
		cs{1, 130, 129, 131, false, true, 1, 0, -1, -1, -1, kernels.BF16},
		cs{1, 5, 7, 0, false, false, 1, 0.5, -1, -1, -1, kernels.F32}, // K = 0: C = Beta·C
		cs{2, 3, 9, 13, false, true, 1, 0, -1, 0, -1, kernels.BF16},   // bf16 weight
		cs{2, 3, 9, 13, false, false, 1, 0.5, -1, -1, -1, kernels.BF16},
	)
	for _, c := range cases {
		p := kernels.MatMulParams{Batch: c.batch, M: c.m, N: c.n, K: c.k, TransA: c.ta, TransB: c.tb,
			Alpha: c.alpha, Beta: c.beta, StrideA: c.sa, StrideB: c.sb, StrideC: c.sc}
		if p.StrideA < 0 {
			p.StrideA = c.m * c.k
		}
		if p.StrideB < 0 {
			p.StrideB = c.k * c.n
		}
		if p.StrideC < 0 {
			p.StrideC = c.m * c.n
		}
		span := func(s, n int) int { return (c.batch-1)*s + n }
		what := fmt.Sprintf("MatMul%+v", c)
		a := h.vec(span(p.StrideA, c.m*c.k), 1)
		bv := h.vec(span(p.StrideB, c.k*c.n), 1)
		cv := h.vec(span(p.StrideC, c.m*c.n), 1)
		ab, bb, cb := h.f32(a), (kernels.Buffer)(nil), h.f32(cv)
		bb, bv = h.up(bv, c.dt)
		h.b.MatMul(cb, ab, bb, p)
		want := append([]float64(nil), cv...)
		kernels.RefMatMul(want, a, bv, p)
		approx(t, what, h.down(cb), want, rtolReduce, atolReduce)
	}

	// Backward identities on the reference, then on the backend.
	for _, c := range []struct{ ta, tb bool }{{false, false}, {false, true}, {true, false}, {true, true}} {
		M, N, K := 4, 3, 5
		p := kernels.MatMulParams{Batch: 1, M: M, N: N, K: K, TransA: c.ta, TransB: c.tb, Alpha: 1}
		a, b, dc := h.vec(M*K, 1), h.vec(K*N, 1), h.vec(M*N, 1)
		da, db := matMulGrads(a, b, dc, p, kernels.RefMatMul)
		out := make([]float64, M*N)
		fdCheck(t, fmt.Sprintf("MatMul backward ta=%v tb=%v", c.ta, c.tb), func() []float64 {
			kernels.RefMatMul(out, a, b, p)
			return out
		}, dc, [][]float64{a, b}, [][]float64{da, db})
		gda, gdb := matMulGrads(a, b, dc, p, func(cc, aa, bb []float64, q kernels.MatMulParams) {
			cb := h.zeros(len(cc))
			h.b.MatMul(cb, h.f32(aa), h.f32(bb), q)
			copy(cc, h.down(cb))
		})
		approx(t, "backend dA", gda, da, rtolReduce, atolReduce)
		approx(t, "backend dB", gdb, db, rtolReduce, atolReduce)
	}
}

// matMulGrads computes dA and dB of C = op(A)·op(B) with two more matmuls
// (the recipe the graph layer uses):
//
//	dA = dC·op(B)ᵀ (stored K×M as op(B)·dCᵀ when TransA)
//	dB = op(A)ᵀ·dC (stored N×K as dCᵀ·op(A) when TransB)
func matMulGrads(a, b, dc []float64, p kernels.MatMulParams, mm func(c, a, b []float64, p kernels.MatMulParams)) (da, db []float64) {
	M, N, K := p.M, p.N, p.K
	da, db = make([]float64, M*K), make([]float64, K*N)
	if !p.TransA {
		mm(da, dc, b, kernels.MatMulParams{Batch: 1, M: M, N: K, K: N, TransB: !p.TransB, Alpha: 1})
	} else {
		mm(da, b, dc, kernels.MatMulParams{Batch: 1, M: K, N: M, K: N, TransA: p.TransB, TransB: true, Alpha: 1})
	}
	if !p.TransB {
		mm(db, a, dc, kernels.MatMulParams{Batch: 1, M: K, N: N, K: M, TransA: !p.TransA, Alpha: 1})
	} else {
		mm(db, dc, a, kernels.MatMulParams{Batch: 1, M: N, N: K, K: M, TransA: true, TransB: p.TransA, Alpha: 1})
	}
	return da, db
}

// testEmbedding: gather from F32 and BF16 tables; scatter-add backward with
// repeated ids overwrites dtable; FD check of the reference backward.
func testEmbedding(h *harness) {
	t := h.t
	V, C := 11, 7
	ids := []int32{3, 0, 10, 3, 3, 7}
	N := len(ids)
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		tb, tab := h.up(h.vec(V*C, 2), dt)
		out := h.zeros(N * C)
		h.b.Embedding(out, tb, ids, C)
		want := make([]float64, N*C)
		kernels.RefEmbedding(want, tab, ids, C)
		approx(t, "Embedding "+dt.String(), h.down(out), want, 0, 0)
	}
	dout := h.vec(N*C, 1)
	dtab := h.f32(h.vec(V*C, 5)) // garbage: must be overwritten
	h.b.EmbeddingBackward(dtab, h.f32(dout), ids, C)
	want := make([]float64, V*C)
	kernels.RefEmbeddingBackward(want, dout, ids, C)
	approx(t, "EmbeddingBackward", h.down(dtab), want, rtolElem, atolElem)

	tab := h.vec(V*C, 1)
	out := make([]float64, N*C)
	fdCheck(t, "RefEmbeddingBackward", func() []float64 {
		kernels.RefEmbedding(out, tab, ids, C)
		return out
	}, dout, [][]float64{tab}, [][]float64{want})
}

// testElementwise: AXPBY (with and without b), Mul, AddBias, SumRows, Dot,
// in place where allowed, and FD checks of their backward recipes
// (AXPBY→AXPBY, Mul→Mul, AddBias→SumRows, Dot→AXPBY).
func testElementwise(h *harness) {
	t, b := h.t, h.b
	n := 1003
	x, y := h.vec(n, 2), h.vec(n, 2)
	want := make([]float64, n)

	out := h.zeros(n)
	b.AXPBY(out, h.f32(x), h.f32(y), 0.5, -2, n)
	kernels.RefAXPBY(want, x, y, 0.5, -2, n)
	approx(t, "AXPBY", h.down(out), want, rtolElem, atolElem)
	b.AXPBY(out, h.f32(x), nil, 3, 0, n)
	kernels.RefAXPBY(want, x, nil, 3, 0, n)
	approx(t, "AXPBY beta=0 b=nil", h.down(out), want, rtolElem, atolElem)
	ib := h.f32(x)
	b.AXPBY(ib, ib, h.f32(y), 1, 1, n)
	kernels.RefAXPBY(want, x, y, 1, 1, n)
	approx(t, "AXPBY in place", h.down(ib), want, rtolElem, atolElem)

	b.Mul(out, h.f32(x), h.f32(y), n)
	kernels.RefMul(want, x, y, n)
	approx(t, "Mul", h.down(out), want, rtolElem, atolElem)

	N, C := 37, 27
	xm, bias := h.vec(N*C, 1), h.vec(C, 1)
	ob := h.zeros(N * C)
	b.AddBias(ob, h.f32(xm), h.f32(bias), N, C)
	wantm := make([]float64, N*C)
	kernels.RefAddBias(wantm, xm, bias, N, C)
	approx(t, "AddBias", h.down(ob), wantm, rtolElem, atolElem)

	sr := h.zeros(C)
	b.SumRows(sr, h.f32(xm), N, C)
	wants := make([]float64, C)
	kernels.RefSumRows(wants, xm, N, C)
	approx(t, "SumRows", h.down(sr), wants, rtolReduce, atolReduce)

	d := h.zeros(1)
	b.Dot(d, h.f32(x), h.f32(y), n)
	wantd := make([]float64, 1)
	kernels.RefDot(wantd, x, y, n)
	if got := h.down(d)[0]; math.Abs(got-wantd[0]) > 1e-5*(1+math.Abs(wantd[0]))*math.Sqrt(float64(n)) {
		t.Errorf("Dot = %v, want %v", got, wantd[0])
	}

	// Backward recipes, on the references.
	m := 9
	a, c, dout := h.vec(m, 1), h.vec(m, 1), h.vec(m, 1)
	o := make([]float64, m)
	da, dc := make([]float64, m), make([]float64, m)
	kernels.RefAXPBY(da, dout, nil, 0.5, 0, m)
	kernels.RefAXPBY(dc, dout, nil, -2, 0, m)
	fdCheck(t, "AXPBY backward", func() []float64 { kernels.RefAXPBY(o, a, c, 0.5, -2, m); return o },
		dout, [][]float64{a, c}, [][]float64{da, dc})
	kernels.RefMul(da, dout, c, m)
	kernels.RefMul(dc, dout, a, m)
	fdCheck(t, "Mul backward", func() []float64 { kernels.RefMul(o, a, c, m); return o },
		dout, [][]float64{a, c}, [][]float64{da, dc})
	Nb, Cb := 4, 3
	xb, bb, db := h.vec(Nb*Cb, 1), h.vec(Cb, 1), h.vec(Nb*Cb, 1)
	ob2 := make([]float64, Nb*Cb)
	dbias := make([]float64, Cb)
	kernels.RefSumRows(dbias, db, Nb, Cb)
	fdCheck(t, "AddBias backward", func() []float64 { kernels.RefAddBias(ob2, xb, bb, Nb, Cb); return ob2 },
		db, [][]float64{xb, bb}, [][]float64{db, dbias})
	o1 := make([]float64, 1)
	g := []float64{1.7}
	kernels.RefAXPBY(da, c, nil, g[0], 0, m)
	kernels.RefAXPBY(dc, a, nil, g[0], 0, m)
	fdCheck(t, "Dot backward", func() []float64 { kernels.RefDot(o1, a, c, m); return o1 },
		g, [][]float64{a, c}, [][]float64{da, dc})
}
