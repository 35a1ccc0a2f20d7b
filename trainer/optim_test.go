package trainer

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// newParam allocates a param on be with value w and gradient g.
func newParam(be kernels.Backend, name string, shape []int, w, g []float32) Param {
	p := Param{Name: name, Shape: shape, W: be.Alloc(kernels.F32, len(w)), G: be.Alloc(kernels.F32, len(g))}
	be.CopyIn(p.W, w)
	be.CopyIn(p.G, g)
	return p
}

func read(be kernels.Backend, b kernels.Buffer) []float32 {
	out := make([]float32, b.Len())
	be.CopyOut(out, b)
	return out
}

func TestGradNormAndClip(t *testing.T) {
	be := kernels.NewCPU()
	ps := []Param{
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
	nd.NoDecay = true
	c := Default().Optim
	c.WeightDecay = 0.01
	o, err := NewAdamW(be, []Param{w, nd}, c)
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
	for name, ps := range map[string][]Param{
		"duplicate": {a, a},
		"shape":     {{Name: "b", Shape: []int{3}, W: a.W, G: a.G}},
		"unnamed":   {{Shape: []int{2}, W: a.W, G: a.G}},
	} {
		if _, err := NewAdamW(be, ps, Default().Optim); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Save at step 3, load into a fresh optimizer, take 2 more steps on both:
// weights and state stay bit-identical.
func TestOptimizerSaveLoadBitExact(t *testing.T) {
	be := kernels.NewCPU()
	rng := NewRNG(7, "test")
	mk := func() []Param {
		return []Param{
			newParam(be, "layer.0.A", []int{3, 4}, make([]float32, 12), make([]float32, 12)),
			newParam(be, "layer.0.B", []int{5, 3}, make([]float32, 15), make([]float32, 15)),
		}
	}
	grads := make([][][]float32, 5)
	for s := range grads {
		for _, n := range []int{12, 15} {
			g := make([]float32, n)
			for i := range g {
				g[i] = float32(rng.NormFloat64())
			}
			grads[s] = append(grads[s], g)
		}
	}
	step := func(o *AdamW, s int) {
		for i, p := range o.Params() {
			be.CopyIn(p.G, grads[s][i])
		}
		if err := o.Step(1e-3 * float64(s+1)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Default().Optim
	cfg.WeightDecay = 0.1
	a, _ := NewAdamW(be, mk(), cfg)
	for s := 0; s < 3; s++ {
		step(a, s)
	}
	dir := t.TempDir()
	p1 := filepath.Join(dir, "a.safetensors")
	if err := a.Save(p1); err != nil {
		t.Fatal(err)
	}
	bParams := mk()
	for i, p := range a.Params() { // the weights travel with the model files
		be.Copy(bParams[i].W, p.W)
	}
	b, _ := NewAdamW(be, bParams, cfg)
	if err := b.Load(p1); err != nil {
		t.Fatal(err)
	}
	if b.Steps() != 3 {
		t.Fatalf("loaded step %d, want 3", b.Steps())
	}
	p2 := filepath.Join(dir, "b.safetensors")
	if err := b.Save(p2); err != nil {
		t.Fatal(err)
	}
	if !filesEqual(t, p1, p2) {
		t.Fatal("save → load → save is not byte-identical")
	}
	for s := 3; s < 5; s++ {
		step(a, s)
		step(b, s)
	}
	for i := range a.Params() {
		wa, wb := read(be, a.Params()[i].W), read(be, b.Params()[i].W)
		for j := range wa {
			if math.Float32bits(wa[j]) != math.Float32bits(wb[j]) {
				t.Fatalf("%s[%d]: %v vs %v after resume", a.Params()[i].Name, j, wa[j], wb[j])
			}
		}
	}
	a.Save(p1)
	b.Save(p2)
	if !filesEqual(t, p1, p2) {
		t.Fatal("optimizer state differs after 2 more steps")
	}

	// Wrong param set: a missing tensor, a wrong shape, an extra tensor.
	other := []Param{newParam(be, "layer.0.A", []int{4, 3}, make([]float32, 12), make([]float32, 12))}
	c, _ := NewAdamW(be, other, cfg)
	if err := c.Load(p1); err == nil || !strings.Contains(err.Error(), "layer.0.A") {
		t.Fatalf("shape mismatch: %v", err)
	}
	only := []Param{newParam(be, "layer.0.A", []int{3, 4}, make([]float32, 12), make([]float32, 12))}
	d, _ := NewAdamW(be, only, cfg)
	if err := d.Load(p1); err == nil || !strings.Contains(err.Error(), "layer.0.B") {
		t.Fatalf("extra tensor: %v", err)
	}
}

func filesEqual(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

func TestGradAccumAndParamsFile(t *testing.T) {
	be := kernels.NewCPU()
	p := newParam(be, "head.weight", []int{2, 2}, []float32{1, 2, 3, 4}, []float32{1, 1, 1, 1})
	acc, err := NewGradAccum(be, []Param{p})
	if err != nil {
		t.Fatal(err)
	}
	acc.Zero()
	acc.Add(0.5)
	be.CopyIn(p.G, []float32{3, -1, 0, 2})
	acc.Add(0.5)
	want := []float32{2, 0, 0.5, 1.5}
	for i, v := range read(be, acc.Params()[0].G) {
		if v != want[i] {
			t.Fatalf("accumulated %v, want %v", read(be, acc.Params()[0].G), want)
		}
	}
	acc.Zero()
	if g := read(be, acc.Params()[0].G); g[0] != 0 || g[3] != 0 {
		t.Fatalf("Zero left %v", g)
	}

	path := filepath.Join(t.TempDir(), ValueHeadFile)
	if err := WriteParams(be, path, []Param{p}); err != nil {
		t.Fatal(err)
	}
	q := newParam(be, "head.weight", []int{2, 2}, make([]float32, 4), make([]float32, 4))
	if err := ReadParams(be, path, []Param{q}); err != nil {
		t.Fatal(err)
	}
	if got := read(be, q.W); got[0] != 1 || got[3] != 4 {
		t.Fatalf("read back %v", got)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if info, ok := f.Info("head.weight"); !ok || info.DType != safetensors.F32 || len(info.Shape) != 2 {
		t.Fatalf("tensor info %+v", info)
	}
	bad := newParam(be, "head.bias", []int{2}, make([]float32, 2), make([]float32, 2))
	if err := ReadParams(be, path, []Param{bad}); err == nil || !strings.Contains(err.Error(), "head.bias") {
		t.Fatalf("missing tensor: %v", err)
	}
}
