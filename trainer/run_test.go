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
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/internal/paramtest"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/optim"
)

var (
	newParam   = paramtest.New
	read       = paramtest.Read
	filesEqual = paramtest.SameFile
)

// toyTrain is a miniature recipe over the whole infrastructure: a linear
// model y = w·x fitted by AdamW with the schedule, clipping, gradients
// summed over the Batcher's micro-batches, an RNG stream perturbing
// gradients, metrics, evaluation, best/ and checkpoints. It stops after
// stopAfter steps without a final checkpoint (a kill) and returns w.
func toyTrain(t *testing.T, cfg config.Config, resume bool, stopAfter int) []float32 {
	t.Helper()
	const D = 6
	data := batch.NewRNG(99, "toy-data")
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
	run, err := OpenRun(cfg, RunOptions{Resume: resume})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	be := kernels.NewCPU()
	w := newParam(be, "w", []int{D}, make([]float32, D), make([]float32, D))
	params := []*model.Param{w}
	opt, err := optim.NewAdamW(be, params, adamWConfig(cfg.Optim))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := batch.New(lens, cfg.Optim.BatchSize, cfg.Optim.GradAccum, cfg.Data.BucketWindow, cfg.Run.Seed)
	total := cfg.Optim.MaxSteps
	sched, _ := optim.NewSchedule(scheduleConfig(cfg.Optim), total)
	noise := batch.NewRNG(cfg.Run.Seed, "noise")
	start := 0
	if ck := run.Resumed; ck != nil {
		st := ck.State
		if err := ckpt.ReadParams(be, ck.Path("model.safetensors"), params); err != nil {
			t.Fatal(err)
		}
		if err := ckpt.LoadOptimizer(ck.Path(ckpt.OptimizerFile), opt); err != nil {
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
		acc := make([]float32, D) // the step's gradient, summed over its micro-batches
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
				acc[j] += g[j]
			}
		}
		be.CopyIn(w.G, acc)
		norm, err := optim.ClipGradNorm(be, params, cfg.Optim.GradClip)
		if err != nil {
			t.Fatal(err)
		}
		m := metrics.Metrics{"loss": loss, "grad_norm": norm, "lr": sched.LR(step - 1), "epoch": float64(sb.Epoch)}
		if err := run.CheckFinite(step, m, "loss", "grad_norm"); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(sched.LR(step - 1)); err != nil {
			t.Fatal(err)
		}
		run.Metrics.Log("train", step, m)
		best := false
		if step%cfg.EvalEvery == 0 {
			e := metrics.Metrics{"fcm": 1 / (1 + loss)}
			run.Metrics.Log("eval", step, e)
			best = run.Improved(step, e)
		}
		if step%cfg.Checkpoint.Every == 0 || best {
			ep, cur := b.Position()
			st := ckpt.TrainerState{Step: step, Epoch: ep, Cursor: cur, Scheduler: sched}
			st.PutRNG("noise", noise)
			_, err := run.Save(ckpt.Snapshot{State: st, Optimizer: opt, Best: best,
				Model: func(dir string) error { return ckpt.WriteParams(be, filepath.Join(dir, "model.safetensors"), params) }})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return read(be, w.W)
}

func toyConfig(dir string) config.Config {
	c := config.Default()
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
	ck := filepath.Join(ckpt.CheckpointsDir, "step-000012")
	for _, f := range []string{metrics.File, filepath.Join(ck, "model.safetensors"),
		filepath.Join(ck, ckpt.OptimizerFile), filepath.Join(ck, ckpt.StateFile), filepath.Join(ck, ckpt.SumsFile)} {
		if !filesEqual(t, filepath.Join(a, f), filepath.Join(b, f)) {
			t.Errorf("%s differs between the straight and the resumed run", f)
		}
	}
	ba, err := ckpt.OpenDir(filepath.Join(a, ckpt.BestDir), -1)
	if err != nil {
		t.Fatal(err)
	}
	bb, err := ckpt.OpenDir(filepath.Join(b, ckpt.BestDir), -1)
	if err != nil || ba.State.Step != bb.State.Step || *ba.State.BestMetric != *bb.State.BestMetric || ba.State.BestStep != ba.State.Step {
		t.Fatalf("best/: %+v vs %+v (%v)", ba.State, bb.State, err)
	}
	// The toy does learn: the loss falls (so the comparison is not of two
	// runs that both stood still).
	recs, err := metrics.Read(filepath.Join(a, metrics.File))
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
	back, err := config.Load(filepath.Join(dir, ConfigFile), nil)
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
	if _, err := OpenRun(cfg, RunOptions{}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("fresh run over a checkpoint: %v", err)
	}
	// Resuming with another config warns.
	cfg.Optim.LR = 0.25
	var warn bytes.Buffer
	r, err := OpenRun(cfg, RunOptions{Resume: true, Log: &warn})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if !strings.Contains(warn.String(), "config differs") || r.Resumed.Name != "step-000003" {
		t.Fatalf("warning %q, resumed %v", warn.String(), r.Resumed.Name)
	}
	// checkpoint.resume_from implies resume; an unknown name is an error.
	cfg.Checkpoint.ResumeFrom = "step-000002"
	if _, err := OpenRun(cfg, RunOptions{}); err == nil || !strings.Contains(err.Error(), "step-000002") {
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
	r, err := OpenRun(cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Save(ckpt.Snapshot{State: ckpt.TrainerState{Step: 3}}); err != nil {
		t.Fatal(err)
	}
	err = r.CheckFinite(5, metrics.Metrics{"loss": math.NaN(), "grad_norm": 1})
	if err == nil || !strings.Contains(err.Error(), "step 5: loss is NaN") || !strings.Contains(err.Error(), "step-000003") {
		t.Fatalf("NaN guard: %v", err)
	}
	if ck, err := r.Ckpt.Resume("", false, nil); err != nil || ck.State.Step != 3 {
		t.Fatalf("last good checkpoint: %v", err)
	}
}
