package ckpt

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/optim"
)

// optimizer.safetensors: save at step 3, load into a fresh optimizer, take
// 2 more steps on both: weights and state stay bit-identical, and the file
// is byte-identical after save → load → save.
func TestOptimizerFileBitExact(t *testing.T) {
	be := kernels.NewCPU()
	rng := batch.NewRNG(7, "test")
	mk := func() []*model.Param {
		return []*model.Param{
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
	step := func(o *optim.AdamW, s int) {
		for i, p := range o.Params() {
			be.CopyIn(p.G, grads[s][i])
		}
		if err := o.Step(1e-3 * float64(s+1)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := defaultAdamW
	cfg.WeightDecay = 0.1
	a, _ := optim.NewAdamW(be, mk(), cfg)
	for s := 0; s < 3; s++ {
		step(a, s)
	}
	dir := t.TempDir()
	p1 := filepath.Join(dir, "a.safetensors")
	if err := SaveOptimizer(p1, a); err != nil {
		t.Fatal(err)
	}
	bParams := mk()
	for i, p := range a.Params() { // the weights travel with the model files
		be.Copy(bParams[i].W, p.W)
	}
	b, _ := optim.NewAdamW(be, bParams, cfg)
	if err := LoadOptimizer(p1, b); err != nil {
		t.Fatal(err)
	}
	if b.Steps() != 3 {
		t.Fatalf("loaded step %d, want 3", b.Steps())
	}
	p2 := filepath.Join(dir, "b.safetensors")
	if err := SaveOptimizer(p2, b); err != nil {
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
	SaveOptimizer(p1, a)
	SaveOptimizer(p2, b)
	if !filesEqual(t, p1, p2) {
		t.Fatal("optimizer state differs after 2 more steps")
	}

	// Wrong param set: a missing tensor, a wrong shape, an extra tensor.
	other := []*model.Param{newParam(be, "layer.0.A", []int{4, 3}, make([]float32, 12), make([]float32, 12))}
	c, _ := optim.NewAdamW(be, other, cfg)
	if err := LoadOptimizer(p1, c); err == nil || !strings.Contains(err.Error(), "layer.0.A") {
		t.Fatalf("shape mismatch: %v", err)
	}
	only := []*model.Param{newParam(be, "layer.0.A", []int{3, 4}, make([]float32, 12), make([]float32, 12))}
	d, _ := optim.NewAdamW(be, only, cfg)
	if err := LoadOptimizer(p1, d); err == nil || !strings.Contains(err.Error(), "layer.0.B") {
		t.Fatalf("extra tensor: %v", err)
	}
}

func TestParamsFile(t *testing.T) {
	be := kernels.NewCPU()
	p := newParam(be, "head.weight", []int{2, 2}, []float32{1, 2, 3, 4}, []float32{1, 1, 1, 1})
	path := filepath.Join(t.TempDir(), ValueHeadFile)
	if err := WriteParams(be, path, []*model.Param{p}); err != nil {
		t.Fatal(err)
	}
	q := newParam(be, "head.weight", []int{2, 2}, make([]float32, 4), make([]float32, 4))
	if err := ReadParams(be, path, []*model.Param{q}); err != nil {
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
	if err := ReadParams(be, path, []*model.Param{bad}); err == nil || !strings.Contains(err.Error(), "head.bias") {
		t.Fatalf("missing tensor: %v", err)
	}
}

func TestRNGStateRoundTrip(t *testing.T) {
	a := batch.NewRNG(42, "dropout")
	for i := 0; i < 17; i++ {
		a.Uint64()
	}
	st := TrainerState{}
	if err := st.PutRNG("dropout", a); err != nil {
		t.Fatal(err)
	}
	b := batch.NewRNG(0, "other")
	if err := st.GetRNG("dropout", b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d after restore: %d vs %d", i, x, y)
		}
	}
	if batch.NewRNG(42, "dropout").Uint64() == batch.NewRNG(42, "sampling").Uint64() {
		t.Fatal("named streams of one seed coincide")
	}
	if err := st.GetRNG("missing", b); err == nil {
		t.Fatal("missing RNG state accepted")
	}
	if err := b.UnmarshalBinary([]byte("garbage")); err == nil {
		t.Fatal("garbage RNG state accepted")
	}
}

// testdata/step-000003 was written by the trainer before it was split into
// packages (a 2-tensor AdamW after 3 steps, weight decay 0.01 except on the
// norm): the checkpoint still verifies and loads, and the same training
// state written today gives the same bytes in every file.
func TestCheckpointFormatUnchanged(t *testing.T) {
	const golden = "testdata/step-000003"
	be := kernels.NewCPU()
	mk := func() []*model.Param {
		return []*model.Param{
			newParam(be, "base_model.model.layers.0.q_proj.lora_A.weight", []int{2, 3}, []float32{0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, make([]float32, 6)),
			newParam(be, "model.norm.weight", []int{3}, []float32{1, 1, 1}, make([]float32, 3)),
		}
	}
	cfg := defaultAdamW
	cfg.WeightDecay, cfg.NoDecay = 0.01, optim.NormsAndBiases
	ps := mk()
	o, err := optim.NewAdamW(be, ps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3; s++ {
		for i, p := range ps {
			g := make([]float32, p.Len())
			for j := range g {
				g[j] = float32(math.Sin(float64(100*s + 10*i + j)))
			}
			be.CopyIn(p.G, g)
		}
		if err := o.Step(1e-2 * float64(s+1)); err != nil {
			t.Fatal(err)
		}
	}
	ck, err := OpenDir(golden, 3)
	if err != nil {
		t.Fatal(err)
	}
	loaded, _ := optim.NewAdamW(be, mk(), cfg)
	if err := LoadOptimizer(ck.Path(OptimizerFile), loaded); err != nil || loaded.Steps() != 3 {
		t.Fatalf("golden optimizer: step %d, %v", loaded.Steps(), err)
	}
	noise := batch.NewRNG(0, "noise")
	if err := ck.State.GetRNG("noise", noise); err != nil || noise.Uint64() != batch.NewRNG(5, "noise").Uint64() {
		t.Fatalf("golden RNG state: %v", err)
	}
	sched, _ := optim.NewSchedule(optim.ScheduleConfig{Kind: "cosine", LR: 1e-4, WarmupRatio: 0.05}, 10)
	best := 0.5
	st := TrainerState{Step: 3, Epoch: 1, Cursor: 2, Scheduler: sched, BestMetric: &best, BestStep: 2, TokensSeen: 1234, ConfigHash: "sha256:0123"}
	st.PutRNG("noise", batch.NewRNG(5, "noise"))
	st.Extra = []byte(`{"dropout_counter":7}`)
	for _, opt := range []*optim.AdamW{o, loaded} { // trained here, and restored from the golden file
		c, err := New(t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		params := opt.Params()
		if opt == loaded { // the weights travel with the model file
			if err := ReadParams(be, ck.Path("model.safetensors"), params); err != nil {
				t.Fatal(err)
			}
		}
		dir, err := c.Save(Snapshot{State: st, Optimizer: opt, Model: func(dir string) error {
			return WriteParams(be, filepath.Join(dir, "model.safetensors"), params)
		}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{StateFile, OptimizerFile, "model.safetensors", SumsFile} {
			a, _ := os.ReadFile(filepath.Join(golden, f))
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("%s differs from the golden checkpoint's:\n%s\nvs\n%s", f, b, a)
			}
		}
	}
}
