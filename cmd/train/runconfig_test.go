package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
)

// A resumed run is its own: --resume needs no --config (it reloads
// RUN/config.yaml), a safe key may change and goes to config.history, a
// changed key is refused by name, a missing checkpoint lists those there
// are, and config.yaml is never rewritten.
func TestResumeIsTheRunsOwn(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	cfgPath := sftYAML(t, run, "")
	if _, stderr, code := runTrain(t, "sft", "--config", cfgPath, "--set", "optim.max_steps=2"); code != 0 {
		t.Fatalf("sft: exit %d\n%s", code, stderr)
	}
	recorded, err := os.ReadFile(filepath.Join(run, config.File))
	if err != nil {
		t.Fatal(err)
	}

	// Refused: the key, old → new, and where the new value came from.
	_, stderr, code := runTrain(t, "sft", "--resume", "--set", "run.dir="+run, "--set", "lora.r=4", "--set", "optim.max_steps=3")
	if code == 0 || !strings.Contains(stderr, "\n  lora.r: 8 → 4 (--set lora.r)\n") || strings.Contains(stderr, "optim.max_steps: 2 → 3") {
		t.Errorf("changed lora.r: exit %d\n%s", code, stderr)
	}
	// The first start's file without its --set: max_steps 8 is safe, the
	// rest of the file is the run's.
	if _, stderr, code = runTrain(t, "sft", "--resume", "--config", cfgPath, "--set", "run.dir="+run, "--set", "model.init=pretrained"); code == 0 ||
		!strings.Contains(stderr, `model.init: "random" → "pretrained" (--set model.init)`) || !strings.Contains(stderr, "--allow-config-change KEY") {
		t.Errorf("changed model.init: exit %d\n%s", code, stderr)
	}
	// A checkpoint that does not exist: the ones that do are listed.
	if _, stderr, code = runTrain(t, "sft", "--resume-from", "step-000099", "--set", "run.dir="+run); code == 0 ||
		!strings.Contains(stderr, "no checkpoint step-000099") || !strings.Contains(stderr, "step-000001, step-000002 (latest: step-000002)") {
		t.Errorf("--resume-from step-000099: exit %d\n%s", code, stderr)
	}

	// No --config: the recorded one, with a safe change.
	if _, stderr, code = runTrain(t, "sft", "--resume", "--set", "run.dir="+run, "--set", "optim.max_steps=3"); code != 0 ||
		!strings.Contains(stderr, "resuming from") || !strings.Contains(stderr, "done: 3 steps") {
		t.Fatalf("sft --resume without --config: exit %d\n%s", code, stderr)
	}
	if now, _ := os.ReadFile(filepath.Join(run, config.File)); string(now) != string(recorded) {
		t.Errorf("config.yaml rewritten by the resume:\n%s", now)
	}
	hist, err := os.ReadFile(filepath.Join(run, config.HistoryFile))
	if err != nil || !strings.Contains(string(hist), "resumed from step-000002") || !strings.Contains(string(hist), "# optim.max_steps: 2 → 3 (--set optim.max_steps)") {
		t.Errorf("config.history: %v\n%s", err, hist)
	}
	// The next resume reloads the history's max_steps 3: nothing to do.
	if _, stderr, code = runTrain(t, "sft", "--resume", "--set", "run.dir="+run); code != 0 || !strings.Contains(stderr, "the run is complete (step 3 of 3)") {
		t.Errorf("resume of the finished run: exit %d\n%s", code, stderr)
	}
	// --allow-config-change belongs to a resume; sft trains algo sft.
	if _, stderr, code = runTrain(t, "sft", "--config", cfgPath, "--allow-config-change", "lora.r"); code == 0 || !strings.Contains(stderr, "add --resume") {
		t.Errorf("--allow-config-change without --resume: exit %d\n%s", code, stderr)
	}
	if _, stderr, code = runTrain(t, "sft", "--config", cfgPath, "--set", "algo=grpo"); code == 0 || !strings.Contains(stderr, "--set algo=grpo: train sft trains algo sft; run train grpo") {
		t.Errorf("sft --set algo=grpo: exit %d\n%s", code, stderr)
	}
	if _, stderr, code = runTrain(t, "sft", "--resume"); code == 0 || !strings.Contains(stderr, "runs/default has no config.yaml") {
		t.Errorf("--resume without a run: exit %d\n%s", code, stderr)
	}
}

