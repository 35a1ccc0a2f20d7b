package kerneltest

import (
	"fmt"
	"math"
	"slices"

	"github.com/argrl/argrl/kernels"
)

// testMatMulIO: MatMul's bf16 activations and output stride
// (MatMulParams: a BF16 A, a BF16 C, LdC).
//   - A's values are bf16 ones in every case (the reference then holds
//     whether or not a backend rounds A).
//   - A BF16 A gives the bits of the same MatMul with an F32 A holding its
//     values, on every backend (a tensor-core backend rounds an F32 A to
//     those very values; others widen the BF16 one).
//   - A BF16 C gets the F32 result rounded to nearest even: RefMatMul (bias
//     included) on the stored inputs within bf16 rounding (half an ulp,
//     2⁻⁸ relative) plus the reduction tolerance; with Beta ≠ 0 the old C
//     is read as its bf16 values.
//   - With LdC > N the block matches RefMatMul and every element between
//     rows (and after the last row) keeps its bits, F32 and BF16 C, with a
//     bias, a batch and a broadcast B.
//   - LdC < N, and Batch > 1 with StrideC < M·LdC, are errors.
func testMatMulIO(h *harness) {
	t := h.t
	type cs struct {
		batch, m, n, k int
		ta, tb         bool
		beta           float32
		bf16           bool          // p.BF16
		bdt, adt, cdt  kernels.DType // B, A and C storage
		ldc            int           // 0: N
		bias           bool
	}
	F, H := kernels.F32, kernels.BF16
	var cases []cs
	for _, adt := range []kernels.DType{F, H} {
		for _, cdt := range []kernels.DType{F, H} {
			for _, bdt := range []kernels.DType{F, H} {
				cases = append(cases,
					cs{1, 7, 12, 9, false, true, 0, false, bdt, adt, cdt, 0, false},
					cs{1, 9, 5, 33, true, false, 0.5, true, bdt, adt, cdt, 0, false},
					cs{2, 6, 10, 8, false, true, 1, true, bdt, adt, cdt, 23, false},
					cs{1, 33, 40, 70, false, true, 0, false, bdt, adt, cdt, 96, true},
				)
			}
		}
	}
	for _, c := range cases {
		ldc := c.n
		if c.ldc != 0 {
			ldc = c.ldc
		}
		p := kernels.MatMulParams{Batch: c.batch, M: c.m, N: c.n, K: c.k, TransA: c.ta, TransB: c.tb, Alpha: 1, Beta: c.beta,
			StrideA: c.m * c.k, StrideB: c.k * c.n, StrideC: c.m*ldc + 3, BF16: c.bf16, LdC: c.ldc}
		if c.batch == 2 {
			p.StrideB = 0 // one weight for both items
		}
		span := func(s, n int) int { return (c.batch-1)*s + n }
		nA, nB, nC := span(p.StrideA, c.m*c.k), span(p.StrideB, c.k*c.n), span(p.StrideC, (c.m-1)*ldc+c.n)+2
		what := fmt.Sprintf("MatMul %+v", c)
		// A's values are bf16 ones whatever its storage, so that a backend
		// that rounds A (tensor cores) and one that does not agree
		_, ar := h.up(h.vec(nA, 1), H)
		ab, av := h.up(ar, c.adt)
		bb, bv := h.up(h.vec(nB, 1), c.bdt)
		cb, cv := h.up(h.vec(nC, 1), c.cdt)
		var biasb kernels.Buffer
		var biasv []float64
		pp := p
		if c.bias {
			biasb, biasv = h.up(h.vec(c.n, 1), F)
			pp.Bias = biasb
		}
		before := h.bits(cb)
		h.b.MatMul(cb, ab, bb, pp)
		got := h.down(cb)
		// the same call over F32 A and C holding the same values
		a32, c32 := h.f32(av), h.f32(cv)
		h.b.MatMul(c32, a32, bb, pp)
		same := h.down(c32)
		// the reference on the stored values; bf16 products round them
		want, rp := slices.Clone(cv), p
		rp.BF16 = c.bf16 && kernels.BF16Products(h.b)
		if c.bias {
			kernels.RefMatMulBias(want, av, bv, biasv, rp)
		} else {
			kernels.RefMatMul(want, av, bv, rp)
		}
		in := make([]bool, nC) // elements the call writes
		for bt := range c.batch {
			for i := range c.m {
				for j := range c.n {
					in[bt*p.StrideC+i*ldc+j] = true
				}
			}
		}
		var gotIn, wantIn, sameIn []float64
		for i := range nC {
			if !in[i] {
				if h.bits(cb)[i] != before[i] {
					t.Errorf("%s: c[%d] outside the block changed: %v, was %v", what, i, got[i], cv[i])
					break
				}
				continue
			}
			gotIn, wantIn, sameIn = append(gotIn, got[i]), append(wantIn, want[i]), append(sameIn, same[i])
		}
		if c.cdt == F {
			// an A stored in bf16 is the F32 A with its values, bit for bit
			for i := range got {
				if math.Float32bits(float32(got[i])) != math.Float32bits(float32(same[i])) {
					t.Errorf("%s: c[%d] = %v; with an F32 A of the same values %v", what, i, got[i], same[i])
					break
				}
			}
			approx(t, what, gotIn, wantIn, rtolReduce, atolReduce)
			continue
		}
		// a BF16 C is the F32 result rounded once
		approx(t, what+" (bf16 C vs the f32 result)", gotIn, sameIn, 1.0/256, 0)
		approx(t, what+" (bf16 C vs the reference)", gotIn, wantIn, 1.0/256+rtolReduce, atolReduce)
	}
	// bad strides
	x := h.f32(h.vec(64, 1))
	h.b.MatMul(h.zeros(64), x, x, kernels.MatMulParams{Batch: 1, M: 2, N: 4, K: 2, Alpha: 1, LdC: 3})
	h.wantErr("MatMul with LdC 3 < N 4", "LdC")
	h.b.MatMul(h.zeros(64), x, x, kernels.MatMulParams{Batch: 2, M: 2, N: 4, K: 2, Alpha: 1, LdC: 6, StrideA: 4, StrideB: 8, StrideC: 10})
	h.wantErr("MatMul with StrideC 10 < M·LdC 12", "StrideC")
}
