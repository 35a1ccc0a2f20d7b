package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/argrl/argrl/kernels/internal/sgemm"
)

// goBLAS is the cgo-free sgemm: the packed SGEMM of kernels/internal/sgemm
// with microkernel k (one goroutine per call), or gonum's pure-Go sgemm
// (which runs its own goroutines) when k is nil.
type goBLAS struct{ k *sgemm.Kernel }

// newGoBLAS uses this machine's best microkernel, if it has one.
func newGoBLAS() goBLAS { return goBLAS{sgemm.Best()} }

// name is "gonum" or "asm-" and the kernel's name.
func (g goBLAS) name() string {
	if g.k == nil {
		return "gonum"
	}
	return "asm-" + g.k.Name
}

// align is the register tile (MR, NR) that split blocks of C should be
// multiples of (16, 16 for gonum, which the backend does not split).
func (g goBLAS) align() (int, int) {
	if g.k == nil {
		return 16, 16
	}
	return g.k.MR, g.k.NR
}

// Sgemm is blas.Float32.Sgemm (row-major). Bad arguments panic as in gonum;
// the backend checks them first.
func (g goBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if g.k == nil {
		gonum.Implementation{}.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	sgemm.Gemm(g.k, tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
