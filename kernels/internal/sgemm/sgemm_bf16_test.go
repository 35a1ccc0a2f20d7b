package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Tests of the bf16 B operand: the widening packers (assembly and scalar)
// against plain loops, and GemmBF16 bit-identical to Gemm on the widened
// B over edge tiles, K around and past the KC block, both transposes,
// alpha/beta cases and padded leading dimensions.

// randBF16 returns n random bf16 values (including negative, tiny and
// large magnitudes) and their exact float32 widening.
func randBF16(r *rand.Rand, n int) ([]uint16, []float32) {
	h, f := make([]uint16, n), make([]float32, n)
	for i := range h {
		x := float32((r.Float64()*2 - 1) * math.Pow(2, float64(r.IntN(16)-8)))
		h[i] = uint16(math.Float32bits(x) >> 16)
		f[i] = math.Float32frombits(uint32(h[i]) << 16)
	}
	return h, f
}

// withScalarBF16 runs fn with the assembly bf16 packers switched off.
func withScalarBF16(fn func()) {
	t8, w8 := transpose8BF16, widen8
	transpose8BF16, widen8 = nil, nil
	defer func() { transpose8BF16, widen8 = t8, w8 }()
	fn()
}

func TestPackBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	check := func(impl string) {
		for rows := 1; rows <= 20; rows++ {
			for kc := 1; kc <= 27; kc++ {
				lds, ldd := kc+rows%3, rows+kc%4
				src, wide := randBF16(r, (rows-1)*lds+kc)
				got, want := make([]float32, kc*ldd), make([]float32, kc*ldd)
				gatherBF16(got, ldd, src, lds, rows, kc)
				for i := 0; i < rows; i++ {
					for p := 0; p < kc; p++ {
						want[p*ldd+i] = wide[i*lds+p]
					}
				}
				sameBits(t, fmt.Sprintf("%s gatherBF16 rows=%d kc=%d", impl, rows, kc), got, want)
				// widenRows: kc rows of `rows` columns.
				lds2, ldd2 := rows+kc%3, rows+kc%5
				got2, want2 := make([]float32, kc*ldd2), make([]float32, kc*ldd2)
				src2, wide2 := randBF16(r, (kc-1)*lds2+rows)
				widenRows(got2, ldd2, src2, lds2, kc, rows)
				for p := 0; p < kc; p++ {
					for j := 0; j < rows; j++ {
						want2[p*ldd2+j] = wide2[p*lds2+j]
					}
				}
				sameBits(t, fmt.Sprintf("%s widenRows rows=%d cols=%d", impl, kc, rows), got2, want2)
			}
		}
	}
	check("default")
	withScalarBF16(func() { check("scalar") })
	if transpose8BF16 == nil || widen8 == nil {
		t.Log("no assembly bf16 packers on this machine/build: scalar loops only")
	}
}

// sameBits fails unless got and want hold the same float32 bits.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: d[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// bf16Case runs one product through Gemm on the widened B and GemmBF16 and
// requires equal bits everywhere in C (padding included).
func bf16Case(t *testing.T, k *Kernel, r *rand.Rand, M, N, K int, tA, tB bool, alpha, beta float32, pad int) {
	t.Helper()
	rowsA, colsA := M, K
	if tA {
		rowsA, colsA = K, M
	}
	rowsB, colsB := K, N
	if tB {
		rowsB, colsB = N, K
	}
	lda, ldb, ldc := colsA+pad, colsB+pad, N+pad
	a := randVec(r, (rowsA-1)*lda+colsA)
	bh, bf := randBF16(r, (rowsB-1)*ldb+colsB)
	c0 := randVec(r, (M-1)*ldc+N)
	want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
	Gemm(k, tA, tB, M, N, K, alpha, a, lda, bf, ldb, beta, want, ldc)
	GemmBF16(k, tA, tB, M, N, K, alpha, a, lda, bh, ldb, beta, got, ldc)
	sameBits(t, fmt.Sprintf("%s M=%d N=%d K=%d tA=%v tB=%v alpha=%v beta=%v pad=%d: GemmBF16 against Gemm on the widened B",
		k.Name, M, N, K, tA, tB, alpha, beta, pad), got, want)
}

// TestGemmBF16BitIdentical: GemmBF16 equals Gemm on the widened B, bit for
// bit, on every kernel, with the assembly packers and with the scalar ones.
func TestGemmBF16BitIdentical(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	r := rand.New(rand.NewPCG(15, 16))
	mn := []int{1, 5, 7, 8, 9, 16, 17, 47, 48, 49, 97}
	ks := []int{1, 7, 8, 9, 17, 255, 256, 257, 600}
	if testing.Short() {
		mn, ks = []int{1, 7, 16, 49}, []int{1, 9, 257}
	}
	for _, k := range Kernels {
		for _, impl := range []string{"asm", "scalar"} {
			run := func() {
				n := 0
				for _, M := range mn {
					for _, N := range mn {
						for _, K := range ks {
							n++
							ab := alphaBeta[n%len(alphaBeta)]
							tr := n % 4
							bf16Case(t, k, r, M, N, K, tr&1 != 0, tr&2 != 0, ab[0], ab[1], n%3)
						}
					}
				}
				// Past the MC and NC blocks, every transpose.
				for tr := 0; tr < 4; tr++ {
					bf16Case(t, k, r, 200, 3100, 70, tr&1 != 0, tr&2 != 0, 1, 0, 0)
					bf16Case(t, k, r, 385, 50, 513, tr&1 != 0, tr&2 != 0, -0.5, 1, 1)
				}
			}
			t.Run(fmt.Sprintf("%s/%s", k.Name, impl), func(t *testing.T) {
				if impl == "scalar" {
					withScalarBF16(run)
				} else {
					run()
				}
			})
		}
	}
}

// TestGemmBF16Short: a bf16 B too short for its shape panics in the
// packing (a Go bounds check), here before C is written.
func TestGemmBF16Short(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	for _, tB := range []bool{false, true} {
		a := make([]float32, 4*16)
		b := make([]uint16, 16*9-1) // needs 16×9 (or 9×16)
		c := make([]float32, 4*9)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("tB=%v: GemmBF16 with a short B did not panic", tB)
				}
			}()
			ldb := 9
			if tB {
				ldb = 16
			}
			GemmBF16(Kernels[0], false, tB, 4, 9, 16, 1, a, 16, b, ldb, 0, c, 9)
		}()
		for i, v := range c {
			if v != 0 {
				t.Fatalf("tB=%v: C written at %d before the panic", tB, i)
			}
		}
	}
}
