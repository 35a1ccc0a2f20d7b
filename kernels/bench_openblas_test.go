//go:build openblas

package kernels

import (
	"runtime"

	"gonum.org/v1/netlib/blas/netlib"
)

// In the openblas build, also time the openblas backend and OpenBLAS's
// sgemm called directly (cblas_sgemm through gonum's netlib cgo binding,
// no backend in between) with OpenBLAS's own threading (one thread per CPU,
// its default), while the backend runs OpenBLAS at one thread and splits
// work itself.
func init() {
	sgemmImpls = append(sgemmImpls,
		sgemmImpl{"openblas", func(m, n, k int, tA, tB bool) func() error {
			return backendSGEMM(NewCPU(), m, n, k, tA, tB)
		}},
		sgemmImpl{"openblas-direct", directSGEMM})
}

func directSGEMM(m, n, k int, tA, tB bool) func() error {
	a, b, c := randF32(m*k), randF32(k*n), make([]float32, m*n)
	ta, lda, tb, ldb := lds(m, n, k, tA, tB)
	var impl netlib.Implementation
	return func() error {
		setBLASThreads(runtime.NumCPU())
		impl.Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		setBLASThreads(1)
		return nil
	}
}
