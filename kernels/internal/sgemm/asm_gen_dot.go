//go:build ignore

// The bf16 dot-product code of asm_gen.go (written to dot_amd64.s): the
// 8×48 VDPBF16PS microkernel and the packers that build its bf16-pair
// micro-panels. Go's assembler does not know the AVX512-BF16 instructions
// (VDPBF16PS, VCVTNEPS2BF16), so evex encodes them as BYTE directives,
// with the instruction in a comment.

package main

import (
	"fmt"
	"strings"
)

// evex emits one EVEX-encoded register-to-register instruction of opcode
// map 0F38, W0: pp is the implied prefix (1 = 66, 2 = F3, 3 = F2), ll the
// vector length (1 = 256 bits, 2 = 512), reg the ModRM.reg operand (the
// destination), vvvv the first source (0 when unused, which encodes as
// 1111) and rm the ModRM.rm register. Registers are X/Y/Z numbers 0..31.
func evex(comment string, pp, ll, op, reg, vvvv, rm int) {
	bit := func(x, i int) int { return (x >> i) & 1 }
	p0 := (1-bit(reg, 3))<<7 | (1-bit(rm, 4))<<6 | (1-bit(rm, 3))<<5 | (1-bit(reg, 4))<<4 | 2 // map 0F38
	p1 := (^vvvv&15)<<3 | 1<<2 | pp                                                           // W0
	p2 := ll<<5 | (1-bit(vvvv, 4))<<3                                                         // no masking, no broadcast
	modrm := 3<<6 | (reg&7)<<3 | rm&7
	var b []string
	for _, x := range []int{0x62, p0, p1, p2, op, modrm} {
		b = append(b, fmt.Sprintf("BYTE $0x%02x", x))
	}
	w("%s // %s", strings.Join(b, "; "), comment)
}

