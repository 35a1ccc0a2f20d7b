// Package kerneltest is the conformance suite every kernels.Backend passes:
// RunAll(t, backend) checks each op, forward and backward, against the
// float64 references of package kernels, and checks each reference backward
// against central finite differences in float64.
//
// Tolerances. A backend computes in float32, so a result g is accepted
// against the float64 reference w when, elementwise,
//
//	|g − w| ≤ rtol·|w| + atol·max|w|      (max over the whole tensor)
//
// with (rtol, atol) = (1e-5, 1e-6) for elementwise ops and copies,
// (1e-4, 1e-5) for reductions over ≤ 100 terms (matmul, RMSNorm, SumRows,
// Dot, log-softmax, AdamW after several steps) and (1e-4, 1e-4) for
// attention and its backward, whose probabilities go through exp of
// differences of float32 dot products. Token ids (Sample, dropout masks)
// must match exactly; sampling uniforms are chosen away from the decision
// boundaries of the reference. The finite-difference checks perturb each
// input by ±1e-5 and require max|analytic − numeric| ≤ 1e-3·max|numeric|.
package kerneltest

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// RunAll runs the whole conformance suite on b.
func RunAll(t *testing.T, b kernels.Backend) {
	t.Helper()
	RunAllExcept(t, b)
}

// RunAllExcept runs the suite without the named tests: for a mode that
// replaces one of them with its own at a looser tolerance (the CUDA
// backend's bf16 mode runs MatMul through bf16 tensor cores and is checked
// at bf16 tolerances by its own tensor-core test).
func RunAllExcept(t *testing.T, b kernels.Backend, skip ...string) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(h *harness)
	}{
		{"Memory", testMemory},
		{"Errors", testErrors},
		{"MatMul", testMatMul},
		{"MatMulBF16", testMatMulBF16},
		{"MatMulBias", testMatMulBias},
		{"MatMulIO", testMatMulIO},
		{"Embedding", testEmbedding},
		{"RMSNorm", testRMSNorm},
		{"RoPE", testRoPE},
		{"Attention", testAttention},
		{"KVWrite", testKVWrite},
		{"AttentionPaged", testAttentionPaged},
		{"KVScatter", testKVScatter},
		{"BiasRoPEKV", testBiasRoPEKV},
		{"SwiGLU", testSwiGLU},
		{"LogProbs", testLogProbs},
		{"Elementwise", testElementwise},
		{"Dropout", testDropout},
		{"AdamW", testAdamW},
		{"Sample", testSample},
		{"Upload", testUpload},
		{"Empty", testEmpty},
		{"InputsUnchanged", testInputsUnchanged},
		{"Mapped", testMapped},
	} {
		if slices.Contains(skip, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			h := &harness{t: t, b: b, r: rand.New(rand.NewPCG(uint64(len(c.name)), 7))}
			c.fn(h)
			if err := b.Sync(); err != nil {
				t.Fatalf("unexpected backend error after %s: %v", c.name, err)
			}
		})
	}
}

// harness bundles the test, the backend under test and a seeded RNG.
type harness struct {
	t *testing.T
	b kernels.Backend
	r *rand.Rand
}

// vec returns n uniform values in [-s, s), rounded to float32 so the
// backend and the reference see the same inputs.
func (h *harness) vec(n int, s float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(float32((2*h.r.Float64() - 1) * s))
	}
	return x
}

// up allocates a buffer of dtype dt holding x and returns it with the
// values it actually stores (bf16-rounded for BF16).
func (h *harness) up(x []float64, dt kernels.DType) (kernels.Buffer, []float64) {
	buf := h.b.Alloc(dt, len(x))
	f := make([]float32, len(x))
	for i, v := range x {
		f[i] = float32(v)
	}
	h.b.CopyIn(buf, f)
	stored := make([]float64, len(x))
	for i, v := range f {
		if dt == kernels.BF16 {
			v = kernels.Float32FromBF16(kernels.BF16FromFloat32(v))
		}
		stored[i] = float64(v)
	}
	return buf, stored
}

// f32 uploads x as an F32 buffer.
func (h *harness) f32(x []float64) kernels.Buffer {
	b, _ := h.up(x, kernels.F32)
	return b
}

