package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// sameBits32 fails unless got and want hold the same float32 bits.
func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: [%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestRecomputeSegments: a chain of L layers (RMSNorm, SwiGLU MLP, dropout,
// residual) trained with each layer a recompute segment gives the loss and
// every gradient of the plan without segments, bit for bit; the plan
// recomputes steps and needs less activation memory. A node in two
// segments is a Compile error.
func TestRecomputeSegments(t *testing.T) {
	const L, N, C, F = 4, 12, 16, 40
	ok := mk(t)
	r := rand.New(rand.NewPCG(41, 42))
	g := gorgonia.NewGraph()
	b := NewBatch(2, N/2)
	b.Seed = 9
	vals := map[*gorgonia.Node][]float32{}
	x := input(g, "x", N, C)
	vals[x] = randn(r, N*C, 1)
	var params []*gorgonia.Node
	var segments [][]*gorgonia.Node
	h := x
	for l := range L {
		nw, wg, wu, wd := input(g, "n"+itoa(l), C), input(g, "wg"+itoa(l), F, C), input(g, "wu"+itoa(l), F, C), input(g, "wd"+itoa(l), C, F)
		vals[nw], vals[wg], vals[wu], vals[wd] = randn(r, C, 1), randn(r, F*C, 0.25), randn(r, F*C, 0.25), randn(r, C*F, 0.2)
		params = append(params, nw, wg, wu, wd)
		start := len(g.AllNodes())
		hn := ok(RMSNorm(h, nw, 1e-6))
		s := ok(SwiGLU(ok(Linear(ok(Dropout(hn, 0.2, b)), wg)), ok(Linear(hn, wu))))
		h = ok(Add(h, ok(Linear(s, wd))))
		segments = append(segments, append([]*gorgonia.Node(nil), g.AllNodes()[start:]...))
	}
	gIn := input(g, "dloss", N, C)
	vals[gIn] = randn(r, N*C, 1)
	cost := ok(Dot(h, gIn))
	grads, err := gorgonia.Grad(cost, append([]*gorgonia.Node{x}, params...)...)
	must(t, err)
	be := kernels.NewCPU()
	run := func(segs [][]*gorgonia.Node) ([][]float32, Stats) {
		e, err := Compile(g, be, Config{Outputs: append([]*gorgonia.Node{cost}, grads...), Late: []*gorgonia.Node{gIn}, Segments: segs})
		must(t, err)
		defer e.Close()
		setAll(t, e, vals)
		must(t, e.Forward())
		must(t, e.Backward())
		var out [][]float32
		for _, n := range append([]*gorgonia.Node{cost}, grads...) {
			out = append(out, read(t, e, n))
		}
		return out, e.Stats()
	}
	want, s0 := run(nil)
	got, s1 := run(segments)
	for i := range want {
		sameBits32(t, "loss and gradients with recompute", got[i], want[i])
	}
	if s0.RecomputeSteps != 0 || s1.RecomputeSteps == 0 || s1.ActivationBytes() >= s0.ActivationBytes() {
		t.Errorf("plans: without segments %+v, with %+v", s0, s1)
	}
	t.Logf("activations %d → %d bytes, %d steps recomputed", s0.ActivationBytes(), s1.ActivationBytes(), s1.RecomputeSteps)
	bad := append([][]*gorgonia.Node(nil), segments...)
	bad[1] = append(bad[1], segments[0][len(segments[0])-1])
	if _, err := Compile(g, be, Config{Outputs: grads, Late: []*gorgonia.Node{gIn}, Segments: bad}); err == nil {
		t.Error("a node in two segments compiled")
	}
}

// TestLogProbsLinearChunks: LogProbsLinear in chunks of a few rows gives
// the log-probs, entropies and the gradient of h of LogProbs(Linear(h, w))
// bit for bit (each in a graph of its own), with f32 and bf16 products,
// and its scratch is two chunks of logits.
func TestLogProbsLinearChunks(t *testing.T) {
	const B, T, C, V = 3, 5, 8, 37
	r := rand.New(rand.NewPCG(43, 44))
	targets := make([]int32, B*T)
	for i := range targets {
		targets[i] = int32(r.IntN(V+1) - 1) // −1: masked
	}
	hv, wv, xv, gv := randn(r, B*T*C, 1), randn(r, V*C, 0.5), randn(r, B*T*C, 1), randn(r, B*T, 1)
	// run builds lp, ent = head(h ⊙ x) (h ⊙ x an intermediate, as the
	// final norm's output is) and returns lp, ent, ∂(lp·g)/∂h and the plan.
	run := func(head func(hh, w *gorgonia.Node, b *Batch) (lp, ent *gorgonia.Node, err error)) ([][]float32, Stats) {
		ok := mk(t)
		g := gorgonia.NewGraph()
		b := NewBatch(B, T)
		b.IDs, b.Targets = make([]int32, B*T), targets
		h, w, x, dlp := input(g, "h", B*T, C), input(g, "w", V, C), input(g, "x", B*T, C), input(g, "dlp", B*T)
		lp, ent, err := head(ok(Mul(h, x)), w, b)
		must(t, err)
		dh, err := gorgonia.Grad(ok(Dot(lp, dlp)), h)
		must(t, err)
		e, err := Compile(g, kernels.NewCPU(), Config{Outputs: []*gorgonia.Node{lp, ent, dh[0]}, Late: []*gorgonia.Node{dlp}})
		must(t, err)
		defer e.Close()
		setAll(t, e, map[*gorgonia.Node][]float32{h: hv, w: wv, x: xv, dlp: gv})
		must(t, e.Forward())
		must(t, e.Backward())
		return [][]float32{read(t, e, lp), read(t, e, ent), read(t, e, dh[0])}, e.Stats()
	}
	for _, bf16 := range []bool{false, true} {
		want, _ := run(func(hh, w *gorgonia.Node, b *Batch) (*gorgonia.Node, *gorgonia.Node, error) {
			lin := Linear
			if bf16 {
				lin = LinearBF16
			}
			logits, err := lin(hh, w)
			if err != nil {
				return nil, nil, err
			}
			return LogProbs(logits, b, true)
		})
		for _, rows := range []int{1, 4, 6, 100} {
			got, st := run(func(hh, w *gorgonia.Node, b *Batch) (*gorgonia.Node, *gorgonia.Node, error) {
				return LogProbsLinear(hh, w, b, rows, bf16)
			})
			for i, what := range []string{"lp", "entropy", "dh"} {
				sameBits32(t, fmt.Sprintf("bf16=%v rows=%d %s", bf16, rows, what), got[i], want[i])
			}
			nc := (B*T + rows - 1) / rows
			if R := (B*T + nc - 1) / nc; st.ScratchElems != int64(2*R*V) {
				t.Errorf("rows=%d: scratch %d elements, want 2·%d·%d", rows, st.ScratchElems, R, V)
			}
		}
	}
}
