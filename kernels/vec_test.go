package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The backend's elementwise ops that run kernels/internal/vec give, bit for
// bit, the scalar loops they replaced: Dropout with DropoutUniform,
// SwiGLU/SwiGLUBackward and AXPBY as written before vectorization (with
// float32 conversions that keep the compiler from fusing them on GOAMD64=v3).
func TestElementwiseBitIdentical(t *testing.T) {
	be := NewCPU()
	r := rand.New(rand.NewPCG(31, 32))
	const n = 70001 // several goroutine chunks and an odd tail
	vals := func(scale float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = (r.Float32()*2 - 1) * scale
		}
		return x
	}
	x, u, d := vals(10), vals(3), vals(2)
	buf := func(v []float32) Buffer { b := be.Alloc(F32, n); be.CopyIn(b, v); return b }
	get := func(b Buffer) []float32 { v := make([]float32, n); be.CopyOut(v, b); return v }
	check := func(what string, got []float32, want func(i int) float32) {
		t.Helper()
		for i, g := range got {
			if w := want(i); math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%s[%d] = %v, scalar loop %v", what, i, g, w)
			}
		}
	}
	for _, p := range []float32{0, 0.05, 0.5, 1} {
		seed := r.Uint64()
		o := be.Alloc(F32, n)
		be.Dropout(o, buf(x), n, p, seed)
		scale := float32(0)
		if p < 1 {
			scale = float32(1 / (1 - float64(p)))
		}
		check("Dropout", get(o), func(i int) float32 {
			if p < 1 && DropoutUniform(seed, i) >= p {
				return x[i] * scale
			}
			return 0
		})
	}
	o, dg, du := be.Alloc(F32, n), be.Alloc(F32, n), be.Alloc(F32, n)
	be.SwiGLU(o, buf(x), buf(u), 1, n, n)
	check("SwiGLU", get(o), func(i int) float32 { return float32(x[i]/(1+expf(-x[i]))) * u[i] })
	be.SwiGLUBackward(dg, du, buf(d), buf(x), buf(u), 1, n, n)
	sig := func(i int) float32 { return 1 / (1 + expf(-x[i])) }
	check("SwiGLUBackward dgate", get(dg), func(i int) float32 { s := sig(i); return float32(float32(d[i]*u[i])*s) * (1 + float32(x[i]*(1-s))) })
	check("SwiGLUBackward dup", get(du), func(i int) float32 { return float32(d[i]*x[i]) * sig(i) })
	be.AXPBY(o, buf(x), buf(u), 0.75, -1.5, n)
	check("AXPBY", get(o), func(i int) float32 { return float32(0.75*x[i]) + float32(-1.5*u[i]) })
	be.AXPBY(o, buf(x), nil, 3, 0, n)
	check("AXPBY beta=0", get(o), func(i int) float32 { return 3 * x[i] })
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
}
