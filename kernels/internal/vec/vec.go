// Package vec holds the elementwise loops of argrl's CPU backend that
// profiles show after the matmuls (exp for softmax and log-probs, SwiGLU
// and its backward, AXPBY, the dropout mask), each as a plain-Go reference
// whose doc comment is the loop and, on amd64, an assembly version that is
// bit-identical to it: the same IEEE operations in the same order, no
// fused multiply-add (the references convert explicitly to float32 so the
// Go compiler cannot fuse them either, whatever GOAMD64 is). Every element,
// tails included, goes through the same code, so results do not depend on
// a slice's length or alignment. It is a package of its own because Go
// assembly cannot live in a package that uses cgo (kernels does, with
// -tags openblas).
//
// Shape legend: n elements; slices must have at least n = len(first
// argument) elements (shorter ones panic like an index out of range
// before any assembly runs). The *Vec functions (vec_amd64.go) run the
// assembly on a prefix, or all, of the elements and return how many they
// did; the reference loop does the rest (all of them elsewhere).
package vec

import "math"

// Expf is a float32 exp accurate to about 1 ulp (Cephes' minimax polynomial
// after reduction by n·ln2); results below the smallest normal float32
// flush to 0. The reference of Exp.
func Expf(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if x > 88.72283 {
		return float32(math.Inf(1))
	}
	if x < -87.33654 {
		return 0
	}
	if x != x {
		return x
	}
	t := float32(x*log2e) + 0.5
	n := int32(t)
	if t < float32(n) { // floor for negatives
		n--
	}
	fn := float32(n)
	r := float32(x-float32(fn*c1)) - float32(fn*c2)
	p := float32(1.9875691500e-4)
	p = float32(p*r) + 1.3981999507e-3
	p = float32(p*r) + 8.3334519073e-3
	p = float32(p*r) + 4.1665795894e-2
	p = float32(p*r) + 1.6666665459e-1
	p = float32(p*r) + 5.0000001201e-1
	p = float32(float32(float32(p*r)*r)+r) + 1
	if n > 127 {
		return (p + p) * math.Float32frombits(254<<23)
	}
	return p * math.Float32frombits(uint32(n+127)<<23)
}

// Exp is x[i] = Expf(x[i]) in place:
//
//	for i := range x {
//		x[i] = Expf(x[i])
//	}
func Exp(x []float32) {
	for i := expVec(x); i < len(x); i++ {
		x[i] = Expf(x[i])
	}
}

// ExpShift is out = Expf(x − shift)·scale (the softmax numerators and
// the log-softmax gradient):
//
//	for i := range out {
//		out[i] = Expf(float32(x[i]-shift)) * scale
//	}
//
// out may be x.
func ExpShift(out, x []float32, shift, scale float32) {
	n := len(out)
	x = x[:n]
	for i := expShiftVec(out, x, shift, scale); i < n; i++ {
		out[i] = Expf(float32(x[i]-shift)) * scale
	}
}

// SwiGLU is out = silu(gate)·up, silu(x) = x/(1+e^−x), for i < len(out):
//
//	for i := range out {
//		x := gate[i]
//		out[i] = float32(x/(1+Expf(-x))) * up[i]
//	}
//
// out may be gate or up (same index).
func SwiGLU(out, gate, up []float32) {
	n := len(out)
	g, u := gate[:n], up[:n]
	for i := swigluVec(out, g, u); i < n; i++ {
		x := g[i]
		out[i] = float32(x/(1+Expf(-x))) * u[i]
	}
}

// SwiGLUBackward writes dgate = dout·up·s·(1+x(1−s)) and dup = dout·x·s,
// s = σ(x), x = gate, for i < len(dgate):
//
//	for i := range dgate {
//		x, d := gate[i], dout[i]
//		s := 1 / (1 + Expf(-x))
//		dgate[i] = float32(float32(d*up[i])*s) * (1 + float32(x*(1-s)))
//		dup[i] = float32(d*x) * s
//	}
func SwiGLUBackward(dgate, dup, dout, gate, up []float32) {
	n := len(dgate)
	du, d, g, u := dup[:n], dout[:n], gate[:n], up[:n]
	for i := swigluBwdVec(dgate, du, d, g, u); i < n; i++ {
		x, di := g[i], d[i]
		s := 1 / (1 + Expf(-x))
		dgate[i] = float32(float32(di*u[i])*s) * (1 + float32(x*(1-s)))
		du[i] = float32(di*x) * s
	}
}

