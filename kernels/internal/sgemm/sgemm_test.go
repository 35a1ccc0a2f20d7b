package sgemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Tests: each assembly microkernel against KernelRef on every tile shape;
// Gemm against a float64 reference on small/odd shapes, every transpose
// combination, alpha/beta cases and padded leading dimensions; bit-exact
// determinism across row/column subsets and kernels; beta = 0 never reads
// C; short slices panic before any write.

const eps32 = 1.0 / (1 << 23)

func randVec(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	return x
}

// alphaBeta cycles through the cases a caller uses: plain, scaled,
// accumulate, negative and fractional.
var alphaBeta = [][2]float32{{1, 0}, {0.5, 0}, {1, 1}, {-1.25, 0.5}, {2, -1}}

func TestKernelsMatchRef(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range Kernels {
		mr, nr := k.MR, k.NR
		ldc := nr + 5
		for _, kc := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 255, 256} {
			a, b := randVec(r, kc*mr), randVec(r, kc*nr)
			for m := 1; m <= mr; m++ {
				for n := 1; n <= nr; n++ {
					ab := alphaBeta[(m+n+kc)%len(alphaBeta)]
					c0 := randVec(r, (mr+1)*ldc)
					if ab[1] == 0 {
						for i := range c0 { // beta = 0: C must not be read
							c0[i] = float32(math.NaN())
						}
					}
					got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
					k.tile(kc, a, b, got, ldc, ab[0], ab[1], m, n)
					KernelRef(kc, a, b, want, ldc, ab[0], ab[1], m, n, mr, nr)
					for i := 0; i < (mr+1)*ldc; i++ {
						row, col := i/ldc, i%ldc
						if row >= m || col >= n { // outside the tile: untouched
							if math.Float32bits(got[i]) != math.Float32bits(c0[i]) {
								t.Fatalf("%s kc=%d m=%d n=%d: wrote outside the tile at (%d,%d)", k.Name, kc, m, n, row, col)
							}
							continue
						}
						s := 0.0
						for p := 0; p < kc; p++ {
							s += math.Abs(float64(a[p*mr+row]) * float64(b[p*nr+col]))
						}
						tol := 2 * eps32 * float64(kc+2) * (math.Abs(float64(ab[0]))*s + math.Abs(float64(ab[1])))
						if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
							t.Fatalf("%s kc=%d m=%d n=%d alpha,beta=%v: c[%d,%d] = %v, reference %v", k.Name, kc, m, n, ab, row, col, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// gemmCase is one Gemm call; pad adds to the minimal leading dimensions.
type gemmCase struct {
	M, N, K     int
	tA, tB      bool
	alpha, beta float32
	pad         int
}

// check runs c through kernel k and compares with a float64 reference.
func (c gemmCase) check(t *testing.T, k *Kernel, r *rand.Rand) {
	t.Helper()
	rowsA, colsA := c.M, c.K
	if c.tA {
		rowsA, colsA = c.K, c.M
	}
	rowsB, colsB := c.K, c.N
	if c.tB {
		rowsB, colsB = c.N, c.K
	}
	lda, ldb, ldc := colsA+c.pad, colsB+c.pad, c.N+c.pad
	a, b := randVec(r, (rowsA-1)*lda+colsA), randVec(r, (rowsB-1)*ldb+colsB)
	cc := randVec(r, (c.M-1)*ldc+c.N)
	if c.beta == 0 {
		for i := range cc {
			cc[i] = float32(math.NaN())
		}
	}
	// op(A) as rows of K and op(B) as columns of K, in float64.
	opA, opB := make([]float64, c.M*c.K), make([]float64, c.N*c.K)
	for i := 0; i < c.M; i++ {
		for p := 0; p < c.K; p++ {
			if c.tA {
				opA[i*c.K+p] = float64(a[p*lda+i])
			} else {
				opA[i*c.K+p] = float64(a[i*lda+p])
			}
		}
	}
	for j := 0; j < c.N; j++ {
		for p := 0; p < c.K; p++ {
			if c.tB {
				opB[j*c.K+p] = float64(b[j*ldb+p])
			} else {
				opB[j*c.K+p] = float64(b[p*ldb+j])
			}
		}
	}
	want, tol := make([]float64, len(cc)), make([]float64, len(cc))
	for i := 0; i < c.M; i++ {
		ra := opA[i*c.K : (i+1)*c.K]
		for j := 0; j < c.N; j++ {
			rb := opB[j*c.K : (j+1)*c.K]
			s, sa := 0.0, 0.0
			for p, x := range ra {
				s += x * rb[p]
				sa += math.Abs(x * rb[p])
			}
			v, va := float64(c.alpha)*s, math.Abs(float64(c.alpha))*sa
			if c.beta != 0 {
				v += float64(c.beta) * float64(cc[i*ldc+j])
				va += math.Abs(float64(c.beta) * float64(cc[i*ldc+j]))
			}
			want[i*ldc+j], tol[i*ldc+j] = v, 2*eps32*float64(c.K+2)*va+1e-30
		}
	}
	c0 := append([]float32(nil), cc...)
	Gemm(k, c.tA, c.tB, c.M, c.N, c.K, c.alpha, a, lda, b, ldb, c.beta, cc, ldc)
	for i := range cc {
		if i%ldc >= c.N {
			if math.Float32bits(cc[i]) != math.Float32bits(c0[i]) {
				t.Fatalf("%s %+v: wrote the padding at %d", k.Name, c, i)
			}
			continue
		}
		if d := math.Abs(float64(cc[i]) - want[i]); !(d <= tol[i]) {
			t.Fatalf("%s %+v: c[%d,%d] = %v, want %v (tolerance %.2g)", k.Name, c, i/ldc, i%ldc, cc[i], want[i], tol[i])
		}
	}
}

// TestGemmSmallShapes: every M, N, K in 1..33 (the best kernel, all four
// transpose combinations; the other kernels on a third of them; -short:
// K in {1, 8, 9, 16, 17, 24, 25, 32, 33}).
func TestGemmSmallShapes(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	r := rand.New(rand.NewPCG(5, 6))
	var ks []int
	for K := 1; K <= 33; K++ {
		if !testing.Short() || K == 1 || K%8 <= 1 {
			ks = append(ks, K)
		}
	}
	n := 0
	for M := 1; M <= 33; M++ {
		for N := 1; N <= 33; N++ {
			for _, K := range ks {
				for tr := 0; tr < 4; tr++ {
					n++
					ab := alphaBeta[n%len(alphaBeta)]
					c := gemmCase{M, N, K, tr&1 != 0, tr&2 != 0, ab[0], ab[1], n % 3 * 2}
					c.check(t, Kernels[0], r)
					if n%3 == 0 {
						for _, k := range Kernels[1:] {
							c.check(t, k, r)
						}
					}
				}
			}
		}
	}
}

// TestGemmLargeShapes: each of 63, 64, 65, 127, 200, 513 as M, N and K
// with the others from {1, 17, 33, 64}, and mixed large triples, on every
// kernel, every transpose combination.
func TestGemmLargeShapes(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	r := rand.New(rand.NewPCG(7, 8))
	var shapes [][3]int
	for _, big := range []int{63, 64, 65, 127, 200, 513} {
		for _, x := range []int{1, 17, 33, 64} {
			for _, y := range []int{1, 17, 33, 64} {
				shapes = append(shapes, [3]int{big, x, y}, [3]int{x, big, y}, [3]int{x, y, big})
			}
		}
	}
	shapes = append(shapes, [3]int{513, 200, 127}, [3]int{200, 513, 65}, [3]int{65, 127, 513}, [3]int{127, 65, 200}, [3]int{513, 513, 63})
	if testing.Short() {
		shapes = shapes[len(shapes)-5:]
	}
	n := 0
	for _, k := range Kernels {
		for _, s := range shapes {
			for tr := 0; tr < 4; tr++ {
				n++
				ab := alphaBeta[n%len(alphaBeta)]
				gemmCase{s[0], s[1], s[2], tr&1 != 0, tr&2 != 0, ab[0], ab[1], n % 2 * 3}.check(t, k, r)
			}
		}
	}
}

// TestGemmDeterminism: rows and columns of C are bit-identical whether
// computed in one call or as sub-products at other offsets, and across
// kernels (same FMA sequence per element).
func TestGemmDeterminism(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	r := rand.New(rand.NewPCG(9, 10))
	M, N, K := 45, 131, 700 // K spans 3 KC blocks
	for tr := 0; tr < 4; tr++ {
		tA, tB := tr&1 != 0, tr&2 != 0
		a, b, c0 := randVec(r, M*K), randVec(r, K*N), randVec(r, M*N)
		lda, ldb := K, N
		if tA {
			lda = M
		}
		if tB {
			ldb = K
		}
		full := append([]float32(nil), c0...)
		Gemm(Kernels[0], tA, tB, M, N, K, 0.75, a, lda, b, ldb, 0.5, full, N)
		for _, k := range Kernels {
			// Rows [i0, i0+m) and columns [j0, j0+n) as their own product.
			for _, sub := range [][4]int{{0, M, 0, N}, {3, 1, 0, N}, {7, 13, 5, 50}, {44, 1, 130, 1}, {1, 40, 17, 100}} {
				i0, m, j0, n := sub[0], sub[1], sub[2], sub[3]
				aoff, boff := i0*lda, j0
				if tA {
					aoff = i0
				}
				if tB {
					boff = j0 * ldb
				}
				got := append([]float32(nil), c0...)
				Gemm(k, tA, tB, m, n, K, 0.75, a[aoff:], lda, b[boff:], ldb, 0.5, got[i0*N+j0:], N)
				for i := i0; i < i0+m; i++ {
					for j := j0; j < j0+n; j++ {
						if math.Float32bits(got[i*N+j]) != math.Float32bits(full[i*N+j]) {
							t.Fatalf("%s tA=%v tB=%v sub %v: c[%d,%d] = %v, full product %v", k.Name, tA, tB, sub, i, j, got[i*N+j], full[i*N+j])
						}
					}
				}
			}
		}
	}
}

// TestGemmSpecial: K = 0 and alpha = 0 give beta·C (0 when beta = 0, even
// over NaN); a C slice too short for M×N panics before any write.
func TestGemmSpecial(t *testing.T) {
	if len(Kernels) == 0 {
		t.Skip("no assembly microkernels on this machine/build")
	}
	k := Kernels[0]
	checkSpecial(t, "Gemm", func(M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		Gemm(k, false, false, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	})
}

// checkSpecial is TestGemmSpecial's checks on gemm (a row-major NN GEMM):
// K = 0 and alpha = 0 give beta·C (0 for beta = 0 whatever C holds), and a
// short C panics before any write.
func checkSpecial(t *testing.T, name string, gemm func(M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)) {
	t.Helper()
	a, b := []float32{1, 2, 3, 4, 5, 6}, []float32{1, 2, 3, 4, 5, 6}
	for _, c := range []struct {
		K           int
		alpha, beta float32
	}{{0, 1, 0}, {0, 1, 2}, {3, 0, 0}, {3, 0, -1}} {
		cc := []float32{1, float32(math.NaN()), 3, 4}
		gemm(2, 2, c.K, c.alpha, a, max(c.K, 1), b, 2, c.beta, cc, 2)
		for i, v := range cc {
			want := float32(0)
			if c.beta != 0 {
				want = c.beta * []float32{1, float32(math.NaN()), 3, 4}[i]
			}
			if !(v == want || (v != v && want != want)) {
				t.Errorf("%s K=%d alpha=%v beta=%v: c[%d] = %v, want %v", name, c.K, c.alpha, c.beta, i, v, want)
			}
		}
	}
	short := make([]float32, 2*3-1)
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("%s with a short C did not panic", name)
			}
		}()
		gemm(2, 3, 2, 1, a, 2, b, 3, 0, short, 3)
	}()
	for i, v := range short {
		if v != 0 {
			t.Errorf("%s: short C written at %d", name, i)
		}
	}
}

// TestGather: the packing transpose (assembly 8×8 blocks plus scalar
// remainders) against the plain loop.
func TestGather(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for rows := 1; rows <= 20; rows++ {
		for kc := 1; kc <= 20; kc++ {
			lds, ldd := kc+rows%3, rows+kc%4
			src := randVec(r, (rows-1)*lds+kc)
			got, want := make([]float32, kc*ldd), make([]float32, kc*ldd)
			gather(got, ldd, src, lds, rows, kc)
			for i := 0; i < rows; i++ {
				for p := 0; p < kc; p++ {
					want[p*ldd+i] = src[i*lds+p]
				}
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("rows=%d kc=%d: d[%d] = %v, want %v", rows, kc, i, got[i], want[i])
				}
			}
		}
	}
}
