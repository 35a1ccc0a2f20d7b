package sgemm

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// Tests of the bf16 dot GEMM: fmaf and RoundBF16 against exact arithmetic;
// the assembly microkernel bit for bit against KernelDotRef on every tile
// shape; the packers (assembly and scalar) against plain loops; GemmDot
// with the assembly kernel bit for bit against GemmDot with the reference
// kernel, which is itself checked against a float64 product of the
// rounded operands, over edge tiles, K past KC, every transpose, f32 and
// bf16 B, alpha/beta and padded leading dimensions; rows independent of
// the rest of the product.

// refDot is a DotKernel running KernelDotRef: the driver on any machine.
var refDot = &DotKernel{Name: "ref", MR: 8, NR: 48, fn: func(kc int, a, b *uint32, c *float32, ldc int, alpha, beta float32, m, n int) {
	KernelDotRef(kc, unsafe.Slice(a, kc*8), unsafe.Slice(b, kc*48), unsafe.Slice(c, (m-1)*ldc+n), ldc, alpha, beta, m, n, 8, 48)
}}

// dotKernels are the kernels to check against refDot.
func dotKernels(t *testing.T) []*DotKernel {
	if len(DotKernels) == 0 {
		t.Log("no bf16 dot kernels on this machine/build: the reference driver only")
	}
	return DotKernels
}

// randPairs returns n pairs of random bf16 values of mixed magnitudes, a
// few of them zero, negative zero or subnormal.
func randPairs(r *rand.Rand, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		var h [2]uint16
		for j := range h {
			x := float32((r.Float64()*2 - 1) * math.Pow(2, float64(r.IntN(24)-12)))
			h[j] = RoundBF16(x)
			switch r.IntN(64) {
			case 0:
				h[j] = 0
			case 1:
				h[j] = 0x8000
			case 2:
				h[j] = uint16(r.IntN(0x7f)+1) | uint16(r.IntN(2))<<15 // subnormal
			}
		}
		out[i] = pair(h[0], h[1])
	}
	return out
}

func TestFmaf(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	exact := func(x, y, z float32) float32 {
		p := new(big.Float).SetPrec(400).Mul(big.NewFloat(float64(x)).SetPrec(400), big.NewFloat(float64(y)).SetPrec(400))
		p.Add(p, big.NewFloat(float64(z)).SetPrec(400))
		f, _ := p.Float32()
		return f
	}
	for i := 0; i < 200000; i++ {
		x := math.Float32frombits(r.Uint32())
		y := math.Float32frombits(r.Uint32())
		z := math.Float32frombits(r.Uint32())
		if i%2 == 0 { // comparable magnitudes, where rounding ties happen
			x = float32(r.NormFloat64())
			y = float32(r.NormFloat64())
			z = float32(r.NormFloat64()) * 0x1p-20
		}
		if math.IsNaN(float64(x)) || math.IsNaN(float64(y)) || math.IsNaN(float64(z)) ||
			math.IsInf(float64(x*y), 0) || math.IsInf(float64(z), 0) {
			continue
		}
		if got, want := fmaf(x, y, z), exact(x, y, z); math.Float32bits(got) != math.Float32bits(want) && !(got == 0 && want == 0) {
			t.Fatalf("fmaf(%g, %g, %g) = %g, exact %g", x, y, z, got, want)
		}
	}
}

