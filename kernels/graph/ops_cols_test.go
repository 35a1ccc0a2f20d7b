package graph

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// TestSplitColsFusedLinear: one Linear over concatenated weights split by
// SplitCols gives each part of the separate Linears bit for bit on the CPU
// (each output element is one K-long sum whose order does not depend on
// N), with f32 and bf16 products, at a size split over threads; the input
// gradient (one sum over all the parts' outputs instead of three sums
// added) agrees within float32 rounding. The Executor and Gorgonia's
// TapeMachine agree on the fused graph.
func TestSplitColsFusedLinear(t *testing.T) {
	const N, K = 300, 40
	widths := []int{24, 8, 8}
	rng := rand.New(rand.NewPCG(7, 8))
	W := 0
	for _, w := range widths {
		W += w
	}
	xv, wv := randn(rng, N*K, 1), randn(rng, W*K, 0.3)
	gv := make([][]float32, len(widths))
	for i, w := range widths {
		gv[i] = randn(rng, N*w, 1)
	}
	run := func(fused, bf16 bool) (out [][]float32, dx []float32) {
		ok := mk(t)
		lin := Linear
		if bf16 {
			lin = LinearBF16
		}
		g := gorgonia.NewGraph()
		x := input(g, "x", N, K)
		vals := map[*gorgonia.Node][]float32{x: xv}
		var parts []*gorgonia.Node
		if fused {
			wcat := input(g, "w", W, K)
			vals[wcat] = wv
			var err error
			parts, err = SplitCols(ok(lin(x, wcat)), widths...)
			must(t, err)
		} else {
			off := 0
			for i, w := range widths {
				wi := input(g, fmt.Sprintf("w%d", i), w, K)
				vals[wi] = wv[off*K : (off+w)*K]
				parts = append(parts, ok(lin(x, wi)))
				off += w
			}
		}
		var cost *gorgonia.Node
		for i, p := range parts {
			gi := input(g, fmt.Sprintf("g%d", i), N, widths[i])
			vals[gi] = gv[i]
			d := ok(Dot(p, gi))
			if cost == nil {
				cost = d
			} else {
				cost = ok(Add(cost, d))
			}
		}
		grads, err := gorgonia.Grad(cost, x)
		must(t, err)
		e, err := Compile(g, kernels.NewCPU(), Config{Outputs: append(append([]*gorgonia.Node{}, parts...), grads[0])})
		must(t, err)
		defer e.Close()
		setAll(t, e, vals)
		must(t, e.Run())
		for _, p := range parts {
			out = append(out, read(t, e, p))
		}
		if fused && !bf16 {
			tp := tape(t, g, vals, append(append([]*gorgonia.Node{}, parts...), grads[0]))
			for i := range parts {
				sameBits32(t, fmt.Sprintf("tape part %d", i), tp[i], out[i])
			}
			if re := relErr(tp[len(parts)], f64(read(t, e, grads[0])), 1e-6); re > 1e-5 {
				t.Errorf("tape dx: rel err %.3g", re)
			}
		}
		return out, read(t, e, grads[0])
	}
	for _, bf16 := range []bool{false, true} {
		want, wdx := run(false, bf16)
		got, gdx := run(true, bf16)
		for i := range widths {
			sameBits32(t, fmt.Sprintf("bf16=%v part %d", bf16, i), got[i], want[i])
		}
		if e := relErr(gdx, f64(wdx), 1e-6); e > 1e-5 {
			t.Errorf("bf16=%v dx: rel err %.3g between fused and separate", bf16, e)
		}
	}
	if _, err := SplitCols(input(gorgonia.NewGraph(), "y", 4, 10), 4, 4); err == nil {
		t.Error("widths summing to 8 accepted for 10 columns")
	}
}

// TestLinearBias: LinearBias gives AddBias(Linear(x, w), b) and the same
// gradients of x and w bit for bit on the CPU, with f32 and bf16 products.
func TestLinearBias(t *testing.T) {
	const N, K, M = 70, 24, 18
	rng := rand.New(rand.NewPCG(9, 10))
	xv, wv, bv, gv := randn(rng, N*K, 1), randn(rng, M*K, 0.3), randn(rng, M, 1), randn(rng, N*M, 1)
	run := func(fused, bf16 bool) [][]float32 {
		ok := mk(t)
		g := gorgonia.NewGraph()
		x, w, b, gi := input(g, "x", N, K), input(g, "w", M, K), input(g, "b", M), input(g, "g", N, M)
		var y *gorgonia.Node
		if fused {
			y = ok(LinearBias(x, w, b, bf16))
		} else {
			lin := Linear
			if bf16 {
				lin = LinearBF16
			}
			y = ok(AddBias(ok(lin(x, w)), b))
		}
		grads, err := gorgonia.Grad(ok(Dot(y, gi)), x, w)
		must(t, err)
		e, err := Compile(g, kernels.NewCPU(), Config{Outputs: append([]*gorgonia.Node{y}, grads...)})
		must(t, err)
		defer e.Close()
		setAll(t, e, map[*gorgonia.Node][]float32{x: xv, w: wv, b: bv, gi: gv})
		must(t, e.Run())
		return [][]float32{read(t, e, y), read(t, e, grads[0]), read(t, e, grads[1])}
	}
	for _, bf16 := range []bool{false, true} {
		want, got := run(false, bf16), run(true, bf16)
		for i, what := range []string{"y", "dx", "dw"} {
			sameBits32(t, fmt.Sprintf("bf16=%v %s", bf16, what), got[i], want[i])
		}
	}
	if _, err := LinearBias(input(gorgonia.NewGraph(), "x", 2, 3), input(gorgonia.NewGraph(), "w", 4, 3), input(gorgonia.NewGraph(), "b", 3), false); err == nil {
		t.Error("a bias of 3 for 4 outputs accepted")
	}
}
