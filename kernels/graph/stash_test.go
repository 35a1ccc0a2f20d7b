package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// TestStashBF16: the same training graph compiled with and without
// Config.StashBF16 over shared weights. The forward results are
// bit-identical (stashing happens after an activation's last forward use),
// the gradients are those of activations rounded to bf16 (within 2e-2 of
// the float32 plan, and not all identical: backward did read the stash).
func TestStashBF16(t *testing.T) {
	d := blockDims{B: 2, T: 16, C: 64, Hq: 4, Hkv: 2, D: 16, F: 128, V: 50}
	bg := buildBlock(t, d, true, 5)
	be := kernels.NewCPU()
	bind := map[*gorgonia.Node]kernels.Buffer{}
	for _, n := range append(bg.params, bg.cos, bg.sin) {
		bind[n] = be.Alloc(kernels.F32, size(n))
		be.CopyIn(bind[n], bg.vals[n])
	}
	outs := append([]*gorgonia.Node{bg.out, bg.cost}, bg.grads...)
	plain, err := Compile(bg.g, be, Config{Outputs: outs, Late: []*gorgonia.Node{bg.gIn}, Bind: bind})
	must(t, err)
	defer plain.Close()
	stashed, err := Compile(bg.g, be, Config{Outputs: outs, Late: []*gorgonia.Node{bg.gIn}, Bind: bind, StashBF16: true})
	must(t, err)
	defer stashed.Close()
	ps, ss := plain.Stats(), stashed.Stats()
	t.Logf("float32 plan: %d slot elems; stashed: %d slot elems + %d bf16 (%d activations), %d+%d steps vs %d+%d",
		ps.SlotElems, ss.SlotElems, ss.StashElems, ss.Stashed, ss.ForwardSteps, ss.BackwardSteps, ps.ForwardSteps, ps.BackwardSteps)
	if packs := ss.ForwardSteps - ps.ForwardSteps; ss.Stashed == 0 || packs < ss.Stashed || ss.BackwardSteps-ps.BackwardSteps != packs {
		t.Fatalf("stash plan: %d stashed, steps %d+%d (float32 plan %d+%d): want a pack and an unpack each",
			ss.Stashed, ss.ForwardSteps, ss.BackwardSteps, ps.ForwardSteps, ps.BackwardSteps)
	}

	r := rand.New(rand.NewPCG(2, 2))
	fillBatch(bg.b, d.V, []int32{16, 11}, r)
	gv := randn(r, d.B*d.T, 1)
	var res [2][][]float32
	for k, e := range []*Executor{plain, stashed} {
		must(t, e.Forward())
		lp := read(t, e, bg.out)
		must(t, e.Set(bg.gIn, gv))
		must(t, e.Backward())
		res[k] = append(res[k], lp)
		for _, n := range bg.grads {
			res[k] = append(res[k], read(t, e, n))
		}
	}
	for i, v := range res[0][0] {
		if math.Float32bits(v) != math.Float32bits(res[1][0][i]) {
			t.Fatalf("forward log-prob %d: %v with the stash, %v without", i, res[1][0][i], v)
		}
	}
	worst, same := 0.0, true
	for j := 1; j < len(res[0]); j++ {
		worst = math.Max(worst, relErr(res[1][j], f64(res[0][j]), 1e-3))
		for i, v := range res[0][j] {
			same = same && v == res[1][j][i]
		}
	}
	t.Logf("gradients: largest relative difference %.2g", worst)
	if worst > 2e-2 || same {
		t.Errorf("gradients with the bf16 stash: relative difference %.3g (want ≤ 2e-2, and not all identical)", worst)
	}
}

