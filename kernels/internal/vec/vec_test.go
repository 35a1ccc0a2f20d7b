package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Each assembly path against its Go reference, bit for bit, on every
// length 0..40 and a few long ones (tails included), random inputs and
// the special values of exp.

func same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// expInputs: a sweep over [-100, 100], random bit patterns, and the edges
// of Expf (overflow and underflow thresholds, n = 128, subnormal results,
// t on integers, ±0, ±Inf, NaN) with their neighbours.
func expInputs() []float32 {
	var xs []float32
	for x := -100.0; x <= 100; x += 1.0 / 4096 {
		xs = append(xs, float32(x))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1<<18; i++ {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	edges := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		88.72283, -87.33654, 88.3762626647949, 88.5, 88.7, -87.3, -87, -86.5, -0.5 / 1.44269504, 0.5 / 1.44269504,
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1e-30, -1e-30}
	for _, e := range edges {
		u := math.Float32bits(e)
		for d := uint32(0); d < 64; d++ {
			xs = append(xs, math.Float32frombits(u+d), math.Float32frombits(u-d))
		}
	}
	for k := -130; k <= 130; k++ { // x where x·log2e + 0.5 is near an integer
		x := (float64(k) - 0.5) / 1.44269504088896341
		u := math.Float32bits(float32(x))
		for d := uint32(0); d < 8; d++ {
			xs = append(xs, math.Float32frombits(u+d), math.Float32frombits(u-d))
		}
	}
	return xs
}

func TestExpMatchesRef(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no assembly in this build or on this CPU: the function is its reference")
	}
	xs := expInputs()
	got := append([]float32(nil), xs...)
	Exp(got)
	for i, x := range xs {
		if want := Expf(x); !same(got[i], want) {
			t.Fatalf("Exp(%v) = %v (%#x), Expf %v (%#x)", x, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
	for n := 0; n <= 40; n++ { // tails through the padded copy
		x := append([]float32(nil), xs[1000:1000+n]...)
		Exp(x)
		for i := range x {
			if !same(x[i], Expf(xs[1000+i])) {
				t.Fatalf("n=%d: Exp[%d] differs", n, i)
			}
		}
	}
}

// TestExpfAccuracy: within 2 ulp of math.Exp where the result is normal.
func TestExpfAccuracy(t *testing.T) {
	for _, x := range expInputs() {
		got, want := Expf(x), math.Exp(float64(x))
		if x != x {
			if got == got {
				t.Fatalf("Expf(NaN) = %v", got)
			}
			continue
		}
		if want > math.MaxFloat32 || want < 0x1p-126 {
			continue
		}
		if d := math.Abs(float64(got)-want) / want; d > 2.5e-7 {
			t.Fatalf("Expf(%v) = %v, exp %v (rel err %.2g)", x, got, want, d)
		}
	}
}

func lengths() []int {
	ns := []int{1000, 1003, 4096 + 5}
	for n := 0; n <= 40; n++ {
		ns = append(ns, n)
	}
	return ns
}

func randIn(r *rand.Rand, n int, scale float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = (r.Float32()*2 - 1) * scale
	}
	return x
}

func TestSwiGLUMatchesRef(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no assembly in this build or on this CPU: the function is its reference")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range lengths() {
		g, u, d := randIn(r, n, 12), randIn(r, n, 3), randIn(r, n, 2)
		if n > 5 {
			g[0], g[1], g[2], g[3] = 100, -100, 0, float32(math.NaN())
		}
		out, dg, du := make([]float32, n), make([]float32, n), make([]float32, n)
		SwiGLU(out, g, u)
		SwiGLUBackward(dg, du, d, g, u)
		for i := 0; i < n; i++ {
			x := g[i]
			want := float32(x/(1+Expf(-x))) * u[i]
			s := 1 / (1 + Expf(-x))
			wdg := float32(float32(d[i]*u[i])*s) * (1 + float32(x*(1-s)))
			wdu := float32(d[i]*x) * s
			if !same(out[i], want) || !same(dg[i], wdg) || !same(du[i], wdu) {
				t.Fatalf("n=%d i=%d x=%v: SwiGLU %v/%v, dgate %v/%v, dup %v/%v (got/want)", n, i, x, out[i], want, dg[i], wdg, du[i], wdu)
			}
		}
		SwiGLU(g, g, u) // in place over gate
		for i := range g {
			if !same(g[i], out[i]) {
				t.Fatalf("n=%d: in-place SwiGLU differs at %d", n, i)
			}
		}
	}
}

func TestAXPBYMatchesRef(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no assembly in this build or on this CPU: the function is its reference")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range lengths() {
		a, b := randIn(r, n, 5), randIn(r, n, 5)
		for _, ab := range [][2]float32{{1, 1}, {0.5, -2}, {3, 0}, {-1e-3, 7}} {
			out := make([]float32, n)
			bb := b
			if ab[1] == 0 {
				bb = nil
			}
			AXPBY(out, a, bb, ab[0], ab[1])
			for i := range out {
				want := ab[0] * a[i]
				if bb != nil {
					want = float32(ab[0]*a[i]) + float32(ab[1]*b[i])
				}
				if !same(out[i], want) {
					t.Fatalf("n=%d alpha,beta=%v: out[%d] = %v, want %v", n, ab, i, out[i], want)
				}
			}
		}
	}
}

