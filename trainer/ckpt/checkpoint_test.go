package ckpt

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer/internal/paramtest"
	"github.com/argrl/argrl/trainer/optim"
)

// defaultAdamW is config.Default()'s optimizer: β 0.9, 0.999, ε 1e-8, no decay.
var defaultAdamW = optim.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

var (
	newParam   = paramtest.New
	read       = paramtest.Read
	filesEqual = paramtest.SameFile
)

// fakeModel writes stand-in adapter files whose every value is step, so a
// loaded checkpoint can be checked for consistency with its trainer state.
func fakeModel(step, n int) func(dir string) error {
	return func(dir string) error {
		w := make([]float32, n)
		for i := range w {
			w[i] = float32(step)
		}
		if err := safetensors.WriteFile(filepath.Join(dir, "adapter_model.safetensors"),
			[]safetensors.Tensor{safetensors.FromFloat32("base_model.model.lora_A.weight", []int{n}, w)}, nil); err != nil {
			return err
		}
		return WriteFileAtomic(filepath.Join(dir, "adapter_config.json"), []byte(`{"peft_type":"LORA"}`))
	}
}

// snapshotAt builds a snapshot of step with an optimizer that has taken
// step updates.
func snapshotAt(t testing.TB, be kernels.Backend, step, modelN int) Snapshot {
	p := newParam(be, "w", []int{4}, []float32{1, 2, 3, 4}, []float32{0.1, -0.2, 0.3, -0.4})
	o, err := optim.NewAdamW(be, []*model.Param{p}, defaultAdamW)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < step; i++ {
		if err := o.Step(1e-3); err != nil {
			t.Fatal(err)
		}
	}
	st := TrainerState{Step: step, Epoch: step / 10, Cursor: step % 10}
	st.PutRNG("data", rand.NewPCG(uint64(step), 1))
	return Snapshot{State: st, Model: fakeModel(step, modelN), Optimizer: o}
}

