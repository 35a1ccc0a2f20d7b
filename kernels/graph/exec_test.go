package graph

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// mlpChain builds L pre-norm residual SwiGLU layers over x [N, C].
func mlpChain(t *testing.T, L, N, C, F int) (*gorgonia.ExprGraph, *gorgonia.Node, *gorgonia.Node, map[*gorgonia.Node][]float32) {
	ok := mk(t)
	r := rand.New(rand.NewPCG(uint64(L), 5))
	g := gorgonia.NewGraph()
	vals := map[*gorgonia.Node][]float32{}
	x := input(g, "x", N, C)
	vals[x] = randn(r, N*C, 1)
	h := x
	for l := range L {
		nw, wg, wu, wd := input(g, "n"+itoa(l), C), input(g, "wg"+itoa(l), F, C), input(g, "wu"+itoa(l), F, C), input(g, "wd"+itoa(l), C, F)
		vals[nw], vals[wg], vals[wu], vals[wd] = randn(r, C, 1), randn(r, F*C, 0.25), randn(r, F*C, 0.25), randn(r, C*F, 0.2)
		hn := ok(RMSNorm(h, nw, 1e-6))
		h = ok(Add(h, ok(Linear(ok(SwiGLU(ok(Linear(hn, wg)), ok(Linear(hn, wu)))), wd))))
	}
	return g, x, h, vals
}

func itoa(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }

// TestLivenessBoundsPeak: forward-only, the intermediate memory of a chain
// of L layers does not grow with L (each activation is released after its
// last reader; from L = 3 on, so that two residual streams between layers
// are intermediates, as in any deeper chain), nor does the most memory live
// at one step; with gradients it is well below the no-reuse sum.
func TestLivenessBoundsPeak(t *testing.T) {
	be := kernels.NewCPU()
	const N, C, F = 8, 16, 32
	var peak, live []int64
	for _, L := range []int{3, 4, 8} {
		g, _, out, vals := mlpChain(t, L, N, C, F)
		e, err := Compile(g, be, Config{Outputs: []*gorgonia.Node{out}})
		must(t, err)
		st := e.Stats()
		t.Logf("forward L=%d: %d steps, %d slots, peak %d elems, naive %d live %d", L, st.ForwardSteps, st.Slots, st.SlotElems, st.NaiveElems, st.LiveElems)
		peak, live = append(peak, st.SlotElems), append(live, st.LiveElems)
		setAll(t, e, vals)
		must(t, e.Forward())
		got := read(t, e, out)
		want := tape(t, g, vals, []*gorgonia.Node{out})[0]
		if d := relErr(got, want, 1e-6); d > 1e-6 {
			t.Errorf("L=%d: executor vs TapeMachine rel err %.1e", L, d)
		}
		e.Close()
	}
	// (L=2 may need less: its first layer's input is the graph's input,
	// pinned outside the arena; from L=4 on the middle layers set the peak)
	if peak[1] != peak[2] || peak[0] > peak[1] {
		t.Errorf("forward peak grows with depth: %v", peak)
	}
	if live[0] != live[1] || live[1] != live[2] || live[0] > peak[0] {
		t.Errorf("forward live peak %v grows with depth or exceeds the arena %v", live, peak)
	}

	// Training: the whole chain with gradients.
	g, x, out, vals := mlpChain(t, 8, N, C, F)
	gIn := input(g, "dloss", N, C)
	cost := mk(t)(Dot(out, gIn))
	grads, err := gorgonia.Grad(cost, x)
	must(t, err)
	e, err := Compile(g, be, Config{Outputs: grads, Late: []*gorgonia.Node{gIn}})
	must(t, err)
	defer e.Close()
	st := e.Stats()
	t.Logf("training L=8: %d+%d steps, %d slots, peak %d elems, naive %d (%.0f%%)", st.ForwardSteps, st.BackwardSteps,
		st.Slots, st.SlotElems, st.NaiveElems, 100*float64(st.SlotElems)/float64(st.NaiveElems))
	if st.SlotElems*2 > st.NaiveElems {
		t.Errorf("training peak %d is more than half the naive %d", st.SlotElems, st.NaiveElems)
	}
	r := rand.New(rand.NewPCG(1, 1))
	gv := randn(r, N*C, 1)
	setAll(t, e, vals)
	must(t, e.Forward())
	must(t, e.Set(gIn, gv))
	must(t, e.Backward())
	vals[gIn] = gv
	want := tape(t, g, vals, grads)[0]
	if d := relErr(read(t, e, grads[0]), want, 1e-6); d > 1e-6 {
		t.Errorf("training: dx executor vs TapeMachine rel err %.1e", d)
	}
}

