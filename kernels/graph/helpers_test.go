package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// input declares a float32 input node of the given shape.
func input(g *gorgonia.ExprGraph, name string, shape ...int) *gorgonia.Node {
	return gorgonia.NewTensor(g, gorgonia.Float32, len(shape), gorgonia.WithShape(shape...), gorgonia.WithName(name))
}

func randn(r *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64() * scale)
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mk(t)(op(...)) fails t on an op constructor's error.
func mk(t testing.TB) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		must(t, err)
		return n
	}
}

// tape runs g under Gorgonia's TapeMachine with the given input values and
// returns the values of want.
func tape(t testing.TB, g *gorgonia.ExprGraph, vals map[*gorgonia.Node][]float32, want []*gorgonia.Node) [][]float32 {
	t.Helper()
	for n, v := range vals {
		must(t, gorgonia.Let(n, tensor.New(tensor.WithShape(n.Shape().Clone()...), tensor.WithBacking(append([]float32(nil), v...)))))
	}
	m := gorgonia.NewTapeMachine(g)
	defer m.Close()
	must(t, m.RunAll())
	out := make([][]float32, len(want))
	for i, n := range want {
		f, err := float32s(n.Value())
		must(t, err)
		out[i] = append([]float32(nil), f...)
	}
	return out
}

// set copies vals into an executor's inputs.
func setAll(t testing.TB, e *Executor, vals map[*gorgonia.Node][]float32) {
	t.Helper()
	for n, v := range vals {
		must(t, e.Set(n, v))
	}
}

func read(t testing.TB, e *Executor, n *gorgonia.Node) []float32 {
	t.Helper()
	v, err := e.Read(n)
	must(t, err)
	return v
}

// maxAbs is max_i |a[i]|.
func maxAbs[T float32 | float64](a []T) float64 {
	m := 0.0
	for _, v := range a {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// relErr is max_i |got[i] − want[i]| / max(max_i |want[i]|, floor): the
// error relative to the tensor's scale.
func relErr[A, B float32 | float64](got []A, want []B, floor float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range got {
		x := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(x) {
			return math.Inf(1)
		}
		d = math.Max(d, x)
	}
	return d / math.Max(maxAbs(want), floor)
}

func f64(a []float32) []float64 {
	out := make([]float64, len(a))
	for i, v := range a {
		out[i] = float64(v)
	}
	return out
}
