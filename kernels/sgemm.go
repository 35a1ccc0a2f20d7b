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

// config is the backend's matmul with g: the assembly SGEMM packs a BF16
// B itself and runs on one goroutine, so the backend splits large products
// in blocks of whole register tiles (MR rows, NR columns); gonum's sgemm
// parallelizes itself, and needs a BF16 B widened first.
func (g goBLAS) config() cpuBLAS {
	if g.k == nil {
		return cpuBLAS{sgemm: g.Sgemm, alignM: 16, alignN: 16, gonum: true}
	}
	return cpuBLAS{sgemm: g.Sgemm, bgemm: g.bf16Gemm(), split: true, alignM: g.k.MR, alignN: g.k.NR}
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

// bf16Gemm is the SGEMM that packs a bf16 B operand itself: Sgemm with b
// as bfloat16 bits, bit-identical to Sgemm on the widened B (g.k != nil).
func (g goBLAS) bf16Gemm() bf16GemmFunc {
	return func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
		sgemm.GemmBF16(g.k, tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}
