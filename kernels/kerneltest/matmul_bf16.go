package kerneltest

import (
	"fmt"
	"math"

	"github.com/argrl/argrl/kernels"
)

// testMatMulBF16: MatMul with BF16 set. A backend with bf16 products
// (kernels.BF16Products) must match RefMatMul on the bf16-rounded operands
// (reduction tolerance), and differ from the float32 product by the
// rounding; one without must give the BF16 = false result bit for bit.
// Cases: every transpose combination with F32 and BF16 B, batches with a
// broadcast B, Alpha/Beta, odd K, and products large enough to be split
// over threads by rows and by columns.
func testMatMulBF16(h *harness) {
	t := h.t
	bf := kernels.BF16Products(h.b)
	type cs struct {
		batch, m, n, k int
		ta, tb         bool
		alpha, beta    float32
		sb             int // -1: dense stride
		dt             kernels.DType
	}
	var cases []cs
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				cases = append(cases, cs{1, 7, 5, 3, ta, tb, 1, 0, -1, dt}, cs{3, 9, 17, 33, ta, tb, 0.5, 0.25, -1, dt})
			}
		}
		cases = append(cases,
			cs{4, 6, 50, 11, false, true, 1, 0, 0, dt}, // shared weight (y = x·Wᵀ)
			cs{1, 160, 100, 141, false, true, 1, 0.5, -1, dt},
			cs{1, 40, 500, 110, false, false, 1, 0, -1, dt},
			cs{1, 100, 60, 400, true, false, -1, 0, -1, dt},
		)
	}
	for _, c := range cases {
		p := kernels.MatMulParams{Batch: c.batch, M: c.m, N: c.n, K: c.k, TransA: c.ta, TransB: c.tb,
			Alpha: c.alpha, Beta: c.beta, StrideA: c.m * c.k, StrideB: c.sb, StrideC: c.m * c.n, BF16: true}
		if p.StrideB < 0 {
			p.StrideB = c.k * c.n
		}
		span := func(s, n int) int { return (c.batch-1)*s + n }
		what := fmt.Sprintf("MatMul BF16 %+v", c)
		a := h.vec(span(p.StrideA, c.m*c.k), 1)
		cv := h.vec(span(p.StrideC, c.m*c.n), 1)
		bb, bv := h.up(h.vec(span(p.StrideB, c.k*c.n), 1), c.dt)
		ab, cb := h.f32(a), h.f32(cv)
		h.b.MatMul(cb, ab, bb, p)
		got := h.down(cb)
		f32 := p
		f32.BF16 = false
		cb32 := h.f32(cv)
		h.b.MatMul(cb32, ab, bb, f32)
		plain := h.down(cb32)
		if !bf {
			for i := range got {
				if math.Float32bits(float32(got[i])) != math.Float32bits(float32(plain[i])) {
					t.Fatalf("%s: c[%d] = %v, the float32 product %v (a backend without bf16 products must ignore BF16)", what, i, got[i], plain[i])
				}
			}
			continue
		}
		want := append([]float64(nil), cv...)
		kernels.RefMatMul(want, a, bv, p)
		approx(t, what, got, want, rtolReduce, atolReduce)
		// The unrounded product (the exact one, not the backend's BF16 =
		// false result, which a tensor-core backend computes in bf16 too for
		// a BF16 B) differs from it by the operands' rounding, ~2⁻⁹ of each
		// term: far above float32 reduction error.
		exact := append([]float64(nil), cv...)
		p32 := p
		p32.BF16 = false
		kernels.RefMatMul(exact, a, bv, p32)
		diff := 0.0
		for i := range got {
			diff = max(diff, math.Abs(got[i]-exact[i]))
		}
		if diff < 1e-4 {
			t.Errorf("%s: within %.2g of the float32 product: operands not rounded to bf16", what, diff)
		}
	}
	if !bf {
		t.Logf("%s: no bf16 products; BF16 MatMuls are float32 products", h.b.Name())
	}
}