// AdamWParams are the scalars of one AdamW update (kernels.AdamWParams
// with the bias corrections folded in): C1 = 1−β1, C2 = 1−β2, BC1 =
// 1−β1ᵗ, RBC2 = 1/√(1−β2ᵗ).
type AdamWParams struct {
	B1, C1, B2, C2, BC1, RBC2, Eps, LR, WD float32
}

// AdamW updates p, m and v in place from g, for i < len(p):
//
//	for i := range p {
//		gi := g[i]
//		mi := float32(b1*m[i]) + float32(c1*gi)
//		vi := float32(b2*v[i]) + float32(float32(c2*gi)*gi)
//		m[i], v[i] = mi, vi
//		den := float32(float32(sqrt(vi))*rbc2) + eps  // sqrt rounded to float32
//		p[i] -= lr * (float32(float32(mi/bc1)/den) + float32(wd*p[i]))
//	}
func AdamW(p, g, m, v []float32, a AdamWParams) {
	n := len(p)
	g, m, v = g[:n], m[:n], v[:n]
	for i := adamWVec(p, g, m, v, a); i < n; i++ {
		gi := g[i]
		mi := float32(a.B1*m[i]) + float32(a.C1*gi)
		vi := float32(a.B2*v[i]) + float32(float32(a.C2*gi)*gi)
		m[i], v[i] = mi, vi
		den := float32(float32(math.Sqrt(float64(vi)))*a.RBC2) + a.Eps
		p[i] -= a.LR * (float32(float32(mi/a.BC1)/den) + float32(a.WD*p[i]))
	}
}

// AXPBY is out = alpha·a + beta·b, or out = alpha·a when b is nil:
//
//	for i := range out {
//		out[i] = float32(alpha*a[i]) + float32(beta*b[i])
//	}
//
// out may be a or b (same index).
func AXPBY(out, a, b []float32, alpha, beta float32) {
	n := len(out)
	a = a[:n]
	if b != nil {
		b = b[:n]
	}
	for i := axpbyVec(out, a, b, alpha, beta); i < n; i++ {
		if b == nil {
			out[i] = alpha * a[i]
		} else {
			out[i] = float32(alpha*a[i]) + float32(beta*b[i])
		}
	}
}

// Dropout is out[i] = x[i]·scale where DropoutUniform(seed, base+i) ≥ p,
// else 0 (the kernels.DropoutUniform counter hash, inlined here):
//
//	for i := range out {
//		z := seed + uint64(base+i)*0x9E3779B97F4A7C15
//		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
//		z ^= z >> 31
//		if float32(z>>40)/(1<<24) >= p {
//			out[i] = x[i] * scale
//		} else {
//			out[i] = 0
//		}
//	}
//
// The assembly compares integers: z>>40 ≥ ⌈p·2²⁴⌉, the same test.
// out may be x.
func Dropout(out, x []float32, base int, p, scale float32, seed uint64) {
	n := len(out)
	x = x[:n]
	i := 0
	if p >= 0 && p <= 1 {
		i = dropoutVec(out, x, base, uint64(math.Ceil(float64(p)*(1<<24))), scale, seed)
	}
	for ; i < n; i++ {
		if dropoutU(seed, base+i) >= p {
			out[i] = x[i] * scale
		} else {
			out[i] = 0
		}
	}
}

const golden = 0x9E3779B97F4A7C15

// dropoutU is kernels.DropoutUniform.
func dropoutU(seed uint64, i int) float32 {
	z := seed + uint64(i)*golden
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float32(z>>40) / (1 << 24)
}