// The adapter decides LoRA: GRPO from a kept init.adapter of r = 4, α = 8
// under a config that leaves lora.* at their defaults (r 32, α 64) trains
// r = 4, α = 8: config.yaml records them and the checkpoint's adapter has
// them. A lora.r given otherwise is refused, naming both values.
func TestAdapterDecidesLoRAShape(t *testing.T) {
	mdl := tinyModel(t)
	adapter, _ := filepath.Abs("../../testdata/models/qwen2-f32/adapter") // r 4, α 8, the tiny model's shapes
	src, err := os.ReadFile("../../configs/grpo-tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(src), "lora:\n  enabled: true\n  r: 8\n  alpha: 16\n  dropout: 0\n", "", 1)
	if body == string(src) {
		t.Fatal("configs/grpo-tiny.yaml's lora section is not the one this test removes")
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "grpo.yaml", body)
	td := "../../trainer/testdata/sft"
	args := func(run string, extra ...string) []string {
		return append([]string{"grpo", "--config", cfg, "--set", "run.dir=" + run, "--set", "model.path=" + mdl, "--set", "model.init=pretrained",
			"--set", "data.train=" + td + "/train.jsonl", "--set", "data.val=", "--set", "optim.max_steps=1", "--set", "init.adapter=" + adapter}, extra...)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, code := runTrain(t, args(run)...); code != 0 {
		t.Fatalf("grpo from the adapter: exit %d\n%s", code, stderr)
	}
	rec, _, err := config.Recorded(run)
	if err != nil || rec.LoRA.R != 4 || rec.LoRA.Alpha != 8 {
		t.Errorf("recorded lora %+v (%v), want the adapter's r 4, alpha 8", rec.LoRA, err)
	}
	a, err := model.ReadAdapterConfig(filepath.Join(run, ckpt.CheckpointsDir, ckpt.StepName(1)))
	if err != nil || a.R != 4 || a.Alpha != 8 {
		t.Fatalf("the checkpoint's adapter: %+v %v", a, err)
	}
	_, stderr, code := runTrain(t, args(filepath.Join(dir, "run2"), "--set", "lora.r=8")...)
	if code == 0 || !strings.Contains(stderr, `key "lora.r" is 8 (--set lora.r) but the adapter init.adapter trains has r 4 (`+filepath.Join(adapter, model.AdapterConfigName)+")") {
		t.Errorf("lora.r 8 against the adapter's 4: exit %d\n%s", code, stderr)
	}
}

// `train --version` names the version, the commit, the Go version and the
// build tags (a test binary has no VCS stamp, and says so).
func TestVersion(t *testing.T) {
	stdout, stderr, code := runTrain(t, "--version")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, w := range []string{"train devel\n", "commit:     unknown (built without VCS stamping", "go:         go1.", "build tags: none"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("--version lacks %q:\n%s", w, stdout)
		}
	}
}

// `train config print` prints every key, and its output loads back to the
// same config (the same config hash).
func TestConfigPrintRoundTrips(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		file string
		sets []string
	}{
		{"", nil},
		{"../../configs/grpo-tiny.yaml", []string{"optim.lr=0.002", "model.system=Be brief: call tools.", "lora.targets=[q, v]"}},
		{"../../configs/sft-tiny.yaml", []string{"algo=sft"}},
	} {
		args := []string{"config", "print"}
		if c.file != "" {
			args = append(args, "--config", c.file)
		}
		for _, s := range c.sets {
			args = append(args, "--set", s)
		}
		stdout, stderr, code := runTrain(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		for _, w := range []string{"max_new_tokens:", "dynamic_sampling:", "keep_last:", "timeout_s:"} {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: output lacks %q", args, w)
			}
		}
		p := filepath.Join(dir, "printed.yaml")
		if err := os.WriteFile(p, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := config.Load(p, nil)
		if err != nil {
			t.Fatalf("%v: the output does not load: %v\n%s", args, err, stdout)
		}
		want, err := config.Load(c.file, c.sets)
		if err != nil {
			t.Fatal(err)
		}
		if h, w := trainer.ConfigHash(back), trainer.ConfigHash(want); h != w || back.Run.Dir != want.Run.Dir {
			t.Errorf("%v: printed config hash %s, want %s", args, h, w)
		}
	}
	if _, stderr, code := runTrain(t, "config", "print", "--set", "optim.max_steps=2.5"); code == 0 || !strings.Contains(stderr, "--set optim.max_steps") || !strings.Contains(stderr, "2.5 is not an integer") {
		t.Errorf("config print of 2.5: exit %d\n%s", code, stderr)
	}
}

// The shell completion cobra generates completes config keys after --set.
func TestCompleteSetKeys(t *testing.T) {
	for _, cmd := range []string{"sft", "grpo", "eval", "config print"} {
		args := append([]string{"__complete"}, strings.Fields(cmd)...)
		stdout, stderr, code := runTrain(t, append(args, "--set", "optim.max_")...)
		if code != 0 || !strings.Contains(stdout, "optim.max_steps=\n") || strings.Contains(stdout, "optim.lr=") || !strings.Contains(stdout, ":6\n") {
			t.Errorf("%s --set optim.max_<TAB>: exit %d\n%s%s", cmd, code, stdout, stderr)
		}
	}
	stdout, _, _ := runTrain(t, "__complete", "grpo", "--allow-config-change", "rollout.env.")
	if !strings.Contains(stdout, "rollout.env.name\n") {
		t.Errorf("--allow-config-change rollout.env.<TAB>:\n%s", stdout)
	}
}

// eval's help and errors say what eval needs.
func TestEvalMessages(t *testing.T) {
	if u := newEvalCmd().Flags().Lookup("batch").Usage; strings.Contains(u, "--n") || !strings.Contains(u, "records decoded at once") {
		t.Errorf("eval --batch help: %q", u)
	}
	if u := newEvalCmd().Flags().Lookup("bench").Usage; !strings.Contains(u, "possible_answer/") {
		t.Errorf("eval --bench help: %q", u)
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "c.yaml", "format: tool_call\n")
	if _, _, err := runCmd(t, newEvalCmd, "--config", cfg, "--predictions", cfg); err == nil || !strings.Contains(err.Error(), "sets no data.test") || !strings.Contains(err.Error(), "--data FILE") {
		t.Errorf("eval --config without data.test: %v", err)
	}
	// A BFCL folder without possible_answer/: the layout is named.
	q, err := os.ReadFile(filepath.Join(bfclDir, "BFCL_v4_simple_python.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "BFCL_v4_simple_python.json", string(q))
	if _, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", dir, "--predictions", cfg); err == nil ||
		!strings.Contains(err.Error(), "possible_answer/BFCL_v4_simple_python.json") || !strings.Contains(err.Error(), "BFCL's own data layout") {
		t.Errorf("bfcl without answers: %v", err)
	}
	if _, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", t.TempDir(), "--predictions", cfg); err == nil || !strings.Contains(err.Error(), "DIR/possible_answer/") {
		t.Errorf("bfcl empty dir: %v", err)
	}
}
