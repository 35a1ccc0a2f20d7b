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

// TestLoRAUpColsBitIdentical: LoRAUpCols over a fused output y [N, 120]
// with two parts (columns [0, 70) and [70, 120)) gives each block, and
// the gradients of y, of each t and of each b, the bits of SplitCols then
// LoRAUp per part (each a graph of its own), for an exact scale, an
// inexact one, with f32 and bf16 products; with scale 0 its output is y
// bit for bit (LoRAUp's y + 0·u differs from y only at −0, which this y
// does not hold).
func TestLoRAUpColsBitIdentical(t *testing.T) {
	const N, r = 300, 8
	widths := []int{70, 50}
	W := widths[0] + widths[1]
	rng := rand.New(rand.NewPCG(47, 48))
	yv, gv := randn(rng, N*W, 1), randn(rng, N*W, 1)
	tv := [][]float32{randn(rng, N*r, 1), randn(rng, N*r, 1)}
	bv := [][]float32{randn(rng, widths[0]*r, 0.3), randn(rng, widths[1]*r, 0.3)}
	run := func(cols, bf16 bool, s float32) [][]float32 {
		ok := mk(t)
		g := gorgonia.NewGraph()
		y0, gIn := input(g, "y", N, W), input(g, "g", N, W)
		ts := []*gorgonia.Node{input(g, "t0", N, r), input(g, "t1", N, r)}
		bs := []*gorgonia.Node{input(g, "b0", widths[0], r), input(g, "b1", widths[1], r)}
		y := ok(Add(y0, y0))
		scale := s
		var outs []*gorgonia.Node // the two blocks
		var loss *gorgonia.Node
		if cols {
			out := ok(LoRAUpCols(y, []int{0, widths[0]}, ts, bs, &scale, bf16))
			loss = ok(Dot(out, gIn))
			ps, err := SplitCols(out, widths...)
			must(t, err)
			outs = ps
		} else {
			ps, err := SplitCols(y, widths...)
			must(t, err)
			gs, err := SplitCols(gIn, widths...)
			must(t, err)
			for i := range ps {
				outs = append(outs, ok(LoRAUp(ps[i], ts[i], bs[i], &scale, bf16)))
			}
			loss = ok(Add(ok(Dot(outs[0], gs[0])), ok(Dot(outs[1], gs[1]))))
		}
		grads, err := gorgonia.Grad(loss, y0, ts[0], ts[1], bs[0], bs[1])
		must(t, err)
		e, err := Compile(g, kernels.NewCPU(), Config{Outputs: append(outs, grads...), Late: []*gorgonia.Node{gIn}})
		must(t, err)
		defer e.Close()
		setAll(t, e, map[*gorgonia.Node][]float32{y0: yv, gIn: gv, ts[0]: tv[0], ts[1]: tv[1], bs[0]: bv[0], bs[1]: bv[1]})
		must(t, e.Forward())
		must(t, e.Backward())
		var res [][]float32
		for _, n := range append(outs, grads...) {
			res = append(res, read(t, e, n))
		}
		return res
	}
	for _, bf16 := range []bool{false, true} {
		for _, s := range []float32{2, 1.5} {
			want, got := run(false, bf16, s), run(true, bf16, s)
			for i, what := range []string{"gate block", "up block", "dy", "dt0", "dt1", "db0", "db1"} {
				sameBits32(t, fmt.Sprintf("bf16=%v s=%v %s", bf16, s, what), got[i], want[i])
			}
		}
		got := run(true, bf16, 0)
		for i, w := range widths {
			block := make([]float32, 0, N*w)
			off := []int{0, widths[0]}[i]
			for n := range N {
				for j := range w {
					block = append(block, 2*yv[n*W+off+j])
				}
			}
			sameBits32(t, fmt.Sprintf("bf16=%v s=0 block %d", bf16, i), got[i], block)
		}
	}
}
