package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/metrics"
)

// TestMain lets the tests run this test binary as `train` in a subprocess
// (TRAIN_TEST_MAIN=1), so that exit codes and SIGKILL are real.
func TestMain(m *testing.M) {
	if os.Getenv("TRAIN_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// train runs `train args...` as a subprocess and returns its stderr.
func trainCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "TRAIN_TEST_MAIN=1")
	return cmd
}

func runTrain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := trainCmd(t, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// sftYAML is a tiny SFT config (trainer/testdata/sft: a randomly
// initialized 2-layer model with LoRA r=8, about 210 tokens per record).
func sftYAML(t *testing.T, run string, extra string) string {
	t.Helper()
	td, err := filepath.Abs("../../trainer/testdata/sft")
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`run: {dir: %s, seed: 3}
model: {path: %s/tiny, init: random, system: "You call tools.", max_len: 512}
data: {train: %s/train.jsonl, val: %s/val.jsonl}
lora: {r: 8, alpha: 16}
optim: {lr: 0.01, batch_size: 2, grad_accum: 2, max_steps: 8, warmup_ratio: 0.2}
eval_every: 4
rollout: {max_new_tokens: 8}
checkpoint: {every: 1, keep_last: 2}
%s`, run, td, td, td, extra)
	p := filepath.Join(t.TempDir(), "sft.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Each bad input exits non-zero with a message naming the problem.
func TestSFTCommandErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, extra string
		sets        []string
		want        []string
	}{
		{"unknown key", "optim2: {lr: 1}\n", nil, []string{`unknown key "optim2"`}},
		{"unknown --set key", "", []string{"lora.rank=4"}, []string{`unknown key "lora.rank"`}},
		{"missing dataset", "", []string{"data.train=" + filepath.Join(dir, "nope.jsonl")}, []string{"data.train", "nope.jsonl", "no such file"}},
		{"no assistant targets", "", []string{"model.max_len=64"}, []string{"no assistant targets", "model.max_len = 64"}},
		{"NaN loss", "", []string{"optim.lr=1e30", "optim.warmup_ratio=0", "optim.schedule=constant", "data.val="},
			[]string{"step 2: loss is", "step-000001 is kept"}},
	}
	for i, c := range cases {
		run := filepath.Join(dir, fmt.Sprint("run", i))
		args := []string{"sft", "--config", sftYAML(t, run, c.extra)}
		for _, s := range c.sets {
			args = append(args, "--set", s)
		}
		_, stderr, code := runTrain(t, args...)
		if code == 0 {
			t.Errorf("%s: exit code 0\n%s", c.name, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", c.name, w, stderr)
			}
		}
		if c.name == "NaN loss" {
			ck, err := ckpt.New(run, 0)
			if err != nil {
				t.Fatal(err)
			}
			names, _ := ck.List()
			if l, _ := ck.Latest(); l != "step-000001" || len(names) != 1 {
				t.Errorf("NaN loss: latest %q, checkpoints %v", l, names)
			}
		}
	}
}

