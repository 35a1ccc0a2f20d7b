package sgemm

// The bf16 dot-product GEMM (AVX512-BF16): C = alpha·bf16(op(A))·bf16(op(B))
// + beta·C with float32 sums. Operands are rounded to bfloat16 while they
// are packed (a bf16 B is taken as it is), two consecutive k at a time: a
// micro-panel element is a pair, the bf16 of k = 2q in its low 16 bits and
// of k = 2q+1 in its high 16 bits (0 past K). The microkernel (VDPBF16PS)
// adds, per pair and output, first the product of the high halves, then
// that of the low halves, each one float32 fused multiply-add with
// subnormal inputs and results flushed to zero (KernelDotRef).
//
// Loops and cache blocks are those of Gemm (sgemm.go) with micro-panels of
// pairs: a KC block of k is kc/2 pairs of 4 bytes, so a KC of 512 takes the
// bytes a KC of 256 takes in float32. KC depends on K alone, so every
// C[i,j] is the same sequence of operations whatever M, N, the tile or the
// split over goroutines: rows do not depend on the other rows of a batch.

import (
	"math"
	"unsafe"
)

// DotKernel is one bf16 dot-product microkernel (dot_amd64.s).
type DotKernel struct {
	Name   string
	MR, NR int // register tile of C
	// fn computes one tile of C exactly as KernelDotRef (kc pairs; partial
	// tiles masked).
	fn func(kc int, a, b *uint32, c *float32, ldc int, alpha, beta float32, m, n int)
}

// DotKernels are the bf16 microkernels this machine runs: none without
// AVX512-BF16 (and AVX512F/BW/VL), off amd64 or with -tags purego.
var DotKernels = availableDot()

// BestDot is DotKernels[0], or nil when there is none.
func BestDot() *DotKernel {
	if len(DotKernels) == 0 {
		return nil
	}
	return DotKernels[0]
}

// KernelDotRef is the plain-Go reference of the dot microkernels. a and b
// are packed micro-panels of kc pairs, pair-major and zero-padded: a
// [kc][mr], b [kc][nr]. For the m×n (≤ mr×nr) tile of c with leading
// dimension ldc:
//
//	for i < m, j < n:
//		acc := float32(0)
//		for q := 0; q < kc; q++ {
//			x, y := a[q*mr+i], b[q*nr+j]
//			acc = ftz(fma(daz(hi(x)), daz(hi(y)), acc)) // k = 2q+1 first
//			acc = ftz(fma(daz(lo(x)), daz(lo(y)), acc)) // then k = 2q
//		}
//		c[i*ldc+j] = alpha·acc, or fma(beta, c[i*ldc+j], alpha·acc) when beta ≠ 0
//
// where lo and hi widen the two bf16 halves, fma rounds once to float32
// and daz/ftz flush subnormals to a zero of the same sign.
func KernelDotRef(kc int, a, b []uint32, c []float32, ldc int, alpha, beta float32, m, n, mr, nr int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			acc := float32(0)
			for q := 0; q < kc; q++ {
				x, y := a[q*mr+i], b[q*nr+j]
				acc = flush(fmaf(flush(widen(uint16(x>>16))), flush(widen(uint16(y>>16))), acc))
				acc = flush(fmaf(flush(widen(uint16(x))), flush(widen(uint16(y))), acc))
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * acc
			} else {
				c[i*ldc+j] = fmaf(beta, c[i*ldc+j], alpha*acc)
			}
		}
	}
}

