package model

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// Invariants of the training API (trl-style): LoRA weights change while the
// base stays bit-identical, micro-batch accumulation, PEFT round trip,
// merge/unmerge, full fine-tuning and value-head gradients.

func flat(x [][]float32) []float32 {
	var out []float32
	for _, r := range x {
		out = append(out, r...)
	}
	return out
}

func relErr32(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / math.Max(den, 1e-300))
}

// sgd is W −= lr·G on every trainable parameter.
func sgd(m *Model, lr float32) {
	for _, p := range m.Trainable() {
		m.be.AXPBY(p.W, p.W, p.G, 1, -lr, p.Len())
	}
}

func TestLoRAChangesBaseFrozen(t *testing.T) {
	const name = "qwen2-f32"
	ref := readFixtureRef(t, name)
	m := openFixture(t, name, Options{LoRA: &LoRAOptions{R: 4, Alpha: 8, Dropout: 0.1, Seed: 3}})
	if len(m.Trainable()) != 2*7*m.Config.NumLayers {
		t.Fatalf("%d trainable tensors", len(m.Trainable()))
	}
	frozen := map[string][]float32{}
	for _, p := range m.Params() {
		if p.G == nil {
			frozen[p.Name] = readHost(m, p)
		}
	}
	before := map[string][]float32{}
	for _, p := range m.Trainable() {
		w := readHost(m, p)
		before[p.Name] = w
		if strings.HasSuffix(p.Name, "lora_B.weight") && slices.ContainsFunc(w, func(v float32) bool { return v != 0 }) {
			t.Fatalf("%s does not start at zero", p.Name)
		}
		if strings.HasSuffix(p.Name, "lora_A.weight") {
			bound := float32(1 / math.Sqrt(float64(p.Shape[1])))
			for _, v := range w {
				if v == 0 || math.Abs(float64(v)) > float64(bound) {
					t.Fatalf("%s: %v outside the Kaiming-uniform bound ±%v", p.Name, v, bound)
				}
			}
		}
	}
	lp0, _ := m.LogProbs(ref.Tokens, false)
	if on, _ := m.LogProbs(ref.Tokens, true); maxDiff(on, lp0) != 0 {
		t.Fatal("a fresh adapter (B = 0) changes the log-probs")
	}
	for range 2 { // B moves in step 1, A from step 2 (∂/∂A ∝ B)
		m.ZeroGrad()
		if err := m.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err != nil {
			t.Fatal(err)
		}
		sgd(m, 0.5)
	}
	for _, p := range m.Trainable() {
		if slices.Equal(readHost(m, p), before[p.Name]) {
			t.Errorf("%s did not change", p.Name)
		}
	}
	for _, p := range m.Params() {
		if p.G == nil && !slices.Equal(readHost(m, p), frozen[p.Name]) {
			t.Errorf("frozen %s changed", p.Name)
		}
	}
	lp1, _ := m.LogProbs(ref.Tokens, false)
	if maxDiff(lp1, lp0) != 0 {
		t.Error("the reference (adapters off) changed after training")
	}
	on, _ := m.LogProbs(ref.Tokens, true)
	if maxDiff(on, lp0) < 1e-4 {
		t.Error("training did not change the policy's log-probs")
	}
}

// eightSeqs are 8 sequences of different lengths from the fixture tokens.
func eightSeqs(ref *fixtureRef) [][]int32 {
	var out [][]int32
	for i, n := range []int{16, 9, 12, 2, 5, 14, 1, 7} {
		s := ref.Tokens[i%4]
		out = append(out, append([]int32(nil), s[:min(n, len(s))]...))
	}
	return out
}

// weightedGrad is the loss Σ w[b][t]·lp[b][t] with fixed weights that do not
// depend on the batch layout, and (with a value head) Σ u·value.
func weightedGrad(seqs [][]int32, values bool) func(*Outputs) (*Grads, error) {
	return func(o *Outputs) (*Grads, error) {
		g := &Grads{LogProbs: make([][]float32, len(o.LogProbs))}
		if values {
			g.Values = make([][]float32, len(o.LogProbs))
		}
		for b := range o.LogProbs {
			g.LogProbs[b] = make([]float32, len(o.LogProbs[b]))
			for t := range g.LogProbs[b] {
				g.LogProbs[b][t] = -float32(1+(int(seqs[b][t])+t)%3) / 50
			}
			if values {
				g.Values[b] = make([]float32, len(o.LogProbs[b]))
				for t := range g.Values[b] {
					g.Values[b][t] = float32((int(seqs[b][t])%5)-2) / 10
				}
			}
		}
		return g, nil
	}
}

