package kernels

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// TestMatMulNarrowBitIdentical: products narrower than the kernel's tile
// (N < NR, the LoRA shapes), which MatMul runs transposed (gemmT), give
// the bits of the direct product, for every transpose combination,
// Alpha/Beta, f32 and bf16 products, small and split-sized.
func TestMatMulNarrowBitIdentical(t *testing.T) {
	c := newCPU(cpuDefault)
	for _, dot := range []bool{false, true} {
		if dot && c.dot == nil {
			t.Log("no bf16 dot kernel on this machine")
			continue
		}
		for _, s := range [][3]int{{200, 5, 33}, {1024, 32, 896}, {700, 47, 130}} {
			M, N, K := s[0], s[1], s[2]
			if !c.narrow(dot, false, M, N) {
				t.Fatalf("%v: not a narrow product", s)
			}
			for tr := 0; tr < 4; tr++ {
				tA, tB := blas.NoTrans, blas.NoTrans
				lda, ldb := K, N
				if tr&1 != 0 {
					tA, lda = blas.Trans, M
				}
				if tr&2 != 0 {
					tB, ldb = blas.Trans, K
				}
				for _, ab := range [][2]float32{{1, 0}, {-0.75, 1.5}} {
					a, b, c0 := randF32(M*K), randF32(K*N), randF32(M*N)
					for i := range b {
						b[i] *= 1 + float32(i%7)/3 // not the same values as a
					}
					want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
					c.gemm(dot, tA, tB, M, N, K, ab[0], a, lda, bmat{f: b}, ldb, ab[1], want, N)
					c.gemmT(dot, tA, tB, M, N, K, ab[0], a, lda, b, ldb, ab[1], got)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s dot=%v %v tA=%v tB=%v alpha,beta=%v: c[%d] = %v, direct %v", fmt.Sprint(s), dot, s, tA, tB, ab, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
