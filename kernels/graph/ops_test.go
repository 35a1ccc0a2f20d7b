package graph

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// Gradient check of every op through the Executor on tiny shapes.
//
// For an op y = f(x...), the test builds cost = Dot(y, r) with r a Late
// input, takes gorgonia.Grad, and checks:
//   - the Executor's cost equals Σ y·r computed on the host;
//   - the Executor's y, cost and gradients equal the TapeMachine's (the same
//     kernels run through Do, so only summation order may differ: 1e-5);
//   - each gradient element equals the central finite difference
//     (f(x+ε) − f(x−ε))/2ε of Σ y·r, where f runs the Executor's Forward
//     phase alone in float32 and the sum is taken in float64. With ε = 1e-2
//     and inputs of unit scale, float32 rounding and the O(ε²) truncation
//     give errors near 1e-4 of the gradient's scale; the tolerance is
//     fdTol = 2e-3 of max|finite difference| (documented float32 tolerance,
//     where kerneltest checks the float64 references at 1e-3).
const (
	fdEps = 1e-2
	fdTol = 2e-3
)

type inSpec struct {
	name  string
	shape []int
	diff  bool
	data  func(r *rand.Rand) []float32 // nil: N(0, 1)
}

type opCase struct {
	name  string
	B, T  int
	in    []inSpec
	batch func(b *Batch, r *rand.Rand)
	build func(t *testing.T, x []*gorgonia.Node, b *Batch) *gorgonia.Node
}

func ropeData(cos bool) func(*rand.Rand) []float32 {
	return func(*rand.Rand) []float32 {
		c, s := kernels.RopeTables(kernels.RopeInvFreq(4, 10000), 16)
		if cos {
			return c
		}
		return s
	}
}