// checkConsistent verifies that a loaded checkpoint's files agree with its state.
func checkConsistent(t testing.TB, be kernels.Backend, ck *Checkpoint) {
	t.Helper()
	f, err := safetensors.Open(ck.Path("adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := f.Float32("base_model.model.lora_A.weight")
	f.Close()
	if err != nil || w[0] != float32(ck.State.Step) || w[len(w)-1] != float32(ck.State.Step) {
		t.Fatalf("%s: model values %v… do not match step %d (%v)", ck.Name, w[:1], ck.State.Step, err)
	}
	p := newParam(be, "w", []int{4}, make([]float32, 4), make([]float32, 4))
	o, _ := optim.NewAdamW(be, []*model.Param{p}, defaultAdamW)
	if err := LoadOptimizer(ck.Path(OptimizerFile), o); err != nil || o.Steps() != ck.State.Step {
		t.Fatalf("%s: optimizer at step %d (%v), state says %d", ck.Name, o.Steps(), err, ck.State.Step)
	}
}

func TestCheckpointSaveOpenPrune(t *testing.T) {
	be := kernels.NewCPU()
	run := t.TempDir()
	c, err := New(run, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{100, 200, 300, 400} {
		snap := snapshotAt(t, be, s, 64)
		snap.Best = s == 200
		if _, err := c.Save(snap); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := c.List()
	if strings.Join(names, ",") != "step-000300,step-000400" {
		t.Fatalf("keep_last 2 left %v", names)
	}
	if l, _ := c.Latest(); l != "step-000400" {
		t.Fatalf("latest %q", l)
	}
	ck, err := c.Resume("", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, be, ck)
	if ck.State.Epoch != 40 || ck.State.RNG["data"] == nil {
		t.Fatalf("state %+v", ck.State)
	}
	// best/ survives the pruning of step-000200 and verifies.
	best, err := OpenDir(filepath.Join(run, BestDir), -1)
	if err != nil {
		t.Fatal(err)
	}
	if best.State.Step != 200 {
		t.Fatalf("best is step %d", best.State.Step)
	}
	checkConsistent(t, be, best)
	sums, _ := os.ReadFile(filepath.Join(ck.Dir, SumsFile))
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors", OptimizerFile, StateFile} {
		if !bytes.Contains(sums, []byte("  "+f+"\n")) {
			t.Errorf("SHA256SUMS lacks %s:\n%s", f, sums)
		}
	}
	if _, err := exec.LookPath("sha256sum"); err == nil { // the file is sha256sum's format
		cmd := exec.Command("sha256sum", "--check", "--strict", SumsFile)
		cmd.Dir = ck.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum --check: %v\n%s", err, out)
		}
	}
	left, _ := os.ReadDir(filepath.Join(run, CheckpointsDir))
	for _, e := range left {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestCheckpointRefusesCorruptAndPartial(t *testing.T) {
	be := kernels.NewCPU()
	mk := func(t *testing.T) (*Checkpointer, string) {
		run := t.TempDir()
		c, _ := New(run, 0)
		for _, s := range []int{1, 2} {
			if _, err := c.Save(snapshotAt(t, be, s, 16)); err != nil {
				t.Fatal(err)
			}
		}
		return c, filepath.Join(run, CheckpointsDir, "step-000002")
	}
	cases := []struct {
		name  string
		harm  func(dir string)
		wants []string
	}{
		{"flipped byte", func(d string) {
			p := filepath.Join(d, OptimizerFile)
			b, _ := os.ReadFile(p)
			b[len(b)-1] ^= 1
			os.WriteFile(p, b, 0o644)
		}, []string{OptimizerFile, "corrupt"}},
		{"truncated", func(d string) {
			os.Truncate(filepath.Join(d, "adapter_model.safetensors"), 10)
		}, []string{"adapter_model.safetensors", "corrupt"}},
		{"missing file", func(d string) { os.Remove(filepath.Join(d, StateFile)) }, []string{StateFile}},
		{"no SHA256SUMS", func(d string) { os.Remove(filepath.Join(d, SumsFile)) }, []string{"partial", SumsFile}},
		{"unlisted file", func(d string) { os.WriteFile(filepath.Join(d, "stray.bin"), []byte("x"), 0o644) }, []string{"stray.bin", "not listed"}},
		{"garbled sums", func(d string) { os.WriteFile(filepath.Join(d, SumsFile), []byte("xyz\n"), 0o644) }, []string{SumsFile + ":1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, dir := mk(t)
			tc.harm(dir)
			_, err := c.Resume("", false, nil)
			if err == nil {
				t.Fatal("a damaged checkpoint was accepted")
			}
			for _, w := range append(tc.wants, "step-000002", "checkpoint.fallback") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var warn bytes.Buffer
			ck, err := c.Resume("", true, &warn)
			if err != nil || ck.Name != "step-000001" {
				t.Fatalf("fallback: %v, %v", ck, err)
			}
			if !strings.Contains(warn.String(), "skipping step-000002") || !strings.Contains(warn.String(), "falling back to step-000001") {
				t.Fatalf("fallback not reported: %q", warn.String())
			}
			if ck, err := c.Resume("step-000001", false, nil); err != nil || ck.State.Step != 1 {
				t.Fatalf("resume_from: %v", err)
			}
		})
	}
}

// Overwriting a checkpoint of an abandoned timeline (after a fallback) and
// repairing what an interrupted swap leaves.
func TestCheckpointOverwriteAndRepair(t *testing.T) {
	be := kernels.NewCPU()
	run := t.TempDir()
	c, _ := New(run, 1)
	c.Save(snapshotAt(t, be, 1, 8))
	c.Save(snapshotAt(t, be, 3, 8)) // keep_last 1 removes step 1
	// Fall back to an older timeline: save step 2 while step-000003 exists.
	c.Save(snapshotAt(t, be, 2, 8))
	names, _ := c.List()
	if strings.Join(names, ",") != "step-000002,step-000003" {
		t.Fatalf("pruned across timelines: %v", names)
	}
	snap := snapshotAt(t, be, 3, 8)
	snap.State.TokensSeen = 77 // the new timeline's step 3
	if _, err := c.Save(snap); err != nil {
		t.Fatal(err)
	}
	ck, err := c.Resume("", false, nil)
	if err != nil || ck.State.TokensSeen != 77 {
		t.Fatalf("overwrite: %+v %v", ck, err)
	}
	// Simulate kills: a .trash- of step 3 without its replacement, a stale
	// temp dir, a half-deleted dir and a best/ swap caught in the middle.
	dir := filepath.Join(run, CheckpointsDir)
	os.Rename(filepath.Join(dir, "step-000003"), filepath.Join(dir, ".trash-step-000003-123"))
	os.MkdirAll(filepath.Join(dir, ".tmp-step-000004-9"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".del-step-000001"), 0o755)
	c.Save(Snapshot{State: TrainerState{Step: 5}, Best: true})
	os.Rename(filepath.Join(run, BestDir), filepath.Join(run, ".best-old-5"))
	os.MkdirAll(filepath.Join(run, ".best-tmp-6"), 0o755)
	c2, err := New(run, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ck, err := c2.Open("step-000003"); err != nil || ck.State.TokensSeen != 77 {
		t.Fatalf("trash not restored: %v", err)
	}
	if _, err := OpenDir(filepath.Join(run, BestDir), 5); err != nil {
		t.Fatalf("best not restored: %v", err)
	}
	for _, d := range []string{dir, run} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("repair left %s", e.Name())
			}
		}
	}
	if _, err := c2.Resume("step-000009", false, nil); err == nil || !strings.Contains(err.Error(), "step-000009") {
		t.Fatalf("missing resume_from: %v", err)
	}
	empty, _ := New(t.TempDir(), 0)
	if _, err := empty.Resume("", true, nil); err == nil || !strings.Contains(err.Error(), "without --resume") {
		t.Fatalf("nothing to resume: %v", err)
	}
}

// The helper process of TestCheckpointSurvivesSIGKILL: saves checkpoints
// in a loop (keep_last 2, best every third) until killed.
func TestCheckpointKillHelper(t *testing.T) {
	run := os.Getenv("TRAINER_KILL_HELPER_RUN")
	if run == "" {
		t.Skip("helper process for TestCheckpointSurvivesSIGKILL")
	}
	be := kernels.NewCPU()
	c, err := New(run, 2)
	if err != nil {
		t.Fatal(err)
	}
	step := 0
	if l, _ := c.Latest(); l != "" {
		step, _ = ParseStepName(l)
	}
	for {
		step++
		snap := snapshotAt(t, be, step, 1<<18) // 1 MiB model file
		snap.Best = step%3 == 0
		if _, err := c.Save(snap); err != nil {
			t.Fatal(err)
		}
	}
}

// A SIGKILL at a random moment of a checkpoint loop always leaves `latest`
// naming a complete checkpoint, and best/ complete.
func TestCheckpointSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	be := kernels.NewCPU()
	run := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	const kills = 12
	midWrite, lastStep := 0, 0
	for k := 0; k < kills; k++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCheckpointKillHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TRAINER_KILL_HELPER_RUN="+run)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("helper did not die by SIGKILL (%v):\n%s", err, out.String())
		}
		ents, _ := os.ReadDir(filepath.Join(run, CheckpointsDir))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				midWrite++
				break
			}
		}
		c, err := New(run, 2)
		if err != nil {
			t.Fatal(err)
		}
		ck, err := c.Resume("", false, nil)
		if err != nil {
			if l, _ := c.Latest(); l == "" && k == 0 {
				continue // killed before the first checkpoint completed
			}
			t.Fatalf("kill %d: %v", k, err)
		}
		checkConsistent(t, be, ck)
		if ck.State.Step < lastStep {
			t.Fatalf("kill %d: latest went back from %d to %d", k, lastStep, ck.State.Step)
		}
		lastStep = ck.State.Step
		if _, err := os.Stat(filepath.Join(run, BestDir)); err == nil || ck.State.Step >= 3 {
			best, err := OpenDir(filepath.Join(run, BestDir), -1)
			if err != nil {
				t.Fatalf("kill %d: best: %v", k, err)
			}
			checkConsistent(t, be, best)
		}
	}
	t.Logf("%d kills; %d left a checkpoint write in progress; final step %d", kills, midWrite, lastStep)
	if lastStep < kills {
		t.Fatalf("only %d checkpoints written in %d runs", lastStep, kills)
	}
}
