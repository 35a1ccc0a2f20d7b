//go:build amd64 && !purego

package vec

import "golang.org/x/sys/cpu"

//go:generate go run asm_gen.go -out vec_amd64.s

// hasAVX2: expAVX2, swigluAVX2, swigluBwdAVX2, axpbyAVX2, axAVX2.
// hasAVX512 (F, DQ for VPMULLQ, VL for masked YMM): dropoutAVX512.
var (
	hasAVX2   = cpu.X86.HasAVX2
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL
)

// The assembly in vec_amd64.s; n is a multiple of 8. Each is its Go
// reference in vec.go on n elements.

//go:noescape
func expAVX2(x *float32, n int)

//go:noescape
func expShiftAVX2(out, x *float32, n int, shift, scale float32)

//go:noescape
func swigluAVX2(out, gate, up *float32, n int)

//go:noescape
func swigluBwdAVX2(dgate, dup, dout, gate, up *float32, n int)

//go:noescape
func axpbyAVX2(out, a, b *float32, n int, alpha, beta float32)

//go:noescape
func axAVX2(out, a *float32, n int, alpha float32)

//go:noescape
func adamWAVX2(pp, gp, mp, vp *float32, n int, a *AdamWParams)

//go:noescape
func dropoutAVX512(out, x *float32, n int, z0, th uint64, scale float32)

// The *Vec functions run the assembly on every element, the last n mod 8
// through zero-padded copies (so the tail is computed by the same code),
// and return len; 0 when the CPU lacks the instructions. Slices have
// their lengths checked by the caller.

func expVec(x []float32) int {
	n := len(x)
	if !hasAVX2 || n == 0 {
		return 0
	}
	n8 := n &^ 7
	if n8 > 0 {
		expAVX2(&x[0], n8)
	}
	if n8 < n {
		var t [8]float32
		copy(t[:], x[n8:])
		expAVX2(&t[0], 8)
		copy(x[n8:], t[:])
	}
	return n
}

func expShiftVec(out, x []float32, shift, scale float32) int {
	n := len(out)
	if !hasAVX2 || n == 0 {
		return 0
	}
	n8 := n &^ 7
	if n8 > 0 {
		expShiftAVX2(&out[0], &x[0], n8, shift, scale)
	}
	if n8 < n {
		var t [8]float32
		copy(t[:], x[n8:n])
		expShiftAVX2(&t[0], &t[0], 8, shift, scale)
		copy(out[n8:], t[:n-n8])
	}
	return n
}

func swigluVec(out, g, u []float32) int {
	n := len(out)
	if !hasAVX2 || n == 0 {
		return 0
	}
	n8 := n &^ 7
	if n8 > 0 {
		swigluAVX2(&out[0], &g[0], &u[0], n8)
	}
	if n8 < n {
		var to, tg, tu [8]float32
		copy(tg[:], g[n8:n])
		copy(tu[:], u[n8:n])
		swigluAVX2(&to[0], &tg[0], &tu[0], 8)
		copy(out[n8:], to[:])
	}
	return n
}

func swigluBwdVec(dg, du, d, g, u []float32) int {
	n := len(dg)
	if !hasAVX2 || n == 0 {
		return 0
	}
	n8 := n &^ 7
	if n8 > 0 {
		swigluBwdAVX2(&dg[0], &du[0], &d[0], &g[0], &u[0], n8)
	}
	if n8 < n {
		var tdg, tdu, td, tg, tu [8]float32
		copy(td[:], d[n8:n])
		copy(tg[:], g[n8:n])
		copy(tu[:], u[n8:n])
		swigluBwdAVX2(&tdg[0], &tdu[0], &td[0], &tg[0], &tu[0], 8)
		copy(dg[n8:], tdg[:])
		copy(du[n8:n], tdu[:])
	}
	return n
}

// axpbyVec does the multiple-of-8 prefix only: the reference's tail is
// the same two roundings and one add.
func axpbyVec(out, a, b []float32, alpha, beta float32) int {
	n8 := len(out) &^ 7
	if !hasAVX2 || n8 == 0 {
		return 0
	}
	if b == nil {
		axAVX2(&out[0], &a[0], n8, alpha)
	} else {
		axpbyAVX2(&out[0], &a[0], &b[0], n8, alpha, beta)
	}
	return n8
}

// adamWVec does the multiple-of-8 prefix: the reference's tail is the same
// operations.
func adamWVec(p, g, m, v []float32, a AdamWParams) int {
	n8 := len(p) &^ 7
	if !hasAVX2 || n8 == 0 {
		return 0
	}
	adamWAVX2(&p[0], &g[0], &m[0], &v[0], n8, &a)
	return n8
}

// dropoutVec does the multiple-of-8 prefix: the tail is the reference's
// exact integer hash.
func dropoutVec(out, x []float32, base int, th uint64, scale float32, seed uint64) int {
	n8 := len(out) &^ 7
	if !hasAVX512 || n8 == 0 {
		return 0
	}
	dropoutAVX512(&out[0], &x[0], n8, seed+uint64(base)*golden, th, scale)
	return n8
}