// --debug-template prints the first record's prompt and target and exits
// without training.
func TestSFTDebugTemplate(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runTrain(t, "sft", "--config", sftYAML(t, run, ""), "--debug-template")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{`record "train-000"`, "<|im_start|>system\nYou call tools.", "----- target (loss) -----\n<tool_call>", "loss on"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	if _, err := os.Stat(run); err == nil {
		t.Errorf("--debug-template created the run directory")
	}
}

// SIGKILL at random instants while checkpoints are being written, then
// --resume, until the run completes: the final adapter and every step's
// loss equal those of a run that was never interrupted.
func TestSFTKillDuringCheckpointResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: spawns ~10 training processes (about 15 s)")
	}
	dir := t.TempDir()
	straight := filepath.Join(dir, "straight")
	if _, stderr, code := runTrain(t, "sft", "--config", sftYAML(t, straight, "")); code != 0 {
		t.Fatalf("straight run: exit %d\n%s", code, stderr)
	}
	killed := filepath.Join(dir, "killed")
	cfg := sftYAML(t, killed, "")
	ckDir := filepath.Join(killed, ckpt.CheckpointsDir)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	midWrite, kills := 0, 0
	var history []string
	for attempt := 0; ; attempt++ {
		if attempt > 12 {
			t.Fatalf("no completion after %d attempts", attempt)
		}
		args := []string{"sft", "--config", cfg}
		if b, _ := os.ReadFile(filepath.Join(ckDir, ckpt.LatestFile)); len(b) > 0 {
			args = append(args, "--resume")
		}
		if midWrite >= 3 && strings.Contains(strings.Join(history, " "), "--resume→kill") { // enough kills: let it finish
			if _, stderr, code := runTrain(t, args...); code != 0 {
				t.Fatalf("final resume: exit %d\n%s", code, stderr)
			}
			break
		}
		cmd := trainCmd(t, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// Let k−1 checkpoint writes (.tmp-step-*) pass, and kill a random
		// 0–3 ms after the k-th one starts.
		done0 := 0 // steps already checkpointed
		if b, err := os.ReadFile(filepath.Join(ckDir, ckpt.LatestFile)); err == nil {
			fmt.Sscanf(string(b), "step-%d", &done0)
		}
		k, seen, exited := 1+rng.IntN(max(1, min(3, 8-done0-1))), map[string]bool{}, false
		stale := tmpCheckpoint(ckDir) // left by the previous kill, removed at startup
	poll:
		for {
			select {
			case err := <-done:
				exited = true
				if err != nil {
					t.Fatalf("attempt %d exited on its own: %v\n%s", attempt, err, stderr.String())
				}
				break poll
			default:
			}
			if name := tmpCheckpoint(ckDir); name != "" && name != stale && !seen[name] {
				if seen[name] = true; len(seen) == k {
					time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
					kills++
					if tmpCheckpoint(ckDir) != "" {
						midWrite++ // the kill left a partial checkpoint behind
					}
					latest, _ := os.ReadFile(filepath.Join(ckDir, ckpt.LatestFile))
					mode := "fresh"
					if args[len(args)-1] == "--resume" {
						mode = "--resume"
					}
					history = append(history, fmt.Sprintf("%s→kill in %s, latest %s", mode, name, strings.TrimSpace(string(latest))))
					break
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		if exited {
			break // finished before a kill landed
		}
	}
	if midWrite == 0 {
		t.Fatalf("%d kills, none in the middle of a checkpoint write", kills)
	}
	for _, f := range []string{model.AdapterWeightsName, ckpt.OptimizerFile} {
		a, _ := os.ReadFile(filepath.Join(straight, ckpt.CheckpointsDir, "step-000008", f))
		b, _ := os.ReadFile(filepath.Join(ckDir, "step-000008", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs after %d kills (%d bytes vs %d)", f, kills, len(a), len(b))
		}
	}
	la, lb := losses(t, straight), losses(t, killed)
	if fmt.Sprint(la) != fmt.Sprint(lb) {
		t.Errorf("losses differ:\nstraight %v\nkilled   %v", la, lb)
	}
	if !strings.Contains(strings.Join(history, " "), "--resume→kill") {
		t.Errorf("no resumed run was killed again: %v", history)
	}
	t.Logf("%d kills (%d in the middle of a checkpoint write): %s; final adapter byte-identical; losses %v", kills, midWrite, strings.Join(history, "; "), la)

	// A corrupt latest checkpoint is refused; with checkpoint.fallback the
	// previous one is used, and the redone last step gives the same adapter.
	final := filepath.Join(ckDir, "step-000008", model.AdapterWeightsName)
	raw, err := os.ReadFile(final)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 1
	if err := os.WriteFile(final, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runTrain(t, "sft", "--config", cfg, "--resume")
	if code == 0 || !strings.Contains(stderr, "adapter_model.safetensors") || !strings.Contains(stderr, "checkpoint.fallback=true") {
		t.Fatalf("corrupt checkpoint: exit %d\n%s", code, stderr)
	}
	if _, stderr, code = runTrain(t, "sft", "--config", cfg, "--resume", "--set", "checkpoint.fallback=true"); code != 0 || !strings.Contains(stderr, "falling back to step-000007") {
		t.Fatalf("fallback: exit %d\n%s", code, stderr)
	}
	a, _ := os.ReadFile(filepath.Join(straight, ckpt.CheckpointsDir, "step-000008", model.AdapterWeightsName))
	if b, _ := os.ReadFile(final); !bytes.Equal(a, b) {
		t.Errorf("after the fallback, the retrained step-000008 adapter differs")
	}
}

// tmpCheckpoint returns the name of a checkpoint being (or left half)
// written in dir, or "".
func tmpCheckpoint(dir string) string {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			return e.Name()
		}
	}
	return ""
}

func losses(t *testing.T, run string) []float64 {
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
