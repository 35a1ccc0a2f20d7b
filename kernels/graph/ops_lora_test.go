package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// TestLoRAUpBitIdentical: LoRAUp gives the output and the gradients of y,
// t and b of Add(y, ScaleVar(Linear(t, b), s)) bit for bit (each in a graph
// of its own), for an exact scale (2), an inexact one (1.5) and 0, with
// f32 and bf16 products, on a product large enough to be split over
// threads.
func TestLoRAUpBitIdentical(t *testing.T) {
	const N, M, r = 600, 70, 8
	rng := rand.New(rand.NewPCG(45, 46))
	yv, tv, bv, gv := randn(rng, N*M, 1), randn(rng, N*r, 1), randn(rng, M*r, 0.3), randn(rng, N*M, 1)
	for i := 0; i < 64; i++ {
		yv[i] = float32(negZero()) // y + 0·u turns −0 into +0 where u > 0
	}
	run := func(fused, bf16 bool, s float32) [][]float32 {
		ok := mk(t)
		g := gorgonia.NewGraph()
		y0, t0, b0, gIn := input(g, "y", N, M), input(g, "t", N, r), input(g, "b", M, r), input(g, "g", N, M)
		y := ok(Add(y0, y0)) // an intermediate, as in a model (−0 stays −0)
		scale := s
		var out *gorgonia.Node
		if fused {
			out = ok(LoRAUp(y, t0, b0, &scale, bf16))
		} else {
			lin := Linear
			if bf16 {
				lin = LinearBF16
			}
			out = ok(Add(y, ok(ScaleVar(ok(lin(t0, b0)), &scale))))
		}
		grads, err := gorgonia.Grad(ok(Dot(out, gIn)), y0, t0, b0)
		must(t, err)
		e, err := Compile(g, kernels.NewCPU(), Config{Outputs: append([]*gorgonia.Node{out}, grads...), Late: []*gorgonia.Node{gIn}})
		must(t, err)
		defer e.Close()
		setAll(t, e, map[*gorgonia.Node][]float32{y0: yv, t0: tv, b0: bv, gIn: gv})
		must(t, e.Forward())
		must(t, e.Backward())
		res := [][]float32{read(t, e, out)}
		for _, n := range grads {
			res = append(res, read(t, e, n))
		}
		return res
	}
	for _, bf16 := range []bool{false, true} {
		for _, s := range []float32{2, 1.5, 0} {
			want, got := run(false, bf16, s), run(true, bf16, s)
			for i, what := range []string{"out", "dy", "dt", "db"} {
				sameBits32(t, fmt.Sprintf("bf16=%v s=%v %s", bf16, s, what), got[i], want[i])
			}
		}
	}
	if !exactScale(2) || !exactScale(1) || exactScale(1.5) || exactScale(0.5) || exactScale(0) || exactScale(1<<26) {
		t.Error("exactScale")
	}
}

func negZero() float64 { return math.Copysign(0, -1) }