func TestDropoutMatchesRef(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no assembly in this build or on this CPU: the function is its reference")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range lengths() {
		x := randIn(r, n, 4)
		for _, p := range []float32{0, 0.05, 0.1, 0.5, 0.999, 1, 1.0 / (1 << 24), 3.0 / (1 << 24)} {
			for _, base := range []int{0, 7, 1 << 40} {
				scale := float32(0)
				if p < 1 {
					scale = float32(1 / (1 - float64(p)))
				}
				seed := r.Uint64()
				out := make([]float32, n)
				Dropout(out, x, base, p, scale, seed)
				for i := range out {
					want := float32(0)
					if dropoutU(seed, base+i) >= p {
						want = x[i] * scale
					}
					if !same(out[i], want) {
						t.Fatalf("n=%d p=%v base=%d: out[%d] = %v, want %v", n, p, base, i, out[i], want)
					}
				}
			}
		}
	}
}

// TestDropoutThreshold: the integer test z>>40 ≥ ⌈p·2²⁴⌉ equals the float
// test z>>40 / 2²⁴ ≥ p at and around every boundary used by the assembly.
func TestDropoutThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 1<<16; i++ {
		p := r.Float32()
		if i%4 == 0 {
			p = float32(r.IntN(1<<24)) / (1 << 24)
		}
		th := uint64(math.Ceil(float64(p) * (1 << 24)))
		for _, k := range []uint64{th - 1, th, th + 1} {
			if k >= 1<<24 {
				continue
			}
			if (k >= th) != (float32(k)/(1<<24) >= p) {
				t.Fatalf("p=%v k=%d th=%d", p, k, th)
			}
		}
	}
}

func TestExpShiftMatchesRef(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no assembly in this build or on this CPU: the function is its reference")
	}
	xs := expInputs()
	for _, c := range [][2]float32{{0, 1}, {3.5, -0.25}, {-20, 2}, {88, 1e-3}, {float32(math.Inf(1)), 1}} {
		got := make([]float32, len(xs))
		ExpShift(got, xs, c[0], c[1])
		for i, x := range xs {
			if want := Expf(float32(x-c[0])) * c[1]; !same(got[i], want) {
				t.Fatalf("ExpShift(%v, shift %v, scale %v) = %v, reference %v", x, c[0], c[1], got[i], want)
			}
		}
	}
	for n := 0; n <= 40; n++ { // tails through the padded copy, and in place
		x := expInputs()[1000 : 1000+n]
		got, want := make([]float32, n), make([]float32, n)
		ExpShift(got, x, 1.5, 0.75)
		for i := range want {
			want[i] = Expf(float32(x[i]-1.5)) * 0.75
		}
		ExpShift(x, x, 1.5, 0.75)
		for i := range want {
			if !same(got[i], want[i]) || !same(x[i], want[i]) {
				t.Fatalf("n=%d: ExpShift[%d] = %v (in place %v), reference %v", n, i, got[i], x[i], want[i])
			}
		}
	}
}

func TestAdamWMatchesRef(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no assembly in this build or on this CPU: the function is its reference")
	}
	r := rand.New(rand.NewPCG(7, 8))
	a := AdamWParams{B1: 0.9, C1: 1 - float32(0.9), B2: 0.999, C2: 1 - float32(0.999), BC1: 0.271, RBC2: 14.2, Eps: 1e-8, LR: 3e-4, WD: 0.01}
	for _, n := range []int{0, 1, 7, 8, 9, 31, 1000} {
		p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range p {
			p[i], g[i], m[i] = float32(r.NormFloat64()), float32(r.NormFloat64()*1e-3), float32(r.NormFloat64()*1e-4)
			v[i] = float32(r.Float64() * 1e-6)
			if i%13 == 0 {
				g[i], m[i], v[i] = 0, 0, 0 // den = eps
			}
		}
		wp, wm, wv := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
		for i := range wp { // the reference loop
			gi := g[i]
			mi := float32(a.B1*wm[i]) + float32(a.C1*gi)
			vi := float32(a.B2*wv[i]) + float32(float32(a.C2*gi)*gi)
			wm[i], wv[i] = mi, vi
			den := float32(float32(math.Sqrt(float64(vi)))*a.RBC2) + a.Eps
			wp[i] -= a.LR * (float32(float32(mi/a.BC1)/den) + float32(a.WD*wp[i]))
		}
		AdamW(p, g, m, v, a)
		for i := range p {
			if !same(p[i], wp[i]) || !same(m[i], wm[i]) || !same(v[i], wv[i]) {
				t.Fatalf("n=%d: AdamW[%d] = (%v, %v, %v), reference (%v, %v, %v)", n, i, p[i], m[i], v[i], wp[i], wm[i], wv[i])
			}
		}
	}
}