func TestRoundBF16(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, {0x3f808000, 0x3f80}, {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81}, // ties to even
		{0x007fffff, 0x0000}, {0x807fffff, 0x8000}, {0x00800000, 0x0080}, // subnormals flushed
		{0x7f800000, 0x7f80}, {0x7fc00001, 0x7fc0}, {0x7f800001, 0x7fc0}, // Inf, NaNs quiet
		{0x7f7fffff, 0x7f80}, // rounds up to Inf
	} {
		if got := RoundBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("RoundBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestDotKernelMatchesRef(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, k := range dotKernels(t) {
		mr, nr := k.MR, k.NR
		ldc := nr + 5
		for _, kc := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 255, 256} {
			a, b := randPairs(r, kc*mr), randPairs(r, kc*nr)
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
					k.fn(kc, &a[0], &b[0], &got[0], ldc, ab[0], ab[1], m, n)
					KernelDotRef(kc, a, b, want, ldc, ab[0], ab[1], m, n, mr, nr)
					sameBits(t, fmt.Sprintf("%s kc=%d m=%d n=%d alpha,beta=%v", k.Name, kc, m, n, ab), got, want)
				}
			}
		}
	}
}

// withScalarDot runs fn with the assembly dot packers switched off.
func withScalarDot(fn func()) {
	a, b, c, d, e := cvtTranspose8, pairTranspose8, interleave16BF16, interleave16F32, interleave8F32
	cvtTranspose8, pairTranspose8, interleave16BF16, interleave16F32, interleave8F32 = nil, nil, nil, nil, nil
	defer func() {
		cvtTranspose8, pairTranspose8, interleave16BF16, interleave16F32, interleave8F32 = a, b, c, d, e
	}()
	fn()
}

func TestDotPackers(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	samePairs := func(what string, got, want []uint32) {
		t.Helper()
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: d[%d] = %#08x, want %#08x", what, i, got[i], want[i])
			}
		}
	}
	check := func(impl string) {
		for rows := 1; rows <= 20; rows++ {
			for _, kc := range []int{1, 2, 3, 15, 16, 17, 31, 32, 33, 48} {
				kp := (kc + 1) / 2
				// Transposed: rows of kc (k along a row), lds ≥ kc, odd and even.
				for _, lds := range []int{kc, kc + 1, kc + 2} {
					ldd := rows + kc%4
					src := randVec(r, (rows-1)*lds+kc)
					h, _ := randBF16(r, (rows-1)*lds+kc)
					got, want := make([]uint32, kp*ldd), make([]uint32, kp*ldd)
					got2, want2 := make([]uint32, kp*ldd), make([]uint32, kp*ldd)
					cvtGather(got, ldd, src, lds, rows, kc)
					pairGatherBF16(got2, ldd, h, lds, rows, kc)
					for i := 0; i < rows; i++ {
						for k := 0; k < kc; k++ {
							want[k/2*ldd+i] |= uint32(RoundBF16(src[i*lds+k])) << (16 * (k % 2))
							want2[k/2*ldd+i] |= uint32(h[i*lds+k]) << (16 * (k % 2))
						}
					}
					samePairs(fmt.Sprintf("%s cvtGather rows=%d kc=%d lds=%d", impl, rows, kc, lds), got, want)
					samePairs(fmt.Sprintf("%s pairGatherBF16 rows=%d kc=%d lds=%d", impl, rows, kc, lds), got2, want2)
				}
				// Interleaved: kc rows (k) of `rows` columns.
				cols, lds, ldd := rows+3*(kc%2), rows+3+kc%3, rows+3+kc%5
				src := randVec(r, (kc-1)*lds+cols)
				h, _ := randBF16(r, (kc-1)*lds+cols)
				got, want := make([]uint32, kp*ldd), make([]uint32, kp*ldd)
				got2, want2 := make([]uint32, kp*ldd), make([]uint32, kp*ldd)
				interleaveF32(got, ldd, src, lds, kc, cols)
				interleaveBF16(got2, ldd, h, lds, kc, cols)
				for k := 0; k < kc; k++ {
					for j := 0; j < cols; j++ {
						want[k/2*ldd+j] |= uint32(RoundBF16(src[k*lds+j])) << (16 * (k % 2))
						want2[k/2*ldd+j] |= uint32(h[k*lds+j]) << (16 * (k % 2))
					}
				}
				samePairs(fmt.Sprintf("%s interleaveF32 kc=%d cols=%d", impl, kc, cols), got, want)
				samePairs(fmt.Sprintf("%s interleaveBF16 kc=%d cols=%d", impl, kc, cols), got2, want2)
			}
		}
	}
	check("default")
	withScalarDot(func() { check("scalar") })
}