// TestRerunAndForwardOnly: one compiled graph re-run with new ids, targets,
// lengths and g gives the references' results (no stale state), and the
// first batch again gives bit-identical results. Weights live in buffers
// bound to both a training executor and a forward-only one, which has no
// backward steps, less memory, and the same log-probs.
func TestRerunAndForwardOnly(t *testing.T) {
	d := blockDims{B: 2, T: 4, C: 8, Hq: 2, Hkv: 1, D: 4, F: 12, V: 9}
	bg := buildBlock(t, d, true, 3)
	be := kernels.NewCPU()
	bind := map[*gorgonia.Node]kernels.Buffer{}
	for _, n := range append(bg.params, bg.cos, bg.sin) {
		bind[n] = be.Alloc(kernels.F32, size(n))
		be.CopyIn(bind[n], bg.vals[n])
	}
	train, err := Compile(bg.g, be, Config{Outputs: append([]*gorgonia.Node{bg.out, bg.cost}, bg.grads...),
		Late: []*gorgonia.Node{bg.gIn}, Bind: bind})
	must(t, err)
	defer train.Close()
	fwd, err := Compile(bg.g, be, Config{Outputs: []*gorgonia.Node{bg.out}, Bind: bind})
	must(t, err)
	defer fwd.Close()
	ts, fs := train.Stats(), fwd.Stats()
	t.Logf("training: %d+%d steps, %d+%d elems; forward-only: %d+%d steps, %d+%d elems (slots+pinned)",
		ts.ForwardSteps, ts.BackwardSteps, ts.SlotElems, ts.PinnedElems, fs.ForwardSteps, fs.BackwardSteps, fs.SlotElems, fs.PinnedElems)
	if fs.BackwardSteps != 0 || fs.ForwardSteps > ts.ForwardSteps || fs.SlotElems+fs.PinnedElems >= ts.SlotElems+ts.PinnedElems {
		t.Errorf("forward-only plan is not smaller: %+v vs %+v", fs, ts)
	}

	type result struct {
		lp, loss []float32
		grads    [][]float32
	}
	r := rand.New(rand.NewPCG(11, 11))
	run := func(lens []int32) (result, refResult) {
		fillBatch(bg.b, d.V, lens, r)
		gv := randn(r, d.B*d.T, 1)
		must(t, train.Forward())
		res := result{lp: read(t, train, bg.out)}
		must(t, train.Set(bg.gIn, gv))
		must(t, train.Backward())
		res.loss = read(t, train, bg.cost)
		for _, n := range bg.grads {
			res.grads = append(res.grads, read(t, train, n))
		}
		must(t, fwd.Forward())
		if lp := read(t, fwd, bg.out); relErr(lp, res.lp, 1e-6) != 0 {
			t.Errorf("forward-only lp %v != training lp %v", lp, res.lp)
		}
		return res, refBlock(bg, gv)
	}
	cmp := func(tag string, res result, ref refResult) {
		t.Helper()
		if d := relErr(res.lp, ref.lp, 1e-6); d > 1e-5 {
			t.Errorf("%s: lp rel err %.1e", tag, d)
		}
		if d := relErr(res.loss, []float64{ref.loss}, 1e-6); d > 1e-5 {
			t.Errorf("%s: loss rel err %.1e", tag, d)
		}
		for i, p := range bg.params {
			if d := relErr(res.grads[i], ref.grads[p.Name()], 1e-6); d > 1e-5 {
				t.Errorf("%s: grad %s rel err %.1e", tag, p.Name(), d)
			}
		}
	}
	// Save batch A to replay it.
	resA, refA := run([]int32{4, 2})
	idsA, tgA, lensA := bg.b.IDs, bg.b.Targets, bg.b.Lens
	gA, err := train.Read(bg.gIn)
	must(t, err)
	cmp("batch A", resA, refA)
	resB, refB := run(nil)
	cmp("batch B", resB, refB)
	if relErr(resB.lp, resA.lp, 1e-6) == 0 {
		t.Fatal("batches A and B gave the same log-probs: the test is not exercising new inputs")
	}

	bg.b.IDs, bg.b.Targets, bg.b.Lens = idsA, tgA, lensA
	must(t, train.Forward())
	must(t, train.Set(bg.gIn, gA))
	must(t, train.Backward())
	if !equal(read(t, train, bg.out), resA.lp) || !equal(read(t, train, bg.cost), resA.loss) {
		t.Error("replaying batch A changed lp or loss")
	}
	for i, n := range bg.grads {
		if !equal(read(t, train, n), resA.grads[i]) {
			t.Errorf("replaying batch A changed grad %s", bg.params[i].Name())
		}
	}

	// A weight update through the bound buffer is seen by both executors.
	w := bind[bg.params[len(bg.params)-1]]
	be.Fill(w, 0) // lm head = 0: every log-prob is -log V on unmasked rows
	must(t, fwd.Forward())
	for i, v := range read(t, fwd, bg.out) {
		want := float32(-mathLog(float64(d.V)))
		if bg.b.Targets[i] < 0 {
			want = 0
		}
		if diff := v - want; diff > 1e-5 || diff < -1e-5 {
			t.Fatalf("lp[%d] = %v after zeroing the bound lm head, want %v", i, v, want)
		}
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLoRAPattern: y = x·Wᵀ + s·((drop(x)·Aᵀ)·Bᵀ) with s = α/r read at run
// time. With B = 0 (PEFT init) the adapter gradient lands on B only; s = 0
// switches the adapter off; Eval turns dropout off.
func TestLoRAPattern(t *testing.T) {
	ok := mk(t)
	const N, K, M, R = 6, 8, 5, 2
	rg := rand.New(rand.NewPCG(4, 4))
	g := gorgonia.NewGraph()
	b := NewBatch(2, 3)
	b.Seed = 9
	x, w := input(g, "x", N, K), input(g, "w", M, K)
	la, lb := input(g, "lora_A", R, K), input(g, "lora_B", M, R)
	s := float32(64.0 / 32.0)
	base := ok(Linear(x, w))
	y := ok(Add(base, ok(ScaleVar(ok(Linear(ok(Linear(ok(Dropout(x, 0.5, b)), la)), lb)), &s))))
	gIn := input(g, "dloss", N, M)
	grads, err := gorgonia.Grad(ok(Dot(y, gIn)), la, lb)
	must(t, err)
	e, err := Compile(g, kernels.NewCPU(), Config{Outputs: append([]*gorgonia.Node{y, base}, grads...), Late: []*gorgonia.Node{gIn}})
	must(t, err)
	defer e.Close()
	vals := map[*gorgonia.Node][]float32{x: randn(rg, N*K, 1), w: randn(rg, M*K, 1), la: randn(rg, R*K, 1), lb: make([]float32, M*R), gIn: randn(rg, N*M, 1)}
	setAll(t, e, vals)
	must(t, e.Run())
	if !equal(read(t, e, y), read(t, e, base)) {
		t.Error("with B = 0 the adapter changed the output")
	}
	if maxAbs(read(t, e, grads[0])) != 0 || maxAbs(read(t, e, grads[1])) == 0 {
		t.Error("with B = 0, dA must be 0 and dB nonzero")
	}
	want := tape(t, g, vals, grads)
	if d := relErr(read(t, e, grads[1]), want[1], 1e-6); d > 1e-6 {
		t.Errorf("dB vs TapeMachine rel err %.1e", d)
	}

	vals[lb] = randn(rg, M*R, 1)
	must(t, e.Set(lb, vals[lb]))
	must(t, e.Run())
	train := read(t, e, y)
	b.Eval = true
	must(t, e.Run())
	eval := read(t, e, y)
	if equal(train, eval) {
		t.Error("Eval did not change the dropout output")
	}
	s = 0
	must(t, e.Run())
	if !equal(read(t, e, y), read(t, e, base)) {
		t.Error("scale 0 did not switch the adapter off")
	}
}

func TestExecutorErrors(t *testing.T) {
	ok := mk(t)
	be := kernels.NewCPU()
	g := gorgonia.NewGraph()
	b := NewBatch(1, 3)
	table := input(g, "table", 4, 2)
	emb := ok(Embedding(table, b))
	foreign := gorgonia.Must(gorgonia.HadamardProd(emb, emb))
	if _, err := Compile(g, be, Config{Outputs: []*gorgonia.Node{foreign}}); err == nil || !strings.Contains(err.Error(), "unsupported Gorgonia op") {
		t.Errorf("foreign op: got %v", err)
	}
	if _, err := Compile(g, be, Config{Outputs: []*gorgonia.Node{emb}, Bind: map[*gorgonia.Node]kernels.Buffer{table: be.Alloc(kernels.F32, 3)}}); err == nil || !strings.Contains(err.Error(), "table") {
		t.Errorf("short bound buffer: got %v", err)
	}
	if _, err := Compile(g, be, Config{Outputs: []*gorgonia.Node{emb}, Late: []*gorgonia.Node{emb}}); err == nil {
		t.Error("a non-input Late node was accepted")
	}
	e, err := Compile(g, be, Config{Outputs: []*gorgonia.Node{emb}})
	must(t, err)
	defer e.Close()
	if err := e.Backward(); err == nil {
		t.Error("Backward before Forward was accepted")
	}
	b.IDs = []int32{0, 1}
	if err := e.Forward(); err == nil || !strings.Contains(err.Error(), "Batch.IDs") {
		t.Errorf("short ids: got %v", err)
	}
	b.IDs = []int32{0, 1, 4}
	if err := e.Forward(); err == nil || !strings.Contains(err.Error(), "Batch.IDs[2] = 4") {
		t.Errorf("out-of-range id: got %v", err)
	}
	if err := e.Set(emb, make([]float32, 6)); err == nil {
		t.Error("Set on a computed node was accepted")
	}
	b.IDs = []int32{0, 1, 3}
	must(t, e.Forward())
	if _, err := e.Read(emb); err != nil {
		t.Error(err)
	}
}

// TestValueHeadAndEntropy: the PPO shape of a graph. Forward yields lp,
// entropy and values before any Late input is set; the cost Dot(lp, g) +
// Dot(value, gv) takes two Late inputs; the entropy matches the reference.
func TestValueHeadAndEntropy(t *testing.T) {
	ok := mk(t)
	const B, T, C, V = 2, 3, 6, 7
	N := B * T
	r := rand.New(rand.NewPCG(8, 8))
	g := gorgonia.NewGraph()
	b := NewBatch(B, T)
	fillBatch(b, V, []int32{3, 2}, r)
	x, w, wv := input(g, "h", N, C), input(g, "lm_head", V, C), input(g, "value_head", 1, C)
	logits := ok(Linear(x, w))
	lp, ent, err := LogProbs(logits, b, true)
	must(t, err)
	value := ok(Linear(x, wv))
	g1, g2 := input(g, "dlp", N), input(g, "dvalue", N, 1)
	cost := ok(Add(ok(Dot(lp, g1)), ok(Dot(value, g2))))
	grads, err := gorgonia.Grad(cost, x, w, wv)
	must(t, err)
	e, err := Compile(g, kernels.NewCPU(), Config{Outputs: append([]*gorgonia.Node{lp, ent, value, cost}, grads...), Late: []*gorgonia.Node{g1, g2}})
	must(t, err)
	defer e.Close()
	vals := map[*gorgonia.Node][]float32{x: randn(r, N*C, 1), w: randn(r, V*C, 1), wv: randn(r, C, 1)}
	setAll(t, e, vals)
	must(t, e.Forward())
	lpv, entv, valv := read(t, e, lp), read(t, e, ent), read(t, e, value)
	vals[g1], vals[g2] = randn(r, N, 1), randn(r, N, 1)
	must(t, e.Set(g1, vals[g1]))
	must(t, e.Set(g2, vals[g2]))
	must(t, e.Backward())

	want := tape(t, g, vals, append([]*gorgonia.Node{lp, ent, value, cost}, grads...))
	got := [][]float32{lpv, entv, valv, read(t, e, cost)}
	for _, gn := range grads {
		got = append(got, read(t, e, gn))
	}
	for i := range want {
		if d := relErr(got[i], want[i], 1e-6); d > 1e-6 {
			t.Errorf("output %d: executor vs TapeMachine rel err %.1e", i, d)
		}
	}
	lg := make([]float64, N*V)
	kernels.RefMatMul(lg, f64(vals[x]), f64(vals[w]), kernels.MatMulParams{Batch: 1, M: N, N: V, K: C, TransB: true, Alpha: 1})
	rlp, rlse, rent := make([]float64, N), make([]float64, N), make([]float64, N)
	kernels.RefLogProbs(rlp, rlse, rent, lg, b.Targets, N, V)
	if d := relErr(entv, rent, 1e-6); d > 1e-5 {
		t.Errorf("entropy rel err %.1e vs reference", d)
	}
	if d := relErr(lpv, rlp, 1e-6); d > 1e-5 {
		t.Errorf("lp rel err %.1e vs reference", d)
	}
}
