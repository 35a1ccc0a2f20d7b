package vec

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkVecPaired: before/after of each op, single goroutine — the
// scalar reference loop (the code the backend ran before) and the
// exported function (assembly where the CPU has it) alternate call by call
// on the same data; reported as ns per element of each and their ratio.
//
//	go test ./kernels/internal/vec/ -run '^$' -bench VecPaired
func BenchmarkVecPaired(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(1, 1))
	x, u, d := randIn(r, n, 8), randIn(r, n, 2), randIn(r, n, 2)
	o1, o2, o3 := make([]float32, n), make([]float32, n), make([]float32, n)
	ops := []struct {
		name     string
		ref, fst func()
	}{
		{"exp", func() {
			for i, v := range x {
				o1[i] = Expf(v)
			}
		}, func() { copy(o1, x); Exp(o1) }},
		{"swiglu", func() {
			for i, v := range x {
				o1[i] = float32(v/(1+Expf(-v))) * u[i]
			}
		}, func() { SwiGLU(o1, x, u) }},
		{"swiglu-bwd", func() {
			for i, v := range x {
				s := 1 / (1 + Expf(-v))
				o2[i] = float32(float32(d[i]*u[i])*s) * (1 + float32(v*(1-s)))
				o3[i] = float32(d[i]*v) * s
			}
		}, func() { SwiGLUBackward(o2, o3, d, x, u) }},
		{"axpby", func() {
			for i, v := range x {
				o1[i] = float32(0.5*v) + float32(-2*u[i])
			}
		}, func() { AXPBY(o1, x, u, 0.5, -2) }},
		{"dropout", func() {
			for i, v := range x {
				if dropoutU(42, i) >= 0.1 {
					o1[i] = v * 1.1
				} else {
					o1[i] = 0
				}
			}
		}, func() { Dropout(o1, x, 0, 0.1, 1.1, 42) }},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			var tr, tf time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				op.ref()
				t1 := time.Now()
				op.fst()
				tr, tf = tr+t1.Sub(t0), tf+time.Since(t1)
			}
			el := float64(n) * float64(b.N)
			b.ReportMetric(float64(tr.Nanoseconds())/el, "ref-ns/elem")
			b.ReportMetric(float64(tf.Nanoseconds())/el, "vec-ns/elem")
			b.ReportMetric(tr.Seconds()/tf.Seconds(), "speedup")
		})
	}
}
