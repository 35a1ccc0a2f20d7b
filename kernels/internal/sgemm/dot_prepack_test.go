package sgemm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGemmDotPacked: a B packed once gives, over any column range that
// starts on a register tile, the bits GemmDotBF16 gives on the same
// columns of the unpacked B, for every dot kernel, both layouts of B and
// A, beta 0 and not, K within one KC block and across several.
func TestGemmDotPacked(t *testing.T) {
	if len(DotKernels) == 0 {
		t.Skip("no bf16 dot kernel on this machine or build")
	}
	for _, k := range DotKernels {
		r := rand.New(rand.NewPCG(33, uint64(k.NR)))
		for _, s := range [][3]int{{1, 5, 7}, {8, 48, 16}, {64, 200, 896}, {3, 97, 1100}, {17, 150, 2100}} {
			M, N, K := s[0], s[1], s[2]
			for tr := range 4 {
				tA, tB := tr&1 != 0, tr&2 != 0
				a := make([]float32, M*K)
				for i := range a {
					a[i] = r.Float32()*2 - 1
				}
				b := make([]uint16, K*N)
				for i := range b {
					b[i] = RoundBF16(r.Float32()*2 - 1)
				}
				lda, ldb := K, N
				if tA {
					lda = M
				}
				if tB {
					ldb = K
				}
				p := PackDotBF16(k, tB, b, ldb, K, N)
				for _, col0 := range []int{0, k.NR, 2 * k.NR} {
					if col0 >= N {
						continue
					}
					n := N - col0
					for _, beta := range []float32{0, 0.5} {
						want, got := make([]float32, M*n), make([]float32, M*n)
						for i := range want {
							want[i] = float32(i%7) - 3
							got[i] = want[i]
						}
						boff := col0 // columns of the stored K×N B
						if tB {
							boff = col0 * ldb // rows of the stored N×K B
						}
						GemmDotBF16(k, tA, tB, M, n, K, 1.5, a, lda, b[boff:], ldb, beta, want, n)
						if !GemmDotPacked(k, tA, M, n, K, 1.5, a, lda, p, col0, beta, got, n) {
							t.Fatalf("packed operand refused at col0 %d, N %d", col0, n)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("%s M %d N %d K %d tA %v tB %v col0 %d beta %v: packed B gives other bits", k.Name, M, N, K, tA, tB, col0, beta)
						}
					}
				}
			}
		}
	}
}
