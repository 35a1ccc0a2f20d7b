// Package sgemm is a packed, cache-blocked single-precision GEMM in Go
// with assembly microkernels (GotoBLAS/BLIS loop structure), for argrl's
// cgo-free build: C = alpha·op(A)·op(B) + beta·C, row-major, on the calling
// goroutine (kernels/cpu_matmul.go splits large products over goroutines).
// It is a package of its own because Go assembly cannot live in a package
// that uses cgo (kernels does, with -tags openblas).
//
// Shape legend:
//
//	M, N, K      op(A) is M×K, op(B) is K×N, C is M×N (leading dims lda, ldb, ldc)
//	MR×NR        the microkernel's register tile of C
//	MC, KC, NC   cache blocks: a packed MC×KC block of A (L2), a packed
//	             KC×NC block of B (L3), one KC×NR micro-panel of B (L1)
//
// Loops, outermost first:
//
//	for jc in N by NC:        // B block columns
//	  for pc in K by KC:      // pack op(B)[pc:pc+KC, jc:jc+NC] → NR-column micro-panels
//	    for ic in M by MC:    // pack op(A)[ic:ic+MC, pc:pc+KC] → MR-row micro-panels
//	      for jr in NC by NR:
//	        for ir in MC by MR:
//	          microkernel(KC, A micro-panel, B micro-panel, C[ic+ir:, jc+jr:])
//
// The microkernel applies alpha to its sums; the first KC block applies
// beta, later ones accumulate (beta = 1).
//
// GemmBF16 takes B as bfloat16 bits and widens it while packing (a bf16
// value is the top half of a float32, so widening is exact): the packed
// micro-panels, and so every result bit, are those of Gemm on the widened
// B, without a float32 copy of B.
//
// Determinism: every C[i,j] is the same sequence of float32 fused
// multiply-adds over k = 0..K-1 in order, with KC block boundaries that
// depend on K alone, whatever M, N, the tile position, the kernel (AVX2 or
// AVX-512) or the split over goroutines. A row of a product therefore does
// not depend on the other rows in the batch.
package sgemm

import (
	"math"
	"sync"
	"unsafe"
)

// Kernel is one register-blocked microkernel (sgemm_amd64.go).
type Kernel struct {
	Name   string
	MR, NR int // register tile of C
	// edges: fn takes partial tiles (m < MR or n < NR) itself; otherwise
	// the driver runs them on a padded copy of the tile.
	edges bool
	// fn computes one tile of C exactly as KernelRef.
	fn func(kc int, a, b, c *float32, ldc int, alpha, beta float32, m, n int)
}

// Kernels are the microkernels this machine runs, best first: none off
// amd64, on CPUs without AVX2+FMA, or with -tags purego.
var Kernels = available()

// Best is Kernels[0], or nil when there is none.
func Best() *Kernel {
	if len(Kernels) == 0 {
		return nil
	}
	return Kernels[0]
}

// KernelRef is the plain-Go reference of every microkernel. a and b are
// packed micro-panels, k-major and zero-padded: a [kc][mr], b [kc][nr].
// For the m×n (≤ mr×nr) tile of c with leading dimension ldc:
//
//	for i := 0; i < m; i++ {
//		for j := 0; j < n; j++ {
//			acc := float32(0)
//			for p := 0; p < kc; p++ {
//				acc = fma(a[p*mr+i], b[p*nr+j], acc) // float32 fused multiply-add
//			}
//			if beta == 0 {
//				c[i*ldc+j] = alpha * acc // c is not read
//			} else {
//				c[i*ldc+j] = fma(beta, c[i*ldc+j], alpha*acc)
//			}
//		}
//	}
//
// (Here fma is math.FMA in float64 rounded to float32, which can differ
// from a float32 FMA in the last bit by double rounding.)
func KernelRef(kc int, a, b, c []float32, ldc int, alpha, beta float32, m, n, mr, nr int) {
	fma := func(x, y, z float32) float32 { return float32(math.FMA(float64(x), float64(y), float64(z))) }
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			acc := float32(0)
			for p := 0; p < kc; p++ {
				acc = fma(a[p*mr+i], b[p*nr+j], acc)
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * acc
			} else {
				c[i*ldc+j] = fma(beta, c[i*ldc+j], alpha*acc)
			}
		}
	}
}