func TestAccumulation8x1Equals1x8(t *testing.T) {
	for _, name := range []string{"qwen2-f32", "qwen3-bf16-sharded", "llama-f32"} {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			o := withAdapter(name)
			o.ValueHead = true
			m := openFixture(t, name, o)
			seqs := eightSeqs(ref)
			grads := func(batches [][][]int32) [][]float32 {
				m.ZeroGrad()
				for _, b := range batches {
					if err := m.Step(b, weightedGrad(b, true)); err != nil {
						t.Fatal(err)
					}
				}
				var out [][]float32
				for _, p := range m.Trainable() {
					out = append(out, readGrad(m, p))
				}
				return out
			}
			one := grads([][][]int32{seqs})
			var singles [][][]int32
			for _, s := range seqs {
				singles = append(singles, [][]int32{s})
			}
			eight := grads(singles)
			var worst float64
			for i, p := range m.Trainable() {
				e := relErr32(one[i], eight[i])
				worst = math.Max(worst, e)
				if e > 1e-6 || slices.Equal(one[i], make([]float32, len(one[i]))) {
					t.Errorf("%s: 1×8 vs 8×1 relative difference %.2e (tol 1e-6), or zero gradient", p.Name, e)
				}
			}
			t.Logf("worst relative difference 1×8 vs 8×1 over %d tensors: %.2e", len(one), worst)
		})
	}
}

func TestPEFTRoundTripLogProbs(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			m := openFixture(t, name, withAdapter(name))
			want, err := m.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "adapter")
			if err := m.ExportAdapter(dir); err != nil {
				t.Fatal(err)
			}
			m2 := openFixture(t, name, Options{Adapter: dir})
			got, err := m2.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxDiff(got, want); d != 0 {
				t.Errorf("export → Open(Adapter) changes log-probs by %g", d)
			}
			// Import into fresh adapters of the same rank.
			m3 := openFixture(t, name, Options{LoRA: &LoRAOptions{R: 4, Alpha: 1, Seed: 5}})
			if err := m3.ImportAdapter(dir); err != nil {
				t.Fatal(err)
			}
			got, _ = m3.LogProbs(ref.Tokens, true)
			if d := maxDiff(got, want); d != 0 {
				t.Errorf("export → ImportAdapter changes log-probs by %g", d)
			}
			if d := maxDiffRef(t, got, ref.LoraLogprobs); d > 1e-4 {
				t.Errorf("re-imported adapter vs PyTorch %.2e", d)
			}
			wrong := openFixture(t, name, Options{LoRA: &LoRAOptions{R: 8, Alpha: 1}})
			if err := wrong.ImportAdapter(dir); err == nil || !strings.Contains(err.Error(), "r=4") {
				t.Errorf("rank mismatch: %v", err)
			}
		})
	}
}

func TestMergeUnmerge(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			m := openFixture(t, name, withAdapter(name))
			want, _ := m.LogProbs(ref.Tokens, true)
			base := map[string][]float32{}
			for _, p := range m.Params() {
				if p.G == nil {
					base[p.Name] = readHost(m, p)
				}
			}
			if err := m.Merge(); err != nil {
				t.Fatal(err)
			}
			merged, err := m.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			dec, _, _ := decodeLogProbs(t, m, ref.Tokens, []int{1, 1, 1, 1}, 0)
			if _, err := m.LogProbs(ref.Tokens, false); err == nil {
				t.Error("reference log-probs while merged must fail")
			}
			if err := m.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err == nil {
				t.Error("Step while merged must fail")
			}
			if err := m.SetAdapters(false); err == nil {
				t.Error("SetAdapters while merged must fail")
			}
			if err := m.Unmerge(); err != nil {
				t.Fatal(err)
			}
			var worst float64
			for _, p := range m.Params() {
				if p.G == nil {
					worst = math.Max(worst, relErr32(readHost(m, p), base[p.Name]))
				}
			}
			after, _ := m.LogProbs(ref.Tokens, true)
			dm, dd, da := maxDiff(merged, want), maxDiff(dec, want), maxDiff(after, want)
			t.Logf("merged vs unmerged lp %.2e (decode %.2e); after unmerge %.2e; weights restored to %.2e relative", dm, dd, da, worst)
			if dm > 1e-5 || dd > 1e-5 || da > 1e-5 || worst > 1e-6 {
				t.Errorf("merged %.2e, merged decode %.2e, after unmerge %.2e (tol 1e-5); weights %.2e (tol 1e-6)", dm, dd, da, worst)
			}
		})
	}
}