// TestStashBF16Memory: over a chain of 12 MLP layers, where the
// activations kept for backward dominate, the float32 slots plus the bf16
// stash take under 65% of the float32 plan (the stash is half the size, and
// backward restores one layer at a time); gradients still match within
// 2e-2.
func TestStashBF16Memory(t *testing.T) {
	const L, N, C, F = 12, 64, 32, 96
	g, x, out, vals := mlpChain(t, L, N, C, F)
	gIn := input(g, "dloss", N, C)
	cost := mk(t)(Dot(out, gIn))
	grads, err := gorgonia.Grad(cost, x)
	must(t, err)
	be := kernels.NewCPU()
	var dx [2][]float32
	var st [2]Stats
	for k, stash := range []bool{false, true} {
		e, err := Compile(g, be, Config{Outputs: grads, Late: []*gorgonia.Node{gIn}, StashBF16: stash})
		must(t, err)
		defer e.Close()
		st[k] = e.Stats()
		setAll(t, e, vals)
		must(t, e.Forward())
		must(t, e.Set(gIn, randn(rand.New(rand.NewPCG(9, 9)), N*C, 1)))
		must(t, e.Backward())
		dx[k] = read(t, e, grads[0])
	}
	f32, bf := float64(st[0].SlotElems), float64(st[1].SlotElems)+float64(st[1].StashElems)/2
	t.Logf("L=%d: float32 plan %d slot elems; stashed %d + %d bf16 (%d activations) = %.0f float32-equivalents (%.0f%%)",
		L, st[0].SlotElems, st[1].SlotElems, st[1].StashElems, st[1].Stashed, bf, 100*bf/f32)
	if bf > 0.65*f32 {
		t.Errorf("stashed plan holds %.0f%% of the float32 plan, want ≤ 65%%", 100*bf/f32)
	}
	if d := relErr(dx[1], f64(dx[0]), 1e-3); d > 2e-2 {
		t.Errorf("dx with the stash: relative difference %.3g > 2e-2", d)
	}
}

// TestStashBF16WithSegments: stashing and recompute together (cuda-bf16
// with model.recompute: layer). Each layer is a recompute segment, so only
// the residual stream between layers is kept, in bf16, and the backward
// recomputes each layer from it: gradients within 2e-2 of the float32 plan
// without either, and the activation memory below each of the two alone.
func TestStashBF16WithSegments(t *testing.T) {
	const L, N, C, F = 6, 64, 32, 96
	g, x, out, vals := mlpChain(t, L, N, C, F)
	var segs [][]*gorgonia.Node // a layer each: up to its residual AXPBY
	var seg []*gorgonia.Node
	for _, n := range g.AllNodes() {
		if o, ours := ourOp(n); ours {
			if seg = append(seg, n); o.name == "AXPBY" {
				segs, seg = append(segs, seg), nil
			}
		}
	}
	if len(segs) != L || len(seg) != 0 {
		t.Fatalf("%d segments (%d nodes left), want %d", len(segs), len(seg), L)
	}
	gIn := input(g, "dloss", N, C)
	cost := mk(t)(Dot(out, gIn))
	grads, err := gorgonia.Grad(cost, x)
	must(t, err)
	be := kernels.NewCPU()
	run := func(stash bool, segments [][]*gorgonia.Node) ([]float32, Stats) {
		e, err := Compile(g, be, Config{Outputs: grads, Late: []*gorgonia.Node{gIn}, StashBF16: stash, Segments: segments})
		must(t, err)
		defer e.Close()
		setAll(t, e, vals)
		must(t, e.Forward())
		must(t, e.Set(gIn, randn(rand.New(rand.NewPCG(9, 9)), N*C, 1)))
		must(t, e.Backward())
		return read(t, e, grads[0]), e.Stats()
	}
	want, _ := run(false, nil)
	_, sStash := run(true, nil)
	_, sSeg := run(false, segs)
	got, both := run(true, segs)
	t.Logf("activation bytes: stash %d, segments %d, both %d (%d stashed, %d recomputed)",
		sStash.ActivationBytes(), sSeg.ActivationBytes(), both.ActivationBytes(), both.Stashed, both.RecomputeSteps)
	if both.RecomputeSteps == 0 || both.ActivationBytes() >= sStash.ActivationBytes() || both.ActivationBytes() > sSeg.ActivationBytes() {
		t.Errorf("plans: stash %+v, segments %+v, both %+v", sStash, sSeg, both)
	}
	if d := relErr(got, f64(want), 1e-3); d > 2e-2 {
		t.Errorf("dx with stash and segments: relative difference %.3g > 2e-2", d)
	}
}
