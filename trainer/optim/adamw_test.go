package optim

import (
	"math"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/internal/paramtest"
)

// defaultAdamW is config.Default()'s optimizer: β 0.9, 0.999, ε 1e-8, no decay.
var defaultAdamW = AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

var (
	newParam = paramtest.New
	read     = paramtest.Read
)

func TestGradNormAndClip(t *testing.T) {
	be := kernels.NewCPU()
	ps := []*model.Param{
		newParam(be, "a", []int{2}, []float32{0, 0}, []float32{3, 0}),
		newParam(be, "b", []int{1, 2}, []float32{0, 0}, []float32{0, 4}),
	}
	n, err := GradNorm(be, ps)
	if err != nil || n != 5 {
		t.Fatalf("grad norm of (3,0),(0,4) = %v, %v; want 5", n, err)
	}
	// Above the norm: untouched, bit for bit.
	if n, err := ClipGradNorm(be, ps, 10); err != nil || n != 5 {
		t.Fatalf("clip(10) returned %v, %v", n, err)
	}
	if g := read(be, ps[0].G); g[0] != 3 || g[1] != 0 {
		t.Fatalf("clip above the norm changed the gradient: %v", g)
	}
	// Below: scaled by 1/(5+1e-6), as torch.nn.utils.clip_grad_norm_.
	if n, err := ClipGradNorm(be, ps, 1); err != nil || n != 5 {
		t.Fatalf("clip(1) returned pre-clip norm %v, %v; want 5", n, err)
	}
	c := 1 / (5 + 1e-6)
	ga, gb := read(be, ps[0].G), read(be, ps[1].G)
	if math.Abs(float64(ga[0])-3*c) > 1e-6 || math.Abs(float64(gb[1])-4*c) > 1e-6 || ga[1] != 0 || gb[0] != 0 {
		t.Fatalf("clipped grads %v %v, want (%v,0) (0,%v)", ga, gb, 3*c, 4*c)
	}
	if n, _ := GradNorm(be, ps); math.Abs(n-1) > 1e-6 {
		t.Fatalf("norm after clipping to 1 is %v", n)
	}
	// A NaN gradient gives a NaN norm and leaves the gradients alone.
	be.CopyIn(ps[0].G, []float32{float32(math.NaN()), 1})
	if n, err := ClipGradNorm(be, ps, 1); err != nil || !math.IsNaN(n) {
		t.Fatalf("NaN gradient: norm %v, %v", n, err)
	}
}