// dotCase is one GemmDot call (gemmCase) with a bf16 or float32 B.
type dotCase struct {
	gemmCase
	bf16 bool
}

// operands makes random operands of c with leading dimensions.
func (c dotCase) operands(r *rand.Rand) (a []float32, lda int, b []float32, h []uint16, ldb int, cc []float32, ldc int) {
	rowsA, colsA := c.M, c.K
	if c.tA {
		rowsA, colsA = c.K, c.M
	}
	rowsB, colsB := c.K, c.N
	if c.tB {
		rowsB, colsB = c.N, c.K
	}
	lda, ldb, ldc = colsA+c.pad, colsB+c.pad, c.N+c.pad
	a = randVec(r, (rowsA-1)*lda+colsA)
	if c.bf16 {
		h, b = randBF16(r, (rowsB-1)*ldb+colsB)
	} else {
		b = randVec(r, (rowsB-1)*ldb+colsB)
	}
	cc = randVec(r, (c.M-1)*ldc+c.N)
	if c.beta == 0 {
		for i := range cc {
			cc[i] = float32(math.NaN())
		}
	}
	return
}

// run is GemmDot or GemmDotBF16 of c with kernel k on a copy of cc.
func (c dotCase) run(k *DotKernel, a []float32, lda int, b []float32, h []uint16, ldb int, cc []float32, ldc int) []float32 {
	out := append([]float32(nil), cc...)
	if c.bf16 {
		GemmDotBF16(k, c.tA, c.tB, c.M, c.N, c.K, c.alpha, a, lda, h, ldb, c.beta, out, ldc)
	} else {
		GemmDot(k, c.tA, c.tB, c.M, c.N, c.K, c.alpha, a, lda, b, ldb, c.beta, out, ldc)
	}
	return out
}

// check compares the reference driver with a float64 product of the
// rounded operands (when near), then every kernel with the reference
// driver, bit for bit.
func (c dotCase) check(t *testing.T, r *rand.Rand, near bool) {
	t.Helper()
	a, lda, b, h, ldb, cc, ldc := c.operands(r)
	ref := c.run(refDot, a, lda, b, h, ldb, cc, ldc)
	if near {
		at := func(i, k int) float64 {
			if c.tA {
				return float64(widen(RoundBF16(a[k*lda+i])))
			}
			return float64(widen(RoundBF16(a[i*lda+k])))
		}
		bt := func(k, j int) float64 {
			idx := k*ldb + j
			if c.tB {
				idx = j*ldb + k
			}
			if c.bf16 {
				return float64(widen(h[idx]))
			}
			return float64(widen(RoundBF16(b[idx])))
		}
		for i := 0; i < c.M; i++ {
			for j := 0; j < c.N; j++ {
				s, sa := 0.0, 0.0
				for k := 0; k < c.K; k++ {
					s += at(i, k) * bt(k, j)
					sa += math.Abs(at(i, k) * bt(k, j))
				}
				v, va := float64(c.alpha)*s, math.Abs(float64(c.alpha))*sa
				if c.beta != 0 {
					v += float64(c.beta) * float64(cc[i*ldc+j])
					va += math.Abs(float64(c.beta) * float64(cc[i*ldc+j]))
				}
				if d := math.Abs(float64(ref[i*ldc+j]) - v); !(d <= 2*eps32*float64(c.K+2)*va+1e-30) {
					t.Fatalf("reference %+v: c[%d,%d] = %v, want %v", c, i, j, ref[i*ldc+j], v)
				}
			}
		}
	}
	for i := range ref {
		if i%ldc >= c.N && math.Float32bits(ref[i]) != math.Float32bits(cc[i]) {
			t.Fatalf("reference %+v: wrote the padding at %d", c, i)
		}
	}
	for _, k := range DotKernels {
		sameBits(t, fmt.Sprintf("%s %+v", k.Name, c), c.run(k, a, lda, b, h, ldb, cc, ldc), ref)
	}
}

