package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

// The SFT test corpus (testdata/sft, see gen.py there): 24 training and 8
// validation records over three small tools, about 210 tokens each with the
// 512-token BPE of testdata/sft/tiny (a qwen2 config with the fixture
// models' dimensions, C=64, L=2, V=512, no weights: model.init random), and
// about 420 with the 320-token BPE of testdata/sft/tok320, which fits the
// fixture models of testdata/models (V=320).
const (
	sftTrain   = "testdata/sft/train.jsonl"
	sftVal     = "testdata/sft/val.jsonl"
	tinyModel  = "testdata/sft/tiny"
	tok320     = "testdata/sft/tok320"
	fixtureDir = "../testdata/models"
)

// tinyConfig: LoRA r=8 on the randomly initialized tiny model, 6 steps of
// 2×2 sequences, eval at 3 and 6, checkpoints every 2 steps.
func tinyConfig(dir string) config.Config {
	c := config.Default()
	c.Run.Dir, c.Run.Seed = dir, 7
	c.Model.Path, c.Model.Init, c.Model.System, c.Model.MaxLen = tinyModel, "random", "You call tools.", 512
	c.Data.Train, c.Data.Val = sftTrain, sftVal
	c.LoRA.R, c.LoRA.Alpha = 8, 16
	c.Optim.LR, c.Optim.BatchSize, c.Optim.GradAccum, c.Optim.MaxSteps = 1e-2, 2, 2, 6
	c.Optim.WarmupRatio, c.Optim.WeightDecay = 0.2, 0.01
	c.EvalEvery, c.Rollout.MaxNewTokens = 3, 12
	c.Checkpoint.Every, c.Checkpoint.KeepLast = 2, 2
	return c
}

// fixtureConfig trains LoRA on the fixture model name with the 320-token
// BPE, without validation.
func fixtureConfig(dir, name string) config.Config {
	c := tinyConfig(dir)
	c.Model.Path, c.Model.Init, c.Model.Tokenizer = filepath.Join(fixtureDir, name), "pretrained", tok320
	c.Data.Val = ""
	c.Optim.WarmupRatio = 0
	return c
}

func runSFT(t *testing.T, cfg config.Config, resume bool, hook func(*Setup, int, metrics.Metrics)) *SFTResult {
	t.Helper()
	var log bytes.Buffer
	res, err := SFT(context.Background(), cfg, SFTOptions{Resume: resume, Log: &log, AfterBackward: hook})
	if err != nil {
		t.Fatalf("sft: %v\n%s", err, log.String())
	}
	return res
}