// zeros allocates an F32 buffer of n zeros.
func (h *harness) zeros(n int) kernels.Buffer { return h.b.Alloc(kernels.F32, n) }

// down syncs (failing the test on a backend error) and reads buf back.
func (h *harness) down(buf kernels.Buffer) []float64 {
	h.t.Helper()
	h.sync()
	f := make([]float32, buf.Len())
	h.b.CopyOut(f, buf)
	h.sync()
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

func (h *harness) sync() {
	h.t.Helper()
	if err := h.b.Sync(); err != nil {
		h.t.Fatalf("backend error: %v", err)
	}
}

// wantErr syncs and fails unless the backend recorded an error whose text
// contains sub; a second Sync must then report no error (errors clear).
func (h *harness) wantErr(what, sub string) {
	h.t.Helper()
	err := h.b.Sync()
	if err == nil {
		h.t.Errorf("%s: no error recorded", what)
		return
	}
	if !strings.Contains(err.Error(), sub) {
		h.t.Errorf("%s: error %q does not mention %q", what, err, sub)
	}
	if err := h.b.Sync(); err != nil {
		h.t.Errorf("%s: Sync did not clear the error: %v", what, err)
	}
}

// Tolerances; see the package comment.
const (
	rtolElem, atolElem     = 1e-5, 1e-6
	rtolReduce, atolReduce = 1e-4, 1e-5
	rtolAttn, atolAttn     = 1e-4, 1e-4
)

// approx reports the worst violation of |g−w| ≤ rtol·|w| + atol·max|w|.
func approx(t *testing.T, what string, got, want []float64, rtol, atol float64) {
	t.Helper()
	if len(got) < len(want) {
		t.Errorf("%s: got %d values, want %d", what, len(got), len(want))
		return
	}
	scale := 0.0
	for _, w := range want {
		if !math.IsInf(w, 0) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	worst, at := 0.0, -1
	for i, w := range want {
		g := got[i]
		if math.IsInf(w, 0) || math.IsNaN(w) {
			if !(g == w || math.IsNaN(w) && math.IsNaN(g)) {
				t.Errorf("%s[%d] = %v, want %v", what, i, g, w)
				return
			}
			continue
		}
		lim := rtol*math.Abs(w) + atol*scale
		if math.IsNaN(g) {
			t.Errorf("%s[%d] = NaN, want %v", what, i, w)
			return
		}
		if ex := math.Abs(g-w) - lim; ex > 0 && (at < 0 || ex > worst) {
			worst, at = ex, i
		}
	}
	if at >= 0 {
		t.Errorf("%s[%d] = %.9g, want %.9g (|diff| %.3g over tolerance rtol %g, atol %g·%.3g)",
			what, at, got[at], want[at], math.Abs(got[at]-want[at]), rtol, atol, scale)
	}
}

// fdCheck compares analytic gradients of L = Σ_i w[i]·f()[i] with central
// differences: for each input x (perturbed in place) grads[k] must be dL/dx.
func fdCheck(t *testing.T, what string, f func() []float64, w []float64, inputs, grads [][]float64) {
	t.Helper()
	const eps = 1e-5
	loss := func() float64 {
		s := 0.0
		for i, y := range f() {
			s += w[i] * y
		}
		return s
	}
	for k, x := range inputs {
		num := make([]float64, len(x))
		for i := range x {
			x0 := x[i]
			x[i] = x0 + eps
			lp := loss()
			x[i] = x0 - eps
			lm := loss()
			x[i] = x0
			num[i] = (lp - lm) / (2 * eps)
		}
		maxN, maxD, at := 0.0, 0.0, 0
		for i := range num {
			maxN = math.Max(maxN, math.Abs(num[i]))
			if d := math.Abs(num[i] - grads[k][i]); d > maxD {
				maxD, at = d, i
			}
		}
		if maxD > 1e-3*math.Max(maxN, 1e-8) {
			t.Errorf("%s: input %d: analytic grad[%d] = %.9g, numeric %.9g (rel err %.3g > 1e-3)",
				what, k, at, grads[k][at], num[at], maxD/math.Max(maxN, 1e-8))
		}
	}
}