func TestAdamWHandNumbers(t *testing.T) {
	be := kernels.NewCPU()
	w := newParam(be, "w", []int{2}, []float32{1, -2}, []float32{0.5, -1})
	nd := newParam(be, "norm", []int{1}, []float32{1}, []float32{2})
	c := defaultAdamW
	c.WeightDecay = 0.01
	c.NoDecay = func(name string) bool { return name == "norm" }
	o, err := NewAdamW(be, []*model.Param{w, nd}, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Step(0.1); err != nil {
		t.Fatal(err)
	}
	// Step 1: m̂ = g, v̂ = g², so the Adam direction is g/(|g|+ε) ≈ sign(g):
	// w = 1 − 0.1·(1 + 0.01·1) = 0.899;  −2 − 0.1·(−1 + 0.01·(−2)) = −1.898;
	// the NoDecay param: 1 − 0.1·1 = 0.9.
	want := []float64{0.899, -1.898}
	for i, v := range read(be, w.W) {
		if math.Abs(float64(v)-want[i]) > 1e-6 {
			t.Fatalf("w[%d] after step 1 = %v, want %v", i, v, want[i])
		}
	}
	if v := read(be, nd.W)[0]; math.Abs(float64(v)-0.9) > 1e-6 {
		t.Fatalf("NoDecay param = %v, want 0.9 (no decay)", v)
	}
	// Step 2 against the float64 reference kernel.
	be.CopyIn(w.G, []float32{-0.25, 2})
	pw := []float64{0.899, -1.898}
	m := []float64{0.05, -0.1}
	v := []float64{0.001 * 0.25, 0.001 * 1}
	kernels.RefAdamW(pw, []float64{-0.25, 2}, m, v, 2, kernels.AdamWParams{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 2})
	if err := o.Step(0.05); err != nil {
		t.Fatal(err)
	}
	for i, got := range read(be, w.W) {
		if math.Abs(float64(got)-pw[i]) > 2e-6 {
			t.Fatalf("w[%d] after step 2 = %v, reference %v", i, got, pw[i])
		}
	}
	if o.Steps() != 2 {
		t.Fatalf("Steps() = %d", o.Steps())
	}
	if err := o.Step(math.NaN()); err == nil {
		t.Fatal("a NaN learning rate was accepted")
	}
}

func TestAdamWRejectsBadParams(t *testing.T) {
	be := kernels.NewCPU()
	a := newParam(be, "a", []int{2}, []float32{1, 2}, []float32{1, 2})
	for name, ps := range map[string][]*model.Param{
		"duplicate": {a, a},
		"shape":     {{Name: "b", Shape: []int{3}, W: a.W, G: a.G}},
		"unnamed":   {{Shape: []int{2}, W: a.W, G: a.G}},
		"nil":       {nil},
	} {
		if _, err := NewAdamW(be, ps, defaultAdamW); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// State's layout, and what SetState refuses. (Saving, restoring and
// continuing bit-identically is trainer/ckpt's TestOptimizerFileBitExact.)
func TestAdamWState(t *testing.T) {
	be := kernels.NewCPU()
	mk := func() []*model.Param {
		return []*model.Param{
			newParam(be, "layer.0.A", []int{3, 4}, make([]float32, 12), make([]float32, 12)),
			newParam(be, "layer.0.B", []int{5, 3}, make([]float32, 15), make([]float32, 15)),
		}
	}
	a, _ := NewAdamW(be, mk(), defaultAdamW)
	for s := 0; s < 3; s++ {
		for _, p := range a.Params() {
			be.CopyIn(p.G, []float32{float32(s + 1), -1, 0.5, 2, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}[:p.Len()])
		}
		if err := a.Step(1e-3); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	names := ""
	for _, ts := range st.Tensors {
		names += ts.Name + " "
	}
	if names != "m.layer.0.A v.layer.0.A m.layer.0.B v.layer.0.B " || st.Scalars["step"] != "3" || st.Scalars["format"] != "argrl-adamw" {
		t.Fatalf("state: tensors %q, scalars %v", names, st.Scalars)
	}
	b, _ := NewAdamW(be, mk(), defaultAdamW)
	if err := b.SetState(st); err != nil || b.Steps() != 3 {
		t.Fatalf("restore: step %d, %v", b.Steps(), err)
	}
	if got, want := read(be, b.m[0]), read(be, a.m[0]); got[0] == 0 || got[0] != want[0] || got[11] != want[11] {
		t.Fatalf("restored m %v, want %v", got, want)
	}
	// A wrong step scalar, a wrong shape, a missing and an extra tensor.
	bad := State{Tensors: st.Tensors, Scalars: map[string]string{"step": "x"}}
	if err := b.SetState(bad); err == nil || !strings.Contains(err.Error(), `"step"`) {
		t.Errorf("bad step: %v", err)
	}
	other, _ := NewAdamW(be, []*model.Param{newParam(be, "layer.0.A", []int{4, 3}, make([]float32, 12), make([]float32, 12))}, defaultAdamW)
	if err := other.SetState(st); err == nil || !strings.Contains(err.Error(), "layer.0.A") {
		t.Errorf("shape mismatch: %v", err)
	}
	only, _ := NewAdamW(be, mk()[:1], defaultAdamW)
	if err := only.SetState(st); err == nil || !strings.Contains(err.Error(), "layer.0.B") {
		t.Errorf("extra tensor: %v", err)
	}
	more, _ := NewAdamW(be, append(mk(), newParam(be, "layer.1.A", []int{2}, make([]float32, 2), make([]float32, 2))), defaultAdamW)
	if err := more.SetState(st); err == nil || !strings.Contains(err.Error(), "m.layer.1.A") {
		t.Errorf("missing tensor: %v", err)
	}
}

func TestNormsAndBiases(t *testing.T) {
	for name, want := range map[string]bool{
		"model.norm.weight": true, "model.layers.0.input_layernorm.weight": true, "model.layers.0.self_attn.q_proj.bias": true,
		"value_head.bias": true, "model.layers.0.self_attn.q_proj.weight": false, "value_head.weight": false,
	} {
		if NormsAndBiases(name) != want {
			t.Errorf("NormsAndBiases(%q) = %v", name, !want)
		}
	}
}