// widen is the float32 of bf16 bits h (exact).
func widen(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// flush returns a zero of x's sign for a subnormal x, else x.
func flush(x float32) float32 {
	if b := math.Float32bits(x); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// fmaf is x·y + z rounded once to float32: the product is exact in
// float64, the sum is rounded to odd in float64 (53 ≥ 24+2 bits), and
// rounding that to float32 is then the correctly rounded result.
func fmaf(x, y, z float32) float32 {
	p, zz := float64(x)*float64(y), float64(z)
	s := p + zz
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bp := s - zz
	e := (p - bp) + (zz - (s - bp)) // s + e = p + z exactly (TwoSum)
	if b := math.Float64bits(s); e != 0 && b&1 == 0 {
		if (e > 0) == (s > 0) {
			b++
		} else {
			b--
		}
		s = math.Float64frombits(b)
	}
	return float32(s)
}

// RoundBF16 is the bf16 rounding of the packers (VCVTNEPS2BF16): to
// nearest even, subnormals flushed to a zero of the same sign, NaN quieted.
func RoundBF16(f float32) uint16 {
	u := math.Float32bits(f)
	switch {
	case u&0x7f800000 == 0:
		return uint16(u>>16) & 0x8000
	case u&0x7fffffff > 0x7f800000:
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// pair packs the bf16 of k = 2q (lo) and k = 2q+1 (hi).
func pair(lo, hi uint16) uint32 { return uint32(lo) | uint32(hi)<<16 }

// Cache blocks of the dot GEMM, in k (see the package comment); MC and NC
// as Gemm's. Timed on this project's machine (Zen 5, 48 KiB L1D, 1 MiB
// L2) at the shapes of a 0.5B model's SFT step: one block is best up to
// K = kcDotOne (the layers' K of 896 and 1024), and blocks of kcDotMax
// beyond (the MLP's 4864, the LM head's 151936), within noise of 1024 and
// 2048.
const (
	kcDotMax = 512
	kcDotOne = 1024
)

// kcForDot is K rounded up to a multiple of 16 (8 pairs, the packers'
// block) up to kcDotOne, else K split into the fewest blocks of at most
// kcDotMax, of equal size rounded up to a multiple of 16 (the last block
// takes the rest).
func kcForDot(K int) int {
	if K <= kcDotOne {
		return (K + 15) &^ 15
	}
	return splitK(K, kcDotMax, 16)
}

// GemmDot is Gemm (same arguments and checks) with bf16 products: C =
// alpha·Σ_k bf16(op(A)[i,k])·bf16(op(B)[k,j]) + beta·C, float32 sums in
// the order of KernelDotRef, with dot kernel k on the calling goroutine.
func GemmDot(k *DotKernel, tA, tB bool, M, N, K int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemmDot(k, tA, tB, M, N, K, alpha, a, lda, matB{f: b}, ldb, beta, c, ldc)
}

// GemmDotBF16 is GemmDot with B as bfloat16 bits, used as they are.
func GemmDotBF16(k *DotKernel, tA, tB bool, M, N, K int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	gemmDot(k, tA, tB, M, N, K, alpha, a, lda, matB{h: b, bf16: true}, ldb, beta, c, ldc)
}

func gemmDot(k *DotKernel, tA, tB bool, M, N, K int, alpha float32, a []float32, lda int, b matB, ldb int, beta float32, c []float32, ldc int) {
	if M <= 0 || N <= 0 {
		return
	}
	_ = c[(M-1)*ldc+N-1] // the kernels write C through pointers: check its extent once
	if K <= 0 || alpha == 0 {
		scaleC(M, N, beta, c, ldc)
		return
	}
	mr, nr := k.MR, k.NR
	kcb := kcForDot(K)
	kpb := (kcb + 1) / 2 // pairs per block
	mcb, ncb := mnBlocks(M, N, mr, nr)
	pa, pas := alignedPairs(mcb * kpb)
	pb, pbs := alignedPairs(ncb * kpb)
	blockLoop(M, N, K, mr, nr, kcb, mcb, ncb, beta,
		func(pc, jc, kc, nc int) { packBDot(pb, tB, b, ldb, pc, jc, kc, nc, nr) },
		func(ic, pc, mc, kc int) { packADot(pa, tA, a, lda, ic, pc, mc, kc, mr) },
		func(ir, jr, i, j, kc, m, n int, bet float32) {
			kp := (kc + 1) / 2
			k.fn(kp, &pa[ir*kp], &pb[jr*kp], &c[i*ldc+j], ldc, alpha, bet, m, n)
		})
	pool.Put(pas)
	pool.Put(pbs)
}

// alignedPairs is aligned (a pooled, 64-byte aligned array) for n pairs.
func alignedPairs(n int) ([]uint32, *[]float32) {
	f, s := aligned(n)
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), n), s
}

// packADot packs op(A)[ic:ic+mc, pc:pc+kc] into ⌈mc/mr⌉ micro-panels
// [kc/2][mr] of pairs, rows past mc zero. op(A) is A (M×K, row i at
// a[i*lda:]) or, with tA, Aᵀ of the stored K×M A.
func packADot(dst []uint32, tA bool, a []float32, lda, ic, pc, mc, kc, mr int) {
	kp := (kc + 1) / 2
	for ir := 0; ir < mc; ir += mr {
		m := min(mr, mc-ir)
		d := dst[ir*kp : ir*kp+kp*mr]
		if m < mr {
			clear(d)
		}
		if tA {
			interleaveF32(d, mr, a[pc*lda+ic+ir:], lda, kc, m)
		} else {
			cvtGather(d, mr, a[(ic+ir)*lda+pc:], lda, m, kc)
		}
	}
}

// packBDot packs op(B)[pc:pc+kc, jc:jc+nc] into ⌈nc/nr⌉ micro-panels
// [kc/2][nr] of pairs, columns past nc zero. op(B) is B (K×N, row p at
// b[p*ldb:]) or, with tB, Bᵀ of the stored N×K B.
func packBDot(dst []uint32, tB bool, b matB, ldb, pc, jc, kc, nc, nr int) {
	kp := (kc + 1) / 2
	for jr := 0; jr < nc; jr += nr {
		n := min(nr, nc-jr)
		d := dst[jr*kp : jr*kp+kp*nr]
		if n < nr {
			clear(d)
		}
		switch {
		case !tB && b.bf16:
			interleaveBF16(d, nr, b.h[pc*ldb+jc+jr:], ldb, kc, n)
		case !tB:
			interleaveF32(d, nr, b.f[pc*ldb+jc+jr:], ldb, kc, n)
		case b.bf16:
			pairGatherBF16(d, nr, b.h[(jc+jr)*ldb+pc:], ldb, n, kc)
		default:
			cvtGather(d, nr, b.f[(jc+jr)*ldb+pc:], ldb, n, kc)
		}
	}
}