// vdpbf16ps is VDPBF16PS Z(b), Z(a), Z(acc) in Go operand order: for each
// of the 16 lanes, acc += a.hi·b.hi, then acc += a.lo·b.lo (the bf16 halves
// of the lane's 32 bits), each a float32 fused multiply-add with
// subnormal inputs and results flushed to zero.
func vdpbf16ps(b, a, acc int) {
	evex(fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", b, a, acc), 2, 2, 0x52, acc, a, b)
}

// vcvtneps2bf16 rounds the 16 (ll = 2: Z src → Y dst) or 8 (ll = 1: Y src
// → X dst) floats of register src to bf16, to nearest even, subnormals
// flushed, NaN quieted.
func vcvtneps2bf16(ll, src, dst int) {
	names := map[int][2]string{1: {"Y", "X"}, 2: {"Z", "Y"}}[ll]
	evex(fmt.Sprintf("VCVTNEPS2BF16 %s%d, %s%d", names[0], src, names[1], dst), 2, ll, 0x72, dst, 0, src)
}

// dotKernel is the 8×48 bf16 kernel: the loop of the f32 kernel with
// VDPBF16PS for VFMADD231PS, over micro-panels of bf16 pairs (4 bytes per
// element of 2 consecutive k), so the pointer steps are the same.
func dotKernel() {
	w("")
	w("// func dotKernelAVX512(kc int, a, b *uint32, c *float32, ldc int, alpha, beta float32, m, n int)")
	w("//")
	w("// 8×48 tile over kc k-pairs: accumulators Z0..Z23 (row r in Z3r..Z3r+2),")
	w("// the B pair row in Z24..Z26, A pair broadcasts in Z27/Z28. Columns ≥ n")
	w("// are masked off (K1..K3), rows ≥ m are not stored.")
	kernel8x48("dotKernelAVX512", "dot512", vdpbf16ps)
}

// peak writes the machine-peak loops: n iterations of 24 independent
// 512-bit FMAs (VFMADD231PS) or bf16 dot products (VDPBF16PS), or 256-bit
// FMAs for AVX2 machines, on register operands only.
func peak() {
	for _, k := range []struct {
		name, p, reg string
		mul          func(acc int)
	}{
		{"peakFMA512", "pf", "Z", func(acc int) { w("VFMADD231PS Z30, Z31, Z%d", acc) }},
		{"peakDot512", "pd", "Z", func(acc int) { vdpbf16ps(30, 31, acc) }},
		{"peakFMA256", "pa", "Y", func(acc int) { w("VFMADD231PS Y14, Y15, Y%d", acc) }},
	} {
		acc := 24
		if k.reg == "Y" {
			acc = 12
		}
		w("")
		w("// func %s(n int)", k.name)
		w("TEXT ·%s(SB), NOSPLIT, $0-8", k.name)
		w("MOVQ n+0(FP), CX")
		w("TESTQ CX, CX")
		w("JZ %sdone", k.p)
		zero := "VPXORD"
		if k.reg == "Y" {
			zero = "VXORPS"
		}
		for i := 0; i < acc; i++ {
			w("%s %s%d, %s%d, %s%d", zero, k.reg, i, k.reg, i, k.reg, i)
		}
		w("%sloop:", k.p)
		for r := 0; r < 24/acc; r++ {
			for i := 0; i < acc; i++ {
				k.mul(i)
			}
		}
		w("DECQ CX")
		w("JNZ %sloop", k.p)
		w("VZEROUPPER")
		w("%sdone:", k.p)
		w("RET")
	}
}

func dotPacking() {
	cvtTranspose()
	w("")
	w("// func pairTranspose8Asm(dst *uint32, ldd int, src *uint16, lds2 int, blocks int)")
	w("//")
	w("// The 32-bit transpose of transpose8Asm over bf16 rows read as pairs:")
	w("// dst[p*ldd+i] = src[i*lds+2p] | src[i*lds+2p+1]<<16 for i < 8,")
	w("// p < 8·blocks (lds2 = lds/2: the row stride in pairs).")
	transpose32("pairTranspose8Asm", "pt", "src", "lds2")
	interleave("interleaveBF16Asm", "ib", "uint16", false, 2)
	interleave("interleaveF32x16Asm", "if", "float32", true, 2)
	interleave("interleaveF32x8Asm", "ie", "float32", true, 1)
}

// cvtTranspose packs 8 float32 rows as bf16 pairs, transposed: per block
// of 16 floats of each row, round them to 8 pairs (VCVTNEPS2BF16 from
// Z16..Z23 into Y8..Y15), then transpose 8×8 32-bit elements as
// transposeBF16 does (VPERM2F128 into the lane layout, shuffle8).
func cvtTranspose() {
	w("")
	w("// func cvtTranspose8Asm(dst *uint32, ldd int, src *float32, lds int, blocks int)")
	w("//")
	w("// dst[p*ldd+i] = bf16(src[i*lds+2p]) | bf16(src[i*lds+2p+1])<<16 for i < 8,")
	w("// p < 8·blocks.")
	w("TEXT ·cvtTranspose8Asm(SB), NOSPLIT, $0-40")
	w("MOVQ dst+0(FP), DI")
	w("MOVQ ldd+8(FP), DX")
	w("SHLQ $2, DX")
	w("MOVQ src+16(FP), R8")
	w("MOVQ lds+24(FP), R9")
	w("SHLQ $2, R9")
	w("MOVQ blocks+32(FP), CX")
	w("TESTQ CX, CX")
	w("JZ cdone")
	w("LEAQ (R9)(R9*2), R12 // 3·lds")
	w("LEAQ (DX)(DX*2), R13 // 3·ldd")
	w("cloop:")
	w("LEAQ (R8)(R9*4), R10 // row 4")
	rows := []string{"(R8)", "(R8)(R9*1)", "(R8)(R9*2)", "(R8)(R12*1)"}
	rows4 := []string{"(R10)", "(R10)(R9*1)", "(R10)(R9*2)", "(R10)(R12*1)"}
	for i := 0; i < 4; i++ {
		w("VMOVUPS %s, Z%d", rows[i], 16+i)
		w("VMOVUPS %s, Z%d", rows4[i], 20+i)
	}
	for i := 0; i < 8; i++ {
		vcvtneps2bf16(2, 16+i, 8+i)
	}
	for i := 0; i < 4; i++ {
		w("VPERM2F128 $0x20, Y%d, Y%d, Y%d", 12+i, 8+i, i)
		w("VPERM2F128 $0x31, Y%d, Y%d, Y%d", 12+i, 8+i, i+4)
	}
	shuffle8()
	w("ADDQ $64, R8")
	w("DECQ CX")
	w("JNZ cloop")
	w("VZEROUPPER")
	w("cdone:")
	w("RET")
}

// interleave packs pairs of rows: per block of 16 (ll = 2, Z registers) or
// 8 (ll = 1, Y) columns, widen the two rows' bf16 values to 32 bits
// (VPMOVZXWD; float32 rows are first rounded by VCVTNEPS2BF16), shift the
// second row's into the high halves and OR.
func interleave(name, p, elem string, f32 bool, ll int) {
	width := 8 * ll
	size := 2
	if f32 {
		size = 4
	}
	wide, half := "Z", "Y"
	if ll == 1 {
		wide, half = "Y", "X"
	}
	w("")
	w("// func %s(dst *uint32, ldd int, src *%s, lds int, pairs int, blocks int)", name, elem)
	w("//")
	if f32 {
		w("// dst[p*ldd+j] = bf16(src[2p*lds+j]) | bf16(src[(2p+1)*lds+j])<<16 for")
	} else {
		w("// dst[p*ldd+j] = src[2p*lds+j] | src[(2p+1)*lds+j]<<16 for")
	}
	w("// p < pairs, j < %d·blocks.", width)
	w("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	w("MOVQ dst+0(FP), DI")
	w("MOVQ ldd+8(FP), DX")
	w("SHLQ $2, DX")
	w("MOVQ src+16(FP), SI")
	w("MOVQ lds+24(FP), R8")
	if f32 {
		w("SHLQ $2, R8")
	} else {
		w("SHLQ $1, R8")
	}
	w("MOVQ pairs+32(FP), CX")
	w("MOVQ blocks+40(FP), R9")
	w("TESTQ CX, CX")
	w("JZ %sdone", p)
	w("TESTQ R9, R9")
	w("JZ %sdone", p)
	w("LEAQ (R8)(R8*1), R13 // two rows")
	w("%srow:", p)
	w("MOVQ DI, R10")
	w("MOVQ SI, R11")
	w("LEAQ (SI)(R8*1), R12")
	w("MOVQ R9, BX")
	w("%sblk:", p)
	if f32 {
		w("VMOVUPS (R11), %s2", wide)
		w("VMOVUPS (R12), %s3", wide)
		vcvtneps2bf16(ll, 2, 0)
		vcvtneps2bf16(ll, 3, 1)
		w("VPMOVZXWD %s0, %s0", half, wide)
		w("VPMOVZXWD %s1, %s1", half, wide)
	} else {
		w("VPMOVZXWD (R11), %s0", wide)
		w("VPMOVZXWD (R12), %s1", wide)
	}
	w("VPSLLD $16, %s1, %s1", wide, wide)
	if ll == 2 {
		w("VPORD Z1, Z0, Z0")
		w("VMOVDQU32 Z0, (R10)")
	} else {
		w("VPOR Y1, Y0, Y0")
		w("VMOVDQU Y0, (R10)")
	}
	w("ADDQ $%d, R11", width*size)
	w("ADDQ $%d, R12", width*size)
	w("ADDQ $%d, R10", width*4)
	w("DECQ BX")
	w("JNZ %sblk", p)
	w("ADDQ DX, DI")
	w("ADDQ R13, SI")
	w("DECQ CX")
	w("JNZ %srow", p)
	w("VZEROUPPER")
	w("%sdone:", p)
	w("RET")
}
