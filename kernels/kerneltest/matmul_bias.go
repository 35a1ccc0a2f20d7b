package kerneltest

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// testMatMulBias: MatMul with MatMulParams.Bias (an F32 or BF16 [N]) gives
// RefMatMulBias, and MatMul followed by AddBias (within float32 rounding:
// the CUDA backend adds it in a GEMM epilogue); the bias is read-only and
// a short one is an error. Cases: y = x·Wᵀ + b (the projections), a batch
// with a broadcast B, Beta ≠ 0, K = 0.
func testMatMulBias(h *harness) {
	t := h.t
	type cs struct {
		batch, m, n, k int
		tb             bool
		beta           float32
		sb             int // -1: dense
		bias           kernels.DType
	}
	for _, c := range []cs{
		{1, 7, 12, 9, true, 0, -1, kernels.F32},
		{1, 33, 40, 70, true, 0, -1, kernels.BF16},
		{3, 5, 6, 4, false, 0.5, 0, kernels.F32},
		{2, 4, 5, 0, true, 1, -1, kernels.F32},
	} {
		p := kernels.MatMulParams{Batch: c.batch, M: c.m, N: c.n, K: c.k, TransB: c.tb, Alpha: 1, Beta: c.beta,
			StrideA: c.m * c.k, StrideB: c.sb, StrideC: c.m * c.n}
		if p.StrideB < 0 {
			p.StrideB = c.k * c.n
		}
		span := func(s, n int) int { return (c.batch-1)*s + n }
		what := fmt.Sprintf("MatMul with bias %+v", c)
		a, bv, cv := h.vec(span(p.StrideA, c.m*c.k), 1), h.vec(span(p.StrideB, c.k*c.n), 1), h.vec(span(p.StrideC, c.m*c.n), 1)
		bias, biasv := h.up(h.vec(c.n, 1), c.bias)
		ab, bb := h.f32(a), h.f32(bv)
		cb := h.f32(cv)
		pb := p
		pb.Bias = bias
		h.b.MatMul(cb, ab, bb, pb)
		got := h.down(cb)
		want := append([]float64(nil), cv...)
		kernels.RefMatMulBias(want, a, bv, biasv, p)
		approx(t, what, got, want, rtolReduce, atolReduce)
		// the same as MatMul, then AddBias on each batch item
		sep := h.f32(cv)
		h.b.MatMul(sep, ab, bb, p)
		for bt := 0; bt < c.batch; bt++ {
			v := h.b.View(sep, bt*p.StrideC, c.m*c.n)
			h.b.AddBias(v, v, bias, c.m, c.n)
		}
		approx(t, what+" vs MatMul+AddBias", got, h.down(sep), rtolElem, atolElem)
		approx(t, what+": bias unchanged", h.down(bias), biasv, 0, 0)
	}
	// a bias shorter than N is an error
	p := kernels.MatMulParams{Batch: 1, M: 2, N: 3, K: 2, Alpha: 1, StrideA: 4, StrideB: 6, StrideC: 6, Bias: h.b.Alloc(kernels.F32, 2)}
	h.b.MatMul(h.b.Alloc(kernels.F32, 6), h.b.Alloc(kernels.F32, 4), h.b.Alloc(kernels.F32, 6), p)
	if err := h.b.Sync(); err == nil {
		t.Errorf("MatMul with a bias of 2 elements for N = 3: no error")
	}
}
