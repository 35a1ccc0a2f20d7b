package trainer

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/argrl/argrl/kernels"
)

// toyTrain is a miniature recipe over the whole infrastructure: a linear
// model y = w·x fitted by AdamW with the schedule, clipping, gradient
// accumulation over the Batcher's micro-batches, an RNG stream perturbing
// gradients, metrics, evaluation, best/ and checkpoints. It stops after
// stopAfter steps without a final checkpoint (a kill) and returns w.
func toyTrain(t *testing.T, cfg Config, resume bool, stopAfter int) []float32 {
	t.Helper()
	const D = 6
	data := NewRNG(99, "toy-data")
	n := 37
	xs, ys, lens := make([][]float32, n), make([]float32, n), make([]int, n)
	for i := range xs {
		xs[i] = make([]float32, D)
		for j := range xs[i] {
			xs[i][j] = float32(data.NormFloat64())
			ys[i] += float32(j+1) * xs[i][j]
		}
		lens[i] = 10 + data.IntN(200)
	}
	run, err := OpenRun(cfg, resume, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	be := kernels.NewCPU()
	w := newParam(be, "w", []int{D}, make([]float32, D), make([]float32, D))
	acc, _ := NewGradAccum(be, []Param{w})
	opt, err := NewAdamW(be, acc.Params(), cfg.Optim)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewBatcher(lens, cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Data.BucketWindow, cfg.Run.Seed)
	total := cfg.Optim.MaxSteps
	sched, _ := NewSchedule(cfg.Optim, total)
	noise := NewRNG(cfg.Run.Seed, "noise")
	start := 0
	if ck := run.Resumed; ck != nil {
		st := ck.State
		if err := ReadParams(be, ck.Path("model.safetensors"), []Param{w}); err != nil {
			t.Fatal(err)
		}
		if err := opt.Load(ck.Path(OptimizerFile)); err != nil {
			t.Fatal(err)
		}
		if err := b.Seek(st.Epoch, st.Cursor); err != nil {
			t.Fatal(err)
		}
		if err := st.GetRNG("noise", noise); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(st.Scheduler, sched) {
			t.Fatalf("scheduler %+v, restored %+v", sched, st.Scheduler)
		}
		start = st.Step
	}
	for step := start + 1; step <= total && step <= stopAfter; step++ {
		sb := b.Next()
		acc.Zero()
		var loss float64
		for _, mb := range sb.Micro {
			wh := read(be, w.W)
			g := make([]float32, D)
			for _, i := range mb {
				var pred float32
				for j := range wh {
					pred += wh[j] * xs[i][j]
				}
				r := pred - ys[i]
				loss += float64(r*r) / float64(len(sb.Records()))
				for j := range g {
					g[j] += 2 * r * xs[i][j] / float32(len(sb.Records()))
				}
			}
			for j := range g {
				g[j] += float32(0.01 * noise.NormFloat64())
			}
			be.CopyIn(w.G, g)
			acc.Add(1)
		}
		norm, err := ClipGradNorm(be, acc.Params(), cfg.Optim.GradClip)
		if err != nil {
			t.Fatal(err)
		}
		m := Metrics{"loss": loss, "grad_norm": norm, "lr": sched.LR(step - 1), "epoch": float64(sb.Epoch)}
		if err := run.CheckFinite(step, m, "loss", "grad_norm"); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(sched.LR(step - 1)); err != nil {
			t.Fatal(err)
		}
		run.Metrics.Log("train", step, m)
		best := false
		if step%cfg.EvalEvery == 0 {
			e := Metrics{"fcm": 1 / (1 + loss)}
			run.Metrics.Log("eval", step, e)
			best = run.Improved(step, e)
		}
		if step%cfg.Checkpoint.Every == 0 || best {
			ep, cur := b.Position()
			st := TrainerState{Step: step, Epoch: ep, Cursor: cur, Scheduler: sched}
			st.PutRNG("noise", noise)
			_, err := run.Save(Snapshot{State: st, Optimizer: opt, Best: best,
				Model: func(dir string) error { return WriteParams(be, filepath.Join(dir, "model.safetensors"), []Param{w}) }})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return read(be, w.W)
}

func toyConfig(dir string) Config {
	c := Default()
	c.Run.Dir = dir
	c.Optim.LR, c.Optim.BatchSize, c.Optim.GradAccum, c.Optim.MaxSteps = 0.5, 3, 2, 14
	c.Optim.WarmupRatio, c.Optim.WeightDecay, c.Optim.GradClip = 0.1, 0.01, 5
	c.Data.BucketWindow = 2
	c.EvalEvery, c.Checkpoint.Every, c.Checkpoint.KeepLast = 4, 3, 2
	return c
}

// Straight 14 steps vs. 8 steps (checkpoint at 6, kill after 8) + resume:
// identical weights, checkpoint files, metrics.jsonl and best/.
func TestToyResumeBitIdentical(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	wa := toyTrain(t, toyConfig(a), false, 1<<30)
	toyTrain(t, toyConfig(b), false, 8)
	wb := toyTrain(t, toyConfig(b), true, 1<<30)
	for i := range wa {
		if math.Float32bits(wa[i]) != math.Float32bits(wb[i]) {
			t.Fatalf("w[%d]: %v straight, %v resumed", i, wa[i], wb[i])
		}
	}
	ck := filepath.Join(CheckpointsDir, "step-000012")
	for _, f := range []string{MetricsFile, filepath.Join(ck, "model.safetensors"),
		filepath.Join(ck, OptimizerFile), filepath.Join(ck, StateFile), filepath.Join(ck, SumsFile)} {
		if !filesEqual(t, filepath.Join(a, f), filepath.Join(b, f)) {
			t.Errorf("%s differs between the straight and the resumed run", f)
		}
	}
	ba, err := OpenCheckpoint(filepath.Join(a, BestDir), -1)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := OpenCheckpoint(filepath.Join(b, BestDir), -1)
	if err != nil || ba.State.Step != bb.State.Step || *ba.State.BestMetric != *bb.State.BestMetric || ba.State.BestStep != ba.State.Step {
		t.Fatalf("best/: %+v vs %+v (%v)", ba.State, bb.State, err)
	}
	// The toy does learn: the loss falls (so the comparison is not of two
	// runs that both stood still).
	recs, err := ReadMetrics(filepath.Join(a, MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	first, last := recs[0].Values["loss"], recs[len(recs)-1].Values["loss"]
	if recs[len(recs)-1].Kind != "train" || !(last < first/4) {
		t.Fatalf("toy loss %v → %v", first, last)
	}
	t.Logf("toy loss %.3f → %.3f over 14 steps; w = %v", first, last, wa)
}

func TestOpenRun(t *testing.T) {
	dir := t.TempDir()
	cfg := toyConfig(dir)
	cfg.Algo = "grpo"
	toyTrain(t, cfg, false, 3)
	// config.yaml reloads to the same config.
	back, err := Load(filepath.Join(dir, ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	yb, _ := yaml.Marshal(back)
	yc, _ := yaml.Marshal(cfg)
	if !bytes.Equal(yb, yc) || back.Run.Dir != dir || back.Optim.MaxSteps != 14 {
		t.Fatalf("config.yaml reloads as\n%s\nwant\n%s", yb, yc)
	}
	head, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	if !bytes.HasPrefix(head, []byte("# train grpo --config ")) {
		t.Fatalf("config.yaml header: %q", head[:40])
	}
	// A fresh run refuses a directory with a checkpoint.
	if _, err := OpenRun(cfg, false, nil); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("fresh run over a checkpoint: %v", err)
	}
	// Resuming with another config warns.
	cfg.Optim.LR = 0.25
	var warn bytes.Buffer
	r, err := OpenRun(cfg, true, &warn)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !strings.Contains(warn.String(), "config differs") || r.Resumed.Name != "step-000003" {
		t.Fatalf("warning %q, resumed %v", warn.String(), r.Resumed.Name)
	}
	// checkpoint.resume_from implies resume; an unknown name is an error.
	cfg.Checkpoint.ResumeFrom = "step-000002"
	if _, err := OpenRun(cfg, false, nil); err == nil || !strings.Contains(err.Error(), "step-000002") {
		t.Fatalf("resume_from a missing checkpoint: %v", err)
	}
	cfg.Checkpoint.ResumeFrom = "latest"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "checkpoint.resume_from") {
		t.Fatalf("bad resume_from validated: %v", err)
	}
	if ConfigHash(toyConfig("x")) != ConfigHash(toyConfig("y")) {
		t.Fatal("run.dir changes the config hash")
	}
}

// The NaN guard names the last good checkpoint, which stays `latest`.
func TestNaNGuardKeepsLastGood(t *testing.T) {
	cfg := toyConfig(t.TempDir())
	r, err := OpenRun(cfg, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Save(Snapshot{State: TrainerState{Step: 3}}); err != nil {
		t.Fatal(err)
	}
	err = r.CheckFinite(5, Metrics{"loss": math.NaN(), "grad_norm": 1})
	if err == nil || !strings.Contains(err.Error(), "step 5: loss is NaN") || !strings.Contains(err.Error(), "step-000003") {
		t.Fatalf("NaN guard: %v", err)
	}
	if ck, err := r.Ckpt.Resume("", false, nil); err != nil || ck.State.Step != 3 {
		t.Fatalf("last good checkpoint: %v", err)
	}
}