func readTensors(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, n := range f.Names() {
		if out[n], _, err = f.Float32(n); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func trainLosses(t *testing.T, run string) []float64 {
	t.Helper()
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, r := range recs {
		if r.Kind == "train" {
			out = append(out, r.Values["loss"])
		}
	}
	return out
}

// LoRA A and B change; every frozen base tensor stays bit-identical to the
// checkpoint file (fixture qwen2-f32, 3 steps).
func TestSFTLoRATrainsBaseFrozen(t *testing.T) {
	const name = "qwen2-f32"
	cfg := fixtureConfig(t.TempDir(), name)
	cfg.Optim.MaxSteps, cfg.Optim.GradAccum = 3, 1
	base, err := safetensors.OpenDir(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	want := map[string][]float32{}
	for _, n := range base.Names() {
		if want[n], _, err = base.Float32(n); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	hook := func(s *Setup, step int, _ metrics.Metrics) {
		if step != cfg.Optim.MaxSteps {
			return
		}
		for _, p := range s.Model.Params() {
			if p.G != nil {
				continue
			}
			got := make([]float32, p.Len())
			s.Backend.CopyOut(got, p.W)
			w := want[p.Name]
			if w == nil || len(w) != len(got) {
				t.Errorf("frozen tensor %s: not in the checkpoint", p.Name)
				continue
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(w[i]) {
					t.Errorf("base tensor %s[%d] changed: %v → %v", p.Name, i, w[i], got[i])
					break
				}
			}
			checked++
		}
	}
	res := runSFT(t, cfg, false, hook)
	if checked != len(want) {
		t.Fatalf("checked %d frozen tensors, the checkpoint has %d", checked, len(want))
	}
	// The adapter moved away from its initialization (A seeded, B = 0).
	be := kernels.NewCPU()
	init, err := model.Open(cfg.Model.Path, be, model.Options{LoRA: LoRAOptions(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	defer init.Close()
	a0, err := init.Adapter()
	if err != nil {
		t.Fatal(err)
	}
	trained := readTensors(t, filepath.Join(res.Checkpoint, model.AdapterWeightsName))
	if len(trained) != 2*len(a0.Modules) {
		t.Fatalf("adapter has %d tensors, want %d", len(trained), 2*len(a0.Modules))
	}
	for path, l := range a0.Modules {
		for _, p := range []*model.Tensor{l.A, l.B} {
			got := trained[p.Name]
			diff := 0.0
			for i := range got {
				diff = math.Max(diff, math.Abs(float64(got[i]-p.Data[i])))
			}
			if !(diff > 1e-6) {
				t.Errorf("%s %s did not change (max |Δ| %g)", path, p.Name, diff)
			}
		}
	}
}

// One step of 8 sequences × 1 micro-batch equals 8 micro-batches of 1
// (fixture qwen2-f32, LoRA, dropout 0, two steps of ~3400 tokens): the loss
// and the grad norm agree within 1e-6 relative, and so do the weights after
// two AdamW updates, as one vector. Per tensor, the accumulated gradients
// and the weights agree within 1e-5: float32 sums over ~400 positions in a
// different order differ by ~1e-6 (measured 1.2e-6), and Adam's
// per-element m/√v magnifies that noise on near-zero gradient elements
// (measured 2.1e-6 on one tensor, 1.6e-7 overall).
func TestSFTAccumulation8x1Equals1x8(t *testing.T) {
	type result struct {
		ck    string
		recs  []metrics.Record
		grads map[string][]float32 // step·name → G before the update
	}
	run := func(micro, accum int) result {
		cfg := fixtureConfig(t.TempDir(), "qwen2-f32")
		cfg.LoRA.Dropout = 0 // dropout masks depend on the batch layout
		cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Optim.MaxSteps = micro, accum, 2
		r := result{grads: map[string][]float32{}}
		hook := func(s *Setup, step int, _ metrics.Metrics) {
			for _, p := range s.Model.Trainable() {
				g := make([]float32, p.Len())
				s.Backend.CopyOut(g, p.G)
				r.grads[fmt.Sprint(step, p.Name)] = g
			}
		}
		r.ck = runSFT(t, cfg, false, hook).Checkpoint
		var err error
		if r.recs, err = metrics.Read(filepath.Join(cfg.Run.Dir, metrics.File)); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(8, 1), run(1, 8)
	rel := func(x, y float64) float64 { return math.Abs(x-y) / math.Max(math.Abs(x), 1e-30) }
	for i := range a.recs {
		for _, k := range []string{"loss", "grad_norm"} {
			x, y := a.recs[i].Values[k], b.recs[i].Values[k]
			if rel(x, y) > 1e-6 {
				t.Errorf("step %d %s: 8×1 %v, 1×8 %v (rel %g)", a.recs[i].Step, k, x, y, rel(x, y))
			}
		}
		t.Logf("step %d: loss %.7f vs %.7f, grad_norm %.7f vs %.7f", a.recs[i].Step, a.recs[i].Values["loss"], b.recs[i].Values["loss"], a.recs[i].Values["grad_norm"], b.recs[i].Values["grad_norm"])
	}
	// relNorm returns max over tensors and overall ‖x − y‖/‖x‖.
	relNorm := func(x, y map[string][]float32) (worst, all float64) {
		var d2all, n2all float64
		for n, xs := range x {
			ys := y[n]
			if len(ys) != len(xs) {
				t.Fatalf("%s: %d vs %d values", n, len(xs), len(ys))
			}
			var d2, n2 float64
			for i := range xs {
				d := float64(xs[i] - ys[i])
				d2 += d * d
				n2 += float64(xs[i]) * float64(xs[i])
			}
			if n2 > 0 {
				worst = math.Max(worst, math.Sqrt(d2/n2))
			}
			d2all, n2all = d2all+d2, n2all+n2
		}
		return worst, math.Sqrt(d2all / n2all)
	}
	gw, ga := relNorm(a.grads, b.grads)
	if len(a.grads) != 2*28 || gw > 1e-5 || ga > 1e-5 {
		t.Errorf("gradients (%d tensors over 2 steps): worst ‖Δ‖/‖g‖ = %g", len(a.grads), gw)
	}
	ww, wa := relNorm(readTensors(t, filepath.Join(a.ck, model.AdapterWeightsName)), readTensors(t, filepath.Join(b.ck, model.AdapterWeightsName)))
	if wa > 1e-6 || ww > 1e-5 {
		t.Errorf("weights after 2 updates: ‖Δ‖/‖w‖ = %g overall, %g worst tensor", wa, ww)
	}
	t.Logf("gradients: ‖Δ‖/‖g‖ %.3g worst tensor, %.3g overall; weights after 2 updates: %.3g worst tensor, %.3g overall", gw, ga, ww, wa)
}

// Full fine-tuning from random initialization memorizes two records: the
// training loss falls from ln 512 ≈ 6.2 below 0.5 nats per target token
// within 45 steps (measured: 6.31 → 0.04).
func TestSFTMemorizes(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(sftTrain)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfterN(raw, []byte("\n"), 3)
	small := filepath.Join(dir, "two.jsonl")
	if err := os.WriteFile(small, bytes.Join(lines[:2], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := tinyConfig(filepath.Join(dir, "run"))
	cfg.LoRA.Enabled = false
	cfg.Data.Train, cfg.Data.Val = small, ""
	cfg.Optim.LR, cfg.Optim.Schedule, cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Optim.MaxSteps = 1e-2, "constant", 2, 1, 45
	cfg.Optim.WarmupRatio, cfg.Optim.WeightDecay = 0.05, 0
	cfg.Checkpoint.Every = 0
	runSFT(t, cfg, false, nil)
	l := trainLosses(t, cfg.Run.Dir)
	const threshold = 0.5
	if last := l[len(l)-1]; !(last < threshold) || !(l[0] > 5.5) {
		t.Fatalf("loss %.3f → %.3f after %d steps; want a start near ln 512 and an end below %v", l[0], last, len(l), threshold)
	}
	t.Logf("memorization: loss %.3f → %.3f in %d steps", l[0], l[len(l)-1], len(l))
}

// stopAfter makes SFT return after step n (a kill: the work since the
// last checkpoint is lost): a context and the hook that cancels it.
func stopAfter(n int) (context.Context, func(*Setup, int, metrics.Metrics), func()) {
	ctx, cancel := context.WithCancel(context.Background())
	hook := func(_ *Setup, step int, _ metrics.Metrics) {
		if step == n {
			cancel()
		}
	}
	return ctx, hook, cancel
}

// Straight N steps vs. a run stopped after step 3 (checkpoint at 2) and
// resumed: byte-identical final model files, optimizer state, losses and
// best/, for LoRA (dropout 0.05 and evaluation on) and for full
// fine-tuning from random initialization.
func TestSFTResumeBitIdentical(t *testing.T) {
	for _, mode := range []string{"lora", "full"} {
		t.Run(mode, func(t *testing.T) {
			mk := func(dir string) config.Config {
				c := tinyConfig(dir)
				if mode == "full" {
					c.LoRA.Enabled, c.Optim.LR, c.Optim.MaxSteps, c.EvalEvery = false, 3e-3, 4, 2
				}
				return c
			}
			a, b := mk(t.TempDir()), mk(t.TempDir())
			resA := runSFT(t, a, false, nil)
			ctx, hook, done := stopAfter(3)
			_, err := SFT(ctx, b, SFTOptions{Log: &bytes.Buffer{}, AfterBackward: hook})
			done()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped run: %v", err)
			}
			if latest, _ := os.ReadFile(filepath.Join(b.Run.Dir, ckpt.CheckpointsDir, ckpt.LatestFile)); string(latest) != "step-000002\n" {
				t.Fatalf("latest after the stop: %q", latest)
			}
			resB := runSFT(t, b, true, nil)
			final := filepath.Base(resA.Checkpoint)
			if filepath.Base(resB.Checkpoint) != final {
				t.Fatalf("final checkpoints %s and %s", resA.Checkpoint, resB.Checkpoint)
			}
			files := []string{ckpt.OptimizerFile, model.AdapterWeightsName}
			if mode == "full" {
				files[1] = safetensors.SingleName
			}
			for _, f := range files {
				if !filesEqual(t, filepath.Join(resA.Checkpoint, f), filepath.Join(resB.Checkpoint, f)) {
					t.Errorf("%s differs between the straight and the resumed run", f)
				}
			}
			la, lb := trainLosses(t, a.Run.Dir), trainLosses(t, b.Run.Dir)
			if len(la) != len(lb) {
				t.Fatalf("%d vs %d logged steps", len(la), len(lb))
			}
			for i := range la {
				if la[i] != lb[i] {
					t.Errorf("step %d loss: %v straight, %v resumed", i+1, la[i], lb[i])
				}
			}
			if !(la[len(la)-1] < la[0]) {
				t.Errorf("loss did not fall: %v", la)
			}
			ba, err := ckpt.OpenDir(filepath.Join(a.Run.Dir, ckpt.BestDir), -1)
			if err != nil {
				t.Fatal(err)
			}
			bb, err := ckpt.OpenDir(filepath.Join(b.Run.Dir, ckpt.BestDir), -1)
			if err != nil || ba.State.Step != bb.State.Step || *ba.State.BestMetric != *bb.State.BestMetric {
				t.Fatalf("best/: %+v vs %+v (%v)", ba.State, bb.State, err)
			}
			t.Logf("%s: losses %.4f → %.4f over %d steps; best %s %.3f at step %d", mode, la[0], la[len(la)-1], len(la), a.Checkpoint.BestMetric, *ba.State.BestMetric, ba.State.Step)
		})
	}
}

// Bad input fails before training with an error naming the key or file;
// a NaN loss stops the run without an update or a checkpoint and keeps the
// last good checkpoint as latest.
func TestSFTErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("optim:\n  lr: 0.1\n  lrr: 0.2\n"), 0o644)
	if _, err := config.Load(p, nil); err == nil || !strings.Contains(err.Error(), `unknown key "optim.lrr"`) || !strings.Contains(err.Error(), "c.yaml:3") {
		t.Errorf("unknown key: %v", err)
	}
	sft := func(cfg config.Config, hook func(*Setup, int, metrics.Metrics)) error {
		_, err := SFT(context.Background(), cfg, SFTOptions{Log: &bytes.Buffer{}, AfterBackward: hook})
		return err
	}
	cfg := tinyConfig(filepath.Join(dir, "r1"))
	cfg.Data.Train = filepath.Join(dir, "missing.jsonl")
	if err := sft(cfg, nil); err == nil || !strings.Contains(err.Error(), "missing.jsonl") || !strings.Contains(err.Error(), "data.train") {
		t.Errorf("missing dataset: %v", err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	cfg.Data.Train = empty
	if err := sft(cfg, nil); err == nil || !strings.Contains(err.Error(), "no assistant targets") || !strings.Contains(err.Error(), "no records") {
		t.Errorf("empty dataset: %v", err)
	}
	cfg = tinyConfig(filepath.Join(dir, "r2"))
	cfg.Model.MaxLen = 100 // every prompt is longer: no target token fits
	if err := sft(cfg, nil); err == nil || !strings.Contains(err.Error(), "no assistant targets") || !strings.Contains(err.Error(), "model.max_len = 100") {
		t.Errorf("dataset without targets: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "r2", ConfigFile)); err == nil {
		t.Errorf("a failed setup wrote a run directory")
	}

	cfg = tinyConfig(filepath.Join(dir, "nan"))
	cfg.Checkpoint.Every = 1
	nan := func(_ *Setup, step int, m metrics.Metrics) {
		if step == 3 {
			m["loss"] = math.NaN()
		}
	}
	err := sft(cfg, nan)
	var nf *metrics.NonFiniteError
	if !errors.As(err, &nf) || nf.Step != 3 || nf.LastGood != "step-000002" || !strings.Contains(err.Error(), "loss is NaN") {
		t.Fatalf("NaN loss: %v", err)
	}
	ck, err := ckpt.New(cfg.Run.Dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	names, _ := ck.List()
	if latest, _ := ck.Latest(); latest != "step-000002" || len(names) != 2 {
		t.Fatalf("after the NaN: latest %q, checkpoints %v", latest, names)
	}
	if _, err := ck.Resume("", false, nil); err != nil {
		t.Fatalf("the last good checkpoint does not verify: %v", err)
	}
}

// The exported adapter loads back through the PEFT importer (model.Open
// with Options.Adapter, and ImportPEFT) with log-probs bit-identical to the
// in-memory model that wrote it (fixture llama-f32, qwen2.5 template).
func TestSFTAdapterRoundTrip(t *testing.T) {
	cfg := fixtureConfig(t.TempDir(), "llama-f32")
	cfg.Model.Template = "qwen2.5" // the 320-token BPE has ChatML's special tokens
	cfg.Optim.MaxSteps, cfg.Optim.GradAccum, cfg.Checkpoint.Every, cfg.Checkpoint.KeepLast = 3, 1, 2, 0
	var trained, base *model.Outputs
	var seqs [][]int32
	hook := func(s *Setup, step int, _ metrics.Metrics) {
		if step != 3 { // the weights of step-000002: two updates done
			return
		}
		for _, ex := range s.Train.Examples[:3] {
			seqs = append(seqs, ex.IDs)
		}
		var err error
		if trained, err = s.Model.Forward(seqs, true); err == nil {
			base, err = s.Model.Forward(seqs, false)
		}
		if err != nil {
			t.Error(err)
		}
	}
	runSFT(t, cfg, false, hook)
	if trained == nil {
		t.Fatal("the hook did not run")
	}
	ck := filepath.Join(cfg.Run.Dir, ckpt.CheckpointsDir, "step-000002")
	back, err := model.Open(cfg.Model.Path, kernels.NewCPU(), model.Options{Adapter: ck, MaxLen: cfg.Model.MaxLen, Compute: cfg.Model.Compute}) // the run's arithmetic
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	got, err := back.Forward(seqs, true)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0.0
	for b := range seqs {
		for i := range seqs[b] {
			if trained.LogProbs[b][i] != got.LogProbs[b][i] {
				t.Fatalf("seq %d token %d: log-prob %v trained, %v reloaded", b, i, trained.LogProbs[b][i], got.LogProbs[b][i])
			}
			moved = math.Max(moved, math.Abs(float64(got.LogProbs[b][i]-base.LogProbs[b][i])))
		}
	}
	if !(moved > 1e-3) {
		t.Fatalf("the adapter does not change the log-probs (max |Δ| %g)", moved)
	}
	a, err := model.ImportPEFT(ck, back.Config)
	if err != nil {
		t.Fatal(err)
	}
	if a.R != cfg.LoRA.R || a.Alpha != cfg.LoRA.Alpha || a.BaseModel != cfg.Model.Path || len(a.Modules) != 14 {
		t.Fatalf("adapter_config: r=%d α=%v base %q, %d modules", a.R, a.Alpha, a.BaseModel, len(a.Modules))
	}
	t.Logf("%d sequences: reloaded log-probs identical; the adapter moves them by up to %.3g", len(seqs), moved)
}

// configs/sft.yaml carries paper 001's hyper-parameters; configs/sft-tiny.yaml
// runs from the repository root as its first line says.
func TestSFTConfigs(t *testing.T) {
	for _, name := range []string{"sft.yaml", "sft-tiny.yaml"} {
		p := filepath.Join("..", "configs", name)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(raw), "\n"); first != "# train sft --config configs/"+name {
			t.Errorf("%s: first line %q", name, first)
		}
		c, err := config.Load(p, []string{"algo=sft"})
		if err != nil {
			t.Fatal(err)
		}
		if name == "sft.yaml" {
			l, o := c.LoRA, c.Optim
			if !l.Enabled || l.R != 32 || l.Alpha != 64 || l.Dropout != 0.05 || len(l.Targets) != 7 ||
				o.LR != 1e-4 || o.WarmupRatio != 0.05 || o.Schedule != "cosine" || o.Epochs != 2 || o.GradClip != 1 ||
				o.BatchSize*o.GradAccum != 64 || c.Checkpoint.BestMetric != "fcm" {
				t.Errorf("sft.yaml departs from paper 001: %+v %+v", l, o)
			}
		}
	}
	t.Chdir("..")
	c, err := config.Load("configs/sft-tiny.yaml", []string{"algo=sft", "run.dir=" + t.TempDir(), "optim.max_steps=2", "eval_every=2", "rollout.max_new_tokens=4"})
	if err != nil {
		t.Fatal(err)
	}
	res := runSFT(t, c, false, nil)
	if res.Steps != 2 || res.Best == nil {
		t.Fatalf("sft-tiny: %+v", res)
	}
}
