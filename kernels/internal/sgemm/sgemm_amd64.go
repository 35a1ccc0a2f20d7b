//go:build amd64 && !purego

package sgemm

import "golang.org/x/sys/cpu"

//go:generate go run asm_gen.go asm_gen_dot.go -out sgemm_amd64.s -dotout dot_amd64.s

// Microkernels in sgemm_amd64.s. Both compute, for packed panels a [kc][mr]
// and b [kc][nr], the tile C[0:m, 0:n] (leading dimension ldc) exactly as
// sgemmKernelRef: one float32 FMA per k in order, then alpha·acc (+ beta·C
// fused, C not read when beta = 0).

// sgemmKernelAVX512 is the 8×48 AVX-512F kernel; it masks partial tiles.
//
//go:noescape
func sgemmKernelAVX512(kc int, a, b, c *float32, ldc int, alpha, beta float32, m, n int)

// sgemmKernelAVX2 is the 6×16 AVX2+FMA kernel; full tiles only.
//
//go:noescape
func sgemmKernelAVX2(kc int, a, b, c *float32, ldc int, alpha, beta float32, m, n int)

// transpose8Asm: dst[p*ldd+i] = src[i*lds+p] for i < 8, p < 8·blocks (AVX).
//
//go:noescape
func transpose8Asm(dst *float32, ldd int, src *float32, lds int, blocks int)

// transpose8BF16Asm: dst[p*ldd+i] = float32(src[i*lds+p]) for i < 8,
// p < 8·blocks, src bf16 (AVX2).
//
//go:noescape
func transpose8BF16Asm(dst *float32, ldd int, src *uint16, lds int, blocks int)

// widen8Asm: dst[p*ldd+j] = float32(src[p*lds+j]) for p < rows,
// j < 8·blocks, src bf16 (AVX2).
//
//go:noescape
func widen8Asm(dst *float32, ldd int, src *uint16, lds int, rows int, blocks int)

// dotKernelAVX512 is the 8×48 AVX512-BF16 kernel over pair micro-panels
// (KernelDotRef); it masks partial tiles.
//
//go:noescape
func dotKernelAVX512(kc int, a, b *uint32, c *float32, ldc int, alpha, beta float32, m, n int)

// The dot GEMM's packers (dot_pack.go has their loops).
//
//go:noescape
func cvtTranspose8Asm(dst *uint32, ldd int, src *float32, lds int, blocks int)

//go:noescape
func pairTranspose8Asm(dst *uint32, ldd int, src *uint16, lds2 int, blocks int)

//go:noescape
func interleaveBF16Asm(dst *uint32, ldd int, src *uint16, lds int, pairs int, blocks int)

//go:noescape
func interleaveF32x16Asm(dst *uint32, ldd int, src *float32, lds int, pairs int, blocks int)

//go:noescape
func interleaveF32x8Asm(dst *uint32, ldd int, src *float32, lds int, pairs int, blocks int)

var dot512 = &DotKernel{Name: "avx512bf16", MR: 8, NR: 48, fn: dotKernelAVX512}

// availableDot lists the bf16 kernels: the AVX512-BF16 one when the CPU
// (and OS) has AVX512F, BW, VL and BF16, with its packers.
func availableDot() []*DotKernel {
	x := cpu.X86
	if !(x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL && x.HasAVX512BF16) {
		return nil
	}
	cvtTranspose8, pairTranspose8 = cvtTranspose8Asm, pairTranspose8Asm
	interleave16BF16, interleave16F32, interleave8F32 = interleaveBF16Asm, interleaveF32x16Asm, interleaveF32x8Asm
	return []*DotKernel{dot512}
}

var (
	avx512 = &Kernel{Name: "avx512", MR: 8, NR: 48, edges: true, fn: sgemmKernelAVX512}
	avx2   = &Kernel{Name: "avx2", MR: 6, NR: 16, fn: sgemmKernelAVX2}
)

// available lists the microkernels this CPU runs, best first (x/sys/cpu
// also checks that the OS saves the AVX/AVX-512 registers).
func available() []*Kernel {
	var ks []*Kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2)
	}
	if len(ks) > 0 {
		transpose8 = transpose8Asm
	}
	if cpu.X86.HasAVX2 {
		transpose8BF16, widen8 = transpose8BF16Asm, widen8Asm
	}
	return ks
}

// The peak loops (dot_amd64.s): n iterations of 24 independent vector
// multiply-adds on registers.
func peakFMA512(n int)
func peakDot512(n int)
func peakFMA256(n int)

// Peak runs n iterations of this machine's widest multiply-add loop, float32
// FMAs (VFMADD231PS) or, with bf16, bf16 dot products (VDPBF16PS), and
// returns the floating-point operations done (a multiply-add counts 2), or
// 0 when the machine lacks the instructions.
func Peak(bf16 bool, n int) int64 {
	x := cpu.X86
	switch {
	case bf16 && len(DotKernels) > 0:
		peakDot512(n)
		return int64(n) * 24 * 16 * 2 * 2
	case bf16:
		return 0
	case x.HasAVX512F:
		peakFMA512(n)
		return int64(n) * 24 * 16 * 2
	case x.HasAVX2 && x.HasFMA:
		peakFMA256(n)
		return int64(n) * 24 * 8 * 2
	}
	return 0
}
