//go:build openblas

package kernels

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
)

// In the openblas build, also time OpenBLAS's sgemm called directly
// (cblas_sgemm through gonum's netlib cgo binding, no backend in between),
// with OpenBLAS's own threading (one thread per CPU, its default), while
// the backend runs with OpenBLAS at one thread and splits work itself.
func init() {
	sgemmImpls = append(sgemmImpls, struct {
		name string
		mk   func(m, n, k int, transB bool) func() error
	}{"openblas-direct", directSGEMM})
}

func directSGEMM(m, n, k int, transB bool) func() error {
	a, b, c := randF32(m*k), randF32(k*n), make([]float32, m*n)
	tB, ldb := blas.NoTrans, n
	if transB {
		tB, ldb = blas.Trans, k
	}
	var impl netlib.Implementation
	return func() error {
		setBLASThreads(runtime.NumCPU())
		impl.Sgemm(blas.NoTrans, tB, m, n, k, 1, a, k, b, ldb, 0, c, n)
		setBLASThreads(1)
		return nil
	}
}

// BenchmarkSGEMMPaired alternates one backend call and one direct OpenBLAS
// call per iteration and times each side separately, so load from other
// processes hits both alike; it reports both rates and their ratio.
func BenchmarkSGEMMPaired(b *testing.B) {
	for _, s := range sgemmShapes {
		b.Run(fmt.Sprintf("shape=%dx%dx%d", s.m, s.n, s.k), func(b *testing.B) {
			back, dir := backendSGEMM(s.m, s.n, s.k, s.transB), directSGEMM(s.m, s.n, s.k, s.transB)
			if err := back(); err != nil {
				b.Fatal(err)
			}
			_ = dir()
			var tb, td time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := back(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				_ = dir()
				tb, td = tb+t1.Sub(t0), td+time.Since(t1)
			}
			flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
			b.ReportMetric(flops/tb.Seconds()/1e9, "backend-GFLOP/s")
			b.ReportMetric(flops/td.Seconds()/1e9, "direct-GFLOP/s")
			b.ReportMetric(td.Seconds()/tb.Seconds(), "backend/direct")
		})
	}
}