// tile runs k's microkernel on one tile, with the same arguments as
// KernelRef (mr, nr are k's): for tests. Partial tiles go through the
// driver's padding when the kernel has no masks.
func (k *Kernel) tile(kc int, a, b, c []float32, ldc int, alpha, beta float32, m, n int) {
	_, _, _ = a[kc*k.MR-1], b[kc*k.NR-1], c[(m-1)*ldc+n-1]
	if k.edges || (m == k.MR && n == k.NR) {
		k.fn(kc, &a[0], &b[0], &c[0], ldc, alpha, beta, m, n)
		return
	}
	k.edge(kc, &a[0], &b[0], c, ldc, alpha, beta, m, n, make([]float32, k.MR*k.NR))
}

// Cache blocks, for the 8×48 AVX-512 kernel on Zen 5 (48 KiB L1D, 1 MiB
// L2): of KC ∈ {128, 192, 256, 384} × MC ∈ {96, 192, 384}, timed in thread
// CPU time (the machine was shared), KC = 256 (a 48 KiB B micro-panel) and
// MC = 192 (a 192 KiB block of A) were best or within noise of it. KC is
// chosen from K alone (see kcFor) so that results do not depend on M and N.
const (
	kcMax = 256
	mcMax = 192
	ncMax = 3072
)

// kcFor splits K into the fewest blocks of at most kcMax, of equal size
// rounded up to a multiple of 8 (the last block takes the rest).
func kcFor(K int) int { return splitK(K, kcMax, 8) }

// splitK is the block size that splits K into the fewest blocks of at most
// kmax, of equal size rounded up to a multiple of align (a power of two
// dividing kmax; the last block takes the rest).
func splitK(K, kmax, align int) int {
	nb := (K + kmax - 1) / kmax
	kc := (K + nb - 1) / nb
	return min((kc+align-1)&^(align-1), kmax)
}

// Gemm is C = alpha·op(A)·op(B) + beta·C with kernel k on the calling
// goroutine; op(A) is Aᵀ of the stored K×M A when tA, op(B) is Bᵀ of the
// stored N×K B when tB. Arguments are as blas.Float32.Sgemm (row-major);
// a, b and c are sliced with Go's bounds checks before any kernel runs, so
// bad arguments panic like an index out of range and never write outside c.
// C is not read when beta = 0.
func Gemm(k *Kernel, tA, tB bool, M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(k, tA, tB, M, N, K, alpha, a, lda, matB{f: b}, ldb, beta, c, ldc)
}

// GemmBF16 is Gemm with B given as bfloat16 bits (b[i] is the float32 with
// bits b[i]<<16): the same result, bit for bit, as Gemm on the widened B.
func GemmBF16(k *Kernel, tA, tB bool, M, N, K int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	gemm(k, tA, tB, M, N, K, alpha, a, lda, matB{h: b, bf16: true}, ldb, beta, c, ldc)
}

// matB is the B operand: float32 elements, or bfloat16 bits when bf16.
type matB struct {
	f    []float32
	h    []uint16
	bf16 bool
}

func gemm(k *Kernel, tA, tB bool, M, N, K int, alpha float32, a []float32, lda int, b matB, ldb int, beta float32, c []float32, ldc int) {
	if M <= 0 || N <= 0 {
		return
	}
	_ = c[(M-1)*ldc+N-1] // the kernels write C through pointers: check its extent once
	if K <= 0 || alpha == 0 {
		scaleC(M, N, beta, c, ldc)
		return
	}
	mr, nr := k.MR, k.NR
	kcb := kcFor(K)
	mcb, ncb := mnBlocks(M, N, mr, nr)
	pa, pas := aligned(mcb * kcb)
	pb, pbs := aligned(ncb * kcb)
	var t []float32 // padded C tile for kernels without masks
	if !k.edges {
		t = make([]float32, mr*nr)
	}
	blockLoop(M, N, K, mr, nr, kcb, mcb, ncb, beta,
		func(pc, jc, kc, nc int) { packB(pb, tB, b, ldb, pc, jc, kc, nc, nr) },
		func(ic, pc, mc, kc int) { packA(pa, tA, a, lda, ic, pc, mc, kc, mr) },
		func(ir, jr, i, j, kc, m, n int, bet float32) {
			ci := i*ldc + j
			if k.edges || (m == mr && n == nr) {
				k.fn(kc, &pa[ir*kc], &pb[jr*kc], &c[ci], ldc, alpha, bet, m, n)
			} else {
				k.edge(kc, &pa[ir*kc], &pb[jr*kc], c[ci:], ldc, alpha, bet, m, n, t)
			}
		})
	pool.Put(pas)
	pool.Put(pbs)
}

// mnBlocks is the row and column block sizes of an M×N product for mr×nr
// tiles (whole tiles, at most mcMax and ncMax).
func mnBlocks(M, N, mr, nr int) (mcb, ncb int) {
	return min(mcMax/mr*mr, (M+mr-1)/mr*mr), min(ncMax/nr*nr, (N+nr-1)/nr*nr)
}