func opCases() []opCase {
	in := func(name string, diff bool, shape ...int) inSpec { return inSpec{name: name, shape: shape, diff: diff} }
	mm := func(ta, tb bool, as, bs []int) opCase {
		return opCase{name: "MatMul", B: 1, T: 1, in: []inSpec{{name: "a", shape: as, diff: true}, {name: "b", shape: bs, diff: true}},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node {
				return mk(t)(MatMul(x[0], x[1], ta, tb, 0.5))
			}}
	}
	scale := float32(0.37)
	return []opCase{
		{name: "Linear", B: 2, T: 3, in: []inSpec{in("x", true, 2, 3, 4), in("w", true, 5, 4)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(Linear(x[0], x[1])) }},
		mm(false, false, []int{3, 4}, []int{4, 5}),
		mm(true, false, []int{4, 3}, []int{4, 5}),
		mm(false, true, []int{3, 4}, []int{5, 4}),
		mm(true, true, []int{4, 3}, []int{5, 4}),
		mm(false, false, []int{2, 3, 4}, []int{2, 4, 5}),
		mm(true, true, []int{2, 4, 3}, []int{2, 5, 4}),
		{name: "AddBias", B: 2, T: 3, in: []inSpec{in("x", true, 6, 4), in("bias", true, 4)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(AddBias(x[0], x[1])) }},
		{name: "Embedding", B: 2, T: 3, in: []inSpec{in("table", true, 7, 4)},
			batch: func(b *Batch, _ *rand.Rand) { b.IDs = []int32{3, 0, 3, 6, 1, 3} },
			build: func(t *testing.T, x []*gorgonia.Node, b *Batch) *gorgonia.Node { return mk(t)(Embedding(x[0], b)) }},
		{name: "RMSNorm", B: 2, T: 3, in: []inSpec{in("x", true, 6, 8), in("w", true, 8)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node {
				return mk(t)(RMSNorm(x[0], x[1], 1e-5))
			}},
		{name: "RMSNorm/per-head", B: 2, T: 3, in: []inSpec{in("x", true, 6, 8), in("w", true, 4)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node {
				return mk(t)(RMSNorm(x[0], x[1], 1e-5))
			}},
		{name: "RoPE", B: 2, T: 3,
			in:    []inSpec{in("x", true, 6, 8), {name: "cos", shape: []int{16, 2}, data: ropeData(true)}, {name: "sin", shape: []int{16, 2}, data: ropeData(false)}},
			batch: func(b *Batch, _ *rand.Rand) { b.Pos = []int32{5, 6, 7, 0, 1, 2} },
			build: func(t *testing.T, x []*gorgonia.Node, b *Batch) *gorgonia.Node {
				return mk(t)(RoPE(x[0], x[1], x[2], b, 2))
			}},
		{name: "Attention", B: 2, T: 4, in: []inSpec{in("q", true, 8, 16), in("k", true, 8, 8), in("v", true, 8, 8)},
			batch: func(b *Batch, _ *rand.Rand) { b.Lens = []int32{4, 3} },
			build: func(t *testing.T, x []*gorgonia.Node, b *Batch) *gorgonia.Node {
				return mk(t)(Attention(x[0], x[1], x[2], b, 4, 2))
			}},
		{name: "SwiGLU", B: 1, T: 1, in: []inSpec{in("gate", true, 6, 5), in("up", true, 6, 5)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(SwiGLU(x[0], x[1])) }},
		{name: "SwiGLUFused", B: 1, T: 1, in: []inSpec{in("gu", true, 6, 10)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(SwiGLUFused(x[0])) }},
		{name: "AXPBY", B: 1, T: 1, in: []inSpec{in("a", true, 4, 5), in("b", true, 4, 5)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node {
				return mk(t)(AXPBY(x[0], x[1], 0.7, -1.3))
			}},
		{name: "Scale", B: 1, T: 1, in: []inSpec{in("x", true, 4, 5)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(Scale(x[0], 2.5)) }},
		{name: "ScaleVar", B: 1, T: 1, in: []inSpec{in("x", true, 4, 5)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(ScaleVar(x[0], &scale)) }},
		{name: "Mul", B: 1, T: 1, in: []inSpec{in("a", true, 4, 5), in("b", true, 4, 5)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(Mul(x[0], x[1])) }},
		{name: "Dropout", B: 2, T: 3, in: []inSpec{in("x", true, 6, 8)},
			batch: func(b *Batch, _ *rand.Rand) { b.Seed = 42 },
			build: func(t *testing.T, x []*gorgonia.Node, b *Batch) *gorgonia.Node { return mk(t)(Dropout(x[0], 0.3, b)) }},
		{name: "LogProbs", B: 2, T: 3, in: []inSpec{in("logits", true, 6, 7)},
			batch: func(b *Batch, _ *rand.Rand) { b.Targets = []int32{2, 6, -1, 0, 2, 5} },
			build: func(t *testing.T, x []*gorgonia.Node, b *Batch) *gorgonia.Node {
				lp, _, err := LogProbs(x[0], b, true)
				must(t, err)
				return lp
			}},
		{name: "Dot", B: 1, T: 1, in: []inSpec{in("a", true, 9), in("b", true, 9)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node { return mk(t)(Dot(x[0], x[1])) }},
		{name: "Reshape+View", B: 1, T: 1, in: []inSpec{in("x", true, 6, 4)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node {
				r := mk(t)(Reshape(x[0], 4, 6))
				v := mk(t)(view(r, 5, []int{3, 4}, true))
				return mk(t)(Mul(v, v))
			}},
		{name: "Accumulation", B: 1, T: 1, in: []inSpec{in("x", true, 6, 4), in("w", true, 4, 4)},
			build: func(t *testing.T, x []*gorgonia.Node, _ *Batch) *gorgonia.Node {
				h := mk(t)(Linear(x[0], x[1]))
				return mk(t)(Mul(h, x[0])) // x feeds two consumers: Grad inserts "+"
			}},
	}
}

func TestOpGradients(t *testing.T) {
	be := kernels.NewCPU()
	for ci, c := range opCases() {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 1))
			g := gorgonia.NewGraph()
			b := NewBatch(c.B, c.T)
			if c.batch != nil {
				c.batch(b, r)
			}
			xs := make([]*gorgonia.Node, len(c.in))
			vals := map[*gorgonia.Node][]float32{}
			var wrt []*gorgonia.Node
			for i, s := range c.in {
				xs[i] = input(g, s.name, s.shape...)
				if s.data != nil {
					vals[xs[i]] = s.data(r)
				} else {
					vals[xs[i]] = randn(r, size(xs[i]), 1)
				}
				if s.diff {
					wrt = append(wrt, xs[i])
				}
			}
			y := c.build(t, xs, b)
			rn := input(g, "r", size(y))
			rv := randn(r, size(y), 1)
			cost := mk(t)(Dot(y, rn))
			grads, err := gorgonia.Grad(cost, wrt...)
			must(t, err)

			e, err := Compile(g, be, Config{Outputs: append([]*gorgonia.Node{y, cost}, grads...), Late: []*gorgonia.Node{rn}})
			must(t, err)
			defer e.Close()
			setAll(t, e, vals)
			must(t, e.Forward())
			yv := read(t, e, y)
			must(t, e.Set(rn, rv))
			must(t, e.Backward())
			costv := read(t, e, cost)[0]
			f := func(y []float32) float64 {
				s := 0.0
				for i := range y {
					s += float64(y[i]) * float64(rv[i])
				}
				return s
			}
			if d := relErr([]float32{costv}, []float64{f(yv)}, 1e-3); d > 1e-5 {
				t.Errorf("cost %v, host Σ y·r %v", costv, f(yv))
			}
			gv := make([][]float32, len(grads))
			for i, gn := range grads {
				gv[i] = read(t, e, gn)
			}

			// TapeMachine on the same graph.
			tv := map[*gorgonia.Node][]float32{rn: rv}
			for n, v := range vals {
				tv[n] = v
			}
			want := tape(t, g, tv, append([]*gorgonia.Node{y, cost}, grads...))
			if d := relErr(yv, want[0], 1e-3); d > 1e-5 {
				t.Errorf("y: executor vs TapeMachine rel err %.2e", d)
			}
			if d := relErr([]float32{costv}, want[1], 1e-3); d > 1e-5 {
				t.Errorf("cost: executor %v vs TapeMachine %v", costv, want[1])
			}
			for i := range grads {
				if d := relErr(gv[i], want[2+i], 1e-3); d > 1e-5 {
					t.Errorf("grad %s: executor vs TapeMachine rel err %.2e", wrt[i].Name(), d)
				}
			}

			// Finite differences through the executor's Forward.
			for i, x := range wrt {
				base := vals[x]
				fd := make([]float64, len(base))
				p := append([]float32(nil), base...)
				for j := range p {
					p[j] = base[j] + fdEps
					must(t, e.Set(x, p))
					must(t, e.Forward())
					fp := f(read(t, e, y))
					p[j] = base[j] - fdEps
					must(t, e.Set(x, p))
					must(t, e.Forward())
					fm := f(read(t, e, y))
					p[j] = base[j]
					fd[j] = (fp - fm) / (2 * fdEps)
				}
				must(t, e.Set(x, base))
				d := relErr(gv[i], fd, 1e-3)
				t.Logf("grad %-6s max|g| %.3g  finite-difference rel err %.2e", x.Name(), maxAbs(fd), d)
				if d > fdTol {
					t.Errorf("grad %s: rel err %.2e vs finite differences > %.0e\n got %v\nwant %v", x.Name(), d, fdTol, gv[i], fd)
				}
			}
		})
	}
}