// mergeFixtureAdapter adds the fixture adapter (α/r)·B A into the weights
// of a full fine-tuning model, so that its weight gradients relate to
// PyTorch's LoRA gradients: ∂L/∂A = s·Bᵀ·∂L/∂W and ∂L/∂B = s·∂L/∂W·Aᵀ.
func mergeFixtureAdapter(t *testing.T, m *Model, a *Adapter) {
	be := m.be
	for path, l := range a.Modules {
		A, B := be.Alloc(kernels.F32, len(l.A.Data)), be.Alloc(kernels.F32, len(l.B.Data))
		be.CopyIn(A, l.A.Data)
		be.CopyIn(B, l.B.Data)
		w := m.byName[path+".weight"]
		be.MatMul(w.W, B, A, kernels.MatMulParams{Batch: 1, M: l.B.Shape[0], N: l.A.Shape[1], K: a.R, Alpha: float32(a.Scale()), Beta: 1})
		be.Free(A)
		be.Free(B)
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestFullFineTuneGrads(t *testing.T) {
	for _, name := range []string{"qwen2-bf16-tied", "qwen3-f32-tied", "llama-f32"} {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			m := openFixture(t, name, Options{FullFT: true})
			a, err := ImportPEFT(filepath.Join(fixtures, name, "adapter"), m.Config)
			if err != nil {
				t.Fatal(err)
			}
			mergeFixtureAdapter(t, m, a)
			if len(m.Trainable()) != len(m.Params()) {
				t.Fatalf("FullFT: %d of %d tensors trainable", len(m.Trainable()), len(m.Params()))
			}
			m.ZeroGrad()
			if err := m.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err != nil {
				t.Fatal(err)
			}
			f, err := safetensors.Open(filepath.Join(fixtures, name, "lora_grads.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s := a.Scale()
			var worst float64
			for path, l := range a.Modules {
				gw := readGrad(m, m.byName[path+".weight"]) // [out, in]
				out, in, r := l.B.Shape[0], l.A.Shape[1], a.R
				gA, gB := make([]float32, r*in), make([]float32, out*r)
				for o := range out {
					for i := range in {
						g := float64(gw[o*in+i])
						for k := range r {
							gA[k*in+i] += float32(s * float64(l.B.Data[o*r+k]) * g)
							gB[o*r+k] += float32(s * g * float64(l.A.Data[k*in+i]))
						}
					}
				}
				for _, c := range []struct {
					name string
					got  []float32
				}{{l.A.Name, gA}, {l.B.Name, gB}} {
					want, _, err := f.Float64(c.name)
					if err != nil {
						t.Fatal(err)
					}
					e := relErr(c.got, want)
					worst = math.Max(worst, e)
					if e > 1e-3 {
						t.Errorf("%s from ∂L/∂W: relative error %.2e > 1e-3", c.name, e)
					}
				}
			}
			// Norms, embeddings and biases: central differences of the loss.
			fd := fdCheck(t, m, ref)
			t.Logf("LoRA grads derived from full-FT ∂L/∂W vs PyTorch: worst %.2e; finite differences: worst %.2e", worst, fd)
		})
	}
}

// fdCheck compares Step's gradient of the fixture loss with central
// differences (h = 1e-2, float32 forward) at the largest-gradient entry of
// every non-matrix tensor and of the embedding.
func fdCheck(t *testing.T, m *Model, ref *fixtureRef) float64 {
	t.Helper()
	loss := func() float64 {
		o, err := m.Forward(ref.Tokens, true)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := maskedNLLGrad(ref.LossMask)(o)
		var l float64
		for b := range o.LogProbs {
			for i := range o.LogProbs[b] {
				l += float64(g.LogProbs[b][i]) * float64(o.LogProbs[b][i])
			}
		}
		return l
	}
	var worst float64
	for _, p := range m.Trainable() {
		if len(p.Shape) != 1 && p.Name != "model.embed_tokens.weight" {
			continue
		}
		g := readGrad(m, p)
		i := 0
		for j := range g {
			if math.Abs(float64(g[j])) > math.Abs(float64(g[i])) {
				i = j
			}
		}
		w := readHost(m, p)
		const h = 1e-2
		set := func(v float32) {
			w[i] = v
			m.be.CopyIn(p.W, w)
		}
		orig := w[i]
		set(orig + h)
		lp := loss()
		set(orig - h)
		lm := loss()
		set(orig)
		num := (lp - lm) / (2 * h)
		e := math.Abs(num-float64(g[i])) / math.Max(math.Abs(num), 1e-3)
		worst = math.Max(worst, e)
		if e > 2e-2 {
			t.Errorf("%s[%d]: Step %.6g, finite differences %.6g (rel %.1e)", p.Name, i, g[i], num, e)
		}
	}
	return worst
}

func TestDropoutReproducible(t *testing.T) {
	const name = "llama-bf16-tied"
	ref := readFixtureRef(t, name)
	run := func(p float64, counter uint64) [][]float32 {
		m := openFixture(t, name, Options{Adapter: filepath.Join(fixtures, name, "adapter"), LoRA: &LoRAOptions{Dropout: p, Seed: 11}})
		m.SetDropoutCounter(counter)
		m.ZeroGrad()
		if err := m.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for _, q := range m.Trainable() {
			out = append(out, readGrad(m, q))
		}
		return out
	}
	a, b, c, none := run(0.3, 0), run(0.3, 0), run(0.3, 1), run(0, 0)
	if maxDiff(a, b) != 0 {
		t.Error("same seed and counter give different gradients")
	}
	if maxDiff(a, c) == 0 || maxDiff(a, none) == 0 {
		t.Error("dropout masks do not depend on the step counter, or dropout is inactive")
	}
}

func TestBF16WeightStorage(t *testing.T) {
	const name = "qwen3-bf16-sharded"
	const w = "model.layers.0.mlp.up_proj.weight"
	ref := readFixtureRef(t, name)
	o := withAdapter(name)
	o.F32Weights = true
	f32 := openFixture(t, name, o)
	bf := openFixture(t, name, withAdapter(name))
	if bf.byName[w].W.DType() != kernels.BF16 {
		t.Fatal("matrices not stored as BF16 by default")
	}
	if f32.byName[w].W.DType() != kernels.F32 {
		t.Fatal("F32Weights did not widen the matrices")
	}
	a, _ := f32.LogProbs(ref.Tokens, true)
	b, _ := bf.LogProbs(ref.Tokens, true)
	if d := maxDiff(a, b); d != 0 {
		t.Errorf("BF16 storage changes log-probs by %g", d)
	}
	// Merging leaves the bf16 weights untouched: the merged weights are f32
	// copies, equal to merging widened weights, and Unmerge restores exactly.
	before := readHost(bf, bf.byName[w])
	for _, m := range []*Model{f32, bf} {
		if err := m.Merge(); err != nil {
			t.Fatal(err)
		}
	}
	ma, _ := f32.LogProbs(ref.Tokens, true)
	mb, _ := bf.LogProbs(ref.Tokens, true)
	if d := maxDiff(ma, mb); d != 0 {
		t.Errorf("merged bf16 and merged f32 weights differ by %g in log-probs", d)
	}
	if err := bf.Unmerge(); err != nil {
		t.Fatal(err)
	}
	if bf.byName[w].W.DType() != kernels.BF16 || !reflect.DeepEqual(readHost(bf, bf.byName[w]), before) {
		t.Error("Merge/Unmerge changed the bf16 weights")
	}
}

func TestRuntimeErrors(t *testing.T) {
	const name = "llama-f32"
	dir := filepath.Join(fixtures, name)
	be := kernels.NewCPU()
	if _, err := Open(dir, be, Options{FullFT: true, LoRA: DefaultLoRA()}); err == nil {
		t.Error("FullFT with LoRA must fail")
	}
	if _, err := Open(dir, be, Options{LoRA: &LoRAOptions{R: 4, Alpha: 8, Targets: []string{"qkv"}}}); err == nil || !strings.Contains(err.Error(), "qkv") {
		t.Errorf("unknown target: %v", err)
	}
	if _, err := Open(filepath.Join(fixtures, "nope"), be, Options{}); err == nil {
		t.Error("missing directory must fail")
	}
	m := openFixture(t, name, Options{})
	V := int32(m.Config.VocabSize)
	for _, c := range []struct {
		seqs [][]int32
		want string
	}{
		{nil, "empty batch"}, {[][]int32{{}}, "empty"}, {[][]int32{{1, V}}, "outside the vocabulary"},
		{[][]int32{{1, -1}}, "outside the vocabulary"}, {[][]int32{make([]int32, m.MaxLen()+1)}, "MaxLen"},
	} {
		if _, err := m.LogProbs(c.seqs, true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LogProbs(%v...): %v, want %q", len(c.seqs), err, c.want)
		}
	}
	if err := m.Step([][]int32{{1, 2}}, weightedGrad(nil, false)); err == nil {
		t.Error("Step without trainable parameters must fail")
	}
	if err := m.Merge(); err == nil {
		t.Error("Merge without adapters must fail")
	}
	lm := openFixture(t, name, withAdapter(name))
	bad := func(*Outputs) (*Grads, error) { return &Grads{LogProbs: [][]float32{{1}}}, nil }
	if err := lm.Step([][]int32{{1, 2}}, bad); err == nil || !strings.Contains(err.Error(), "entries") {
		t.Errorf("misshapen gradient: %v", err)
	}
	d, err := lm.NewKVCache(2, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Prefill(0, make([]int32, 9)); err == nil {
		t.Error("prefill past the cache must fail")
	}
	if _, err := d.Prefill(0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode([]int{0, 0}, []int32{1, 2}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate slots: %v", err)
	}
	if _, err := d.Decode([]int{0}, []int32{V}); err == nil {
		t.Error("out-of-vocabulary decode token must fail")
	}
	if _, err := lm.NewKVCache(2, m.MaxLen()+1, 1); err == nil {
		t.Error("cache longer than MaxLen must fail")
	}
}