// blockLoop is the loop nest of the packed GEMMs (gemm, gemmDot): for each
// column block jc of C and depth block pc of K it packs op(B)'s block, for
// each row block ic op(A)'s block, then runs tile on every micro-tile
// (ir, jr: its offsets in the packed blocks; i, j: its first row and
// column of C; kc: the block's depth) with beta for the first depth block
// and 1 after.
func blockLoop(M, N, K, mr, nr, kcb, mcb, ncb int, beta float32,
	packB func(pc, jc, kc, nc int), packA func(ic, pc, mc, kc int),
	tile func(ir, jr, i, j, kc, m, n int, beta float32)) {
	for jc := 0; jc < N; jc += ncb {
		nc := min(ncb, N-jc)
		for pc := 0; pc < K; pc += kcb {
			kc := min(kcb, K-pc)
			packB(pc, jc, kc, nc)
			bet := beta
			if pc > 0 {
				bet = 1
			}
			for ic := 0; ic < M; ic += mcb {
				mc := min(mcb, M-ic)
				packA(ic, pc, mc, kc)
				for jr := 0; jr < nc; jr += nr {
					n := min(nr, nc-jr)
					for ir := 0; ir < mc; ir += mr {
						tile(ir, jr, ic+ir, jc+jr, kc, min(mr, mc-ir), n, bet)
					}
				}
			}
		}
	}
}

// scaleC is C = beta·C (0 when beta = 0, whatever C holds) on M×N.
func scaleC(M, N int, beta float32, c []float32, ldc int) {
	for i := 0; i < M; i++ {
		row := c[i*ldc : i*ldc+N]
		for j := range row {
			if beta == 0 {
				row[j] = 0
			} else {
				row[j] *= beta
			}
		}
	}
}

// edge runs a partial m×n tile of c through a full-tile kernel on a padded
// copy t [MR×NR] (the same arithmetic as a full tile).
func (k *Kernel) edge(kc int, ap, bp *float32, c []float32, ldc int, alpha, beta float32, m, n int, t []float32) {
	nr := k.NR
	if beta != 0 {
		for i := 0; i < m; i++ {
			copy(t[i*nr:i*nr+n], c[i*ldc:i*ldc+n])
		}
	}
	k.fn(kc, ap, bp, &t[0], nr, alpha, beta, k.MR, nr)
	for i := 0; i < m; i++ {
		copy(c[i*ldc:i*ldc+n], t[i*nr:i*nr+n])
	}
}

// packA packs op(A)[ic:ic+mc, pc:pc+kc] into ⌈mc/mr⌉ micro-panels
// [kc][mr], rows past mc zero. op(A) is A (M×K, row i at a[i*lda:]) or,
// with tA, Aᵀ of the stored K×M A.
func packA(dst []float32, tA bool, a []float32, lda, ic, pc, mc, kc, mr int) {
	for ir := 0; ir < mc; ir += mr {
		m := min(mr, mc-ir)
		d := dst[ir*kc : ir*kc+kc*mr]
		if m < mr {
			clear(d)
		}
		if tA { // row p of the panel is a[(pc+p)*lda + ic+ir :][:m]
			for p := 0; p < kc; p++ {
				copy(d[p*mr:p*mr+m], a[(pc+p)*lda+ic+ir:][:m])
			}
			continue
		}
		gather(d, mr, a[(ic+ir)*lda+pc:], lda, m, kc)
	}
}

// packB packs op(B)[pc:pc+kc, jc:jc+nc] into ⌈nc/nr⌉ micro-panels
// [kc][nr], columns past nc zero. op(B) is B (K×N, row p at b[p*ldb:]) or,
// with tB, Bᵀ of the stored N×K B. A bf16 B is widened on the way.
func packB(dst []float32, tB bool, b matB, ldb, pc, jc, kc, nc, nr int) {
	for jr := 0; jr < nc; jr += nr {
		n := min(nr, nc-jr)
		d := dst[jr*kc : jr*kc+kc*nr]
		if n < nr {
			clear(d)
		}
		switch {
		case !tB && b.bf16:
			widenRows(d, nr, b.h[pc*ldb+jc+jr:], ldb, kc, n)
		case !tB:
			for p := 0; p < kc; p++ {
				copy(d[p*nr:p*nr+n], b.f[(pc+p)*ldb+jc+jr:][:n])
			}
		case b.bf16:
			gatherBF16(d, nr, b.h[(jc+jr)*ldb+pc:], ldb, n, kc)
		default:
			gather(d, nr, b.f[(jc+jr)*ldb+pc:], ldb, n, kc)
		}
	}
}