// TestGemmDotShapes: every M, N in 1..33 with K in a spread of 1..40 (odd
// K included), then shapes around the tile and block sizes (K past 512),
// every transpose combination, f32 and bf16 B.
func TestGemmDotShapes(t *testing.T) {
	dotKernels(t)
	r := rand.New(rand.NewPCG(27, 28))
	n := 0
	for M := 1; M <= 33; M += 1 + M%3 {
		for N := 1; N <= 33; N += 1 + N%2 {
			for _, K := range []int{1, 2, 7, 16, 17, 33, 40} {
				n++
				ab := alphaBeta[n%len(alphaBeta)]
				c := dotCase{gemmCase{M, N, K, n&1 != 0, n&2 != 0, ab[0], ab[1], n % 3 * 2}, n&4 != 0}
				c.check(t, r, n%4 == 0)
			}
		}
	}
	shapes := [][3]int{{8, 48, 16}, {9, 49, 17}, {64, 96, 512}, {65, 97, 513}, {200, 150, 1040}, {17, 3100, 40}, {3, 5, 1100}, {197, 47, 31}}
	if testing.Short() {
		shapes = shapes[:4]
	}
	for _, s := range shapes {
		for tr := 0; tr < 8; tr++ {
			n++
			ab := alphaBeta[n%len(alphaBeta)]
			dotCase{gemmCase{s[0], s[1], s[2], tr&1 != 0, tr&2 != 0, ab[0], ab[1], n % 2 * 3}, tr&4 != 0}.check(t, r, s[0]*s[1]*s[2] < 1<<21)
		}
	}
}

// TestGemmDotDeterminism: rows and columns of C are bit-identical whether
// computed in one call or as sub-products at other offsets.
func TestGemmDotDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	M, N, K := 45, 131, 1100 // K spans 3 KC blocks
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
		for _, k := range append([]*DotKernel{refDot}, DotKernels...) {
			full := append([]float32(nil), c0...)
			GemmDot(k, tA, tB, M, N, K, 0.75, a, lda, b, ldb, 0.5, full, N)
			for _, sub := range [][4]int{{3, 1, 0, N}, {7, 13, 5, 50}, {44, 1, 130, 1}, {1, 40, 17, 100}} {
				i0, m, j0, n := sub[0], sub[1], sub[2], sub[3]
				aoff, boff := i0*lda, j0
				if tA {
					aoff = i0
				}
				if tB {
					boff = j0 * ldb
				}
				got := append([]float32(nil), c0...)
				GemmDot(k, tA, tB, m, n, K, 0.75, a[aoff:], lda, b[boff:], ldb, 0.5, got[i0*N+j0:], N)
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

// TestGemmDotSpecial: K = 0 and alpha = 0 give beta·C; a short C panics
// before any write.
func TestGemmDotSpecial(t *testing.T) {
	checkSpecial(t, "GemmDot", func(M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
		GemmDot(refDot, false, false, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc)
	})
}

// TestPeakCounts: the peak loops count 2 operations per multiply-add lane
// (4 per bf16 pair), and report 0 where the instructions are missing.
func TestPeakCounts(t *testing.T) {
	f32, bf16 := Peak(false, 3), Peak(true, 3)
	if want := int64(3 * 24 * 16 * 2); len(Kernels) > 0 && Kernels[0].Name == "avx512" && f32 != want {
		t.Errorf("Peak(f32, 3) = %d, want %d", f32, want)
	}
	if want := int64(3 * 24 * 16 * 4); (len(DotKernels) > 0) != (bf16 == want) {
		t.Errorf("Peak(bf16, 3) = %d with %d dot kernels, want %d", bf16, len(DotKernels), want)
	}
}