// gather transposes rows×kc of src (rows at stride lds) into d: d[p*ldd+i]
// = src[i*lds+p] (packing the non-contiguous side of A or B). Groups of 8
// rows go through transpose8 when the machine has it.
func gather(d []float32, ldd int, src []float32, lds, rows, kc int) {
	i := 0
	if transpose8 != nil && kc >= 8 {
		kb := kc / 8
		for ; i+8 <= rows; i += 8 {
			_ = src[(i+7)*lds+kb*8-1] // the assembly reads 8 rows of kb·8
			_ = d[(kb*8-1)*ldd+i+7]   // and writes kb·8 rows of 8
			transpose8(&d[i], ldd, &src[i*lds], lds, kb)
			for p := kb * 8; p < kc; p++ {
				for r := i; r < i+8; r++ {
					d[p*ldd+r] = src[r*lds+p]
				}
			}
		}
	}
	for ; i < rows; i++ {
		for p, v := range src[i*lds : i*lds+kc] {
			d[p*ldd+i] = v
		}
	}
}

// widenRows widens rows×cols of bf16 src (rows at stride lds) into d
// (rows at stride ldd): d[p*ldd+j] = float32(src[p*lds+j]). Groups of 8
// columns go through widen8 when the machine has it.
func widenRows(d []float32, ldd int, src []uint16, lds, rows, cols int) {
	if rows == 0 || cols == 0 {
		return
	}
	_ = src[(rows-1)*lds+cols-1] // the assembly reads rows of cols
	_ = d[(rows-1)*ldd+cols-1]   // and writes them
	j := 0
	if widen8 != nil && cols >= 8 {
		j = cols &^ 7
		widen8(&d[0], ldd, &src[0], lds, rows, j/8)
	}
	if j == cols {
		return
	}
	for p := 0; p < rows; p++ {
		for q, h := range src[p*lds+j : p*lds+cols] {
			d[p*ldd+j+q] = math.Float32frombits(uint32(h) << 16)
		}
	}
}

// gatherBF16 is gather from bf16 src, widening: d[p*ldd+i] =
// float32(src[i*lds+p]). Groups of 8 rows go through transpose8BF16 when
// the machine has it.
func gatherBF16(d []float32, ldd int, src []uint16, lds, rows, kc int) {
	i := 0
	if transpose8BF16 != nil && kc >= 8 {
		kb := kc / 8
		for ; i+8 <= rows; i += 8 {
			_ = src[(i+7)*lds+kb*8-1] // the assembly reads 8 rows of kb·8
			_ = d[(kb*8-1)*ldd+i+7]   // and writes kb·8 rows of 8
			transpose8BF16(&d[i], ldd, &src[i*lds], lds, kb)
			for p := kb * 8; p < kc; p++ {
				for r := i; r < i+8; r++ {
					d[p*ldd+r] = math.Float32frombits(uint32(src[r*lds+p]) << 16)
				}
			}
		}
	}
	for ; i < rows; i++ {
		for p, h := range src[i*lds : i*lds+kc] {
			d[p*ldd+i] = math.Float32frombits(uint32(h) << 16)
		}
	}
}

// pool holds packing buffers.
var pool sync.Pool

// aligned returns a pooled float32 array of n elements starting on a
// 64-byte boundary, and the pool handle to put back.
func aligned(n int) ([]float32, *[]float32) {
	s, ok := pool.Get().(*[]float32)
	if !ok || cap(*s) < n+16 {
		b := make([]float32, n+16)
		s = &b
	}
	*s = (*s)[:cap(*s)]
	off := int((64 - uintptr(unsafe.Pointer(&(*s)[0]))%64) % 64 / 4)
	return (*s)[off : off+n], s
}

// transpose8, when set (sgemm_amd64.go), is d[p*ldd+i] = s[i*lds+p] for
// i < 8, p < 8·blocks, on raw pointers; gather checks the bounds.
var transpose8 func(d *float32, ldd int, s *float32, lds int, blocks int)

// transpose8BF16 and widen8, when set (sgemm_amd64.go), are the bf16
// packing loops on raw pointers (gatherBF16 and widenRows check the
// bounds): transpose8BF16 is transpose8 from bf16 s, widening; widen8 is
// d[p*ldd+j] = float32(s[p*lds+j]) for p < rows, j < 8·blocks.
var (
	transpose8BF16 func(d *float32, ldd int, s *uint16, lds int, blocks int)
	widen8         func(d *float32, ldd int, s *uint16, lds int, rows, blocks int)
)
