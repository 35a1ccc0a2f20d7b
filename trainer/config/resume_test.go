package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// startRun writes what a run's first start records: RUN/config.yaml.
func startRun(t *testing.T, c Config) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Run.Dir, File), append([]byte("# train sft --config x\n"), b...), 0o644); err != nil {
		t.Fatal(err)
	}
	return c.Run.Dir
}

func yamlOf(t *testing.T, c Config) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A resume needs no --config: it reloads RUN/config.yaml; any key that
// then differs is refused by name, old → new, one per line, unless safe
// or allowed.
func TestLoadResume(t *testing.T) {
	dir := t.TempDir()
	body := "algo: sft\nmodel: {path: models/m, init: random}\nlora: {r: 8}\noptim: {max_steps: 3}\nrun: {dir: " + dir + "}\n"
	first, err := Load(writeCfg(t, body), []string{"algo=sft"})
	if err != nil {
		t.Fatal(err)
	}
	startRun(t, first)
	runSet := "run.dir=" + dir

	c, err := LoadResume("", []string{"algo=sft", runSet}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if yamlOf(t, c) != yamlOf(t, first) {
		t.Errorf("reloaded\n%s\nwant\n%s", yamlOf(t, c), yamlOf(t, first))
	}
	// Safe keys change freely; resume_from is where, not what.
	if c, err = LoadResume("", []string{"algo=sft", runSet, "optim.max_steps=6", "eval_every=1", "checkpoint.resume_from=step-000002"}, nil); err != nil {
		t.Fatal(err)
	}
	if c.Optim.MaxSteps != 6 || c.Checkpoint.ResumeFrom != "step-000002" || c.Model.Path != "models/m" {
		t.Errorf("safe change: %+v %+v", c.Optim, c.Model)
	}

	// The case: the first start's file without its --set model.path.
	noPath := writeCfg(t, "algo: sft\nlora: {r: 8}\noptim: {max_steps: 3}\n")
	t.Setenv("ARGRL_LORA_ALPHA", "5")
	_, err = LoadResume(noPath, []string{"algo=sft", runSet, "kl.coef=0.5"}, nil)
	if err == nil {
		t.Fatal("changed keys accepted")
	}
	msg := err.Error()
	for _, w := range []string{
		"\n  kl.coef: 0.001 → 0.5 (--set kl.coef)\n",
		"\n  lora.alpha: 64 → 5 (ARGRL_LORA_ALPHA)\n",
		"\n  model.init: \"random\" → \"pretrained\" (not in " + noPath + ": the default)\n",
		"\n  model.path: \"models/m\" → \"\" (not in " + noPath + ": the default)\n",
		"--allow-config-change", "optim.max_steps",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	os.Unsetenv("ARGRL_LORA_ALPHA")
	// --allow-config-change accepts a key, or a section's keys.
	if c, err = LoadResume("", []string{"algo=sft", runSet, "kl.coef=0.5", "lora.alpha=5"}, []string{"kl.coef", "lora"}); err != nil || c.KL.Coef != 0.5 || c.LoRA.Alpha != 5 {
		t.Errorf("allowed: %v %+v", err, c.KL)
	}
	if _, err = LoadResume("", []string{"algo=sft", runSet}, []string{"kl.coeff"}); err == nil || !strings.Contains(err.Error(), `--allow-config-change "kl.coeff"`) {
		t.Errorf("unknown allowed key: %v", err)
	}
	// Another algorithm is a change too.
	if _, err = LoadResume("", []string{"algo=grpo", runSet}, nil); err == nil || !strings.Contains(err.Error(), `algo: "sft" → "grpo"`) {
		t.Errorf("algo: %v", err)
	}
	// No run there.
	empty := t.TempDir()
	if _, err = LoadResume("", []string{"algo=sft", "run.dir=" + empty}, nil); err == nil || !strings.Contains(err.Error(), "has no config.yaml") || !strings.Contains(err.Error(), "--set run.dir=RUN") {
		t.Errorf("no run: %v", err)
	}
}

// The changes a resume made are appended to config.history (config.yaml
// stays as written), and the next resume reloads them.
func TestConfigHistory(t *testing.T) {
	dir := t.TempDir()
	first, err := Load(writeCfg(t, "optim: {max_steps: 3}\nlora: {targets: [q, v]}\nrun: {dir: "+dir+"}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	startRun(t, first)
	orig, _ := os.ReadFile(filepath.Join(dir, File))
	now := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	// Nothing changed: nothing appended.
	if err := AppendHistory(dir, "step-000003", first, now); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, HistoryFile)); !os.IsNotExist(err) {
		t.Fatalf("history written without a change: %v", err)
	}
	c, err := LoadResume("", []string{"run.dir=" + dir, "optim.max_steps=6", "model.system=Be brief: call tools.", "lora.targets=[q, k, v]"}, []string{"model.system", "lora.targets"})
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendHistory(dir, "step-000003", c, now); err != nil {
		t.Fatal(err)
	}
	hist, err := os.ReadFile(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"--- # 2026-12-02T09:00:00Z: resumed from step-000003", "# optim.max_steps: 3 → 6 (--set optim.max_steps)",
		`# model.system: "" → "Be brief: call tools."`, `# lora.targets: ["q","v"] → ["q","k","v"]`} {
		if !strings.Contains(string(hist), w) {
			t.Errorf("history lacks %q:\n%s", w, hist)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, File)); string(now) != string(orig) {
		t.Error("config.yaml changed")
	}
	rec, found, err := Recorded(dir)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	if yamlOf(t, rec) != yamlOf(t, c) {
		t.Errorf("recorded with history\n%s\nwant\n%s", yamlOf(t, rec), yamlOf(t, c))
	}
	// A second resume changing max_steps again appends a second entry,
	// and the latest value wins.
	c.Optim.MaxSteps = 9
	if err := AppendHistory(dir, "step-000006", c, now); err != nil {
		t.Fatal(err)
	}
	if rec, _, err = Recorded(dir); err != nil || rec.Optim.MaxSteps != 9 || rec.Model.System != "Be brief: call tools." {
		t.Errorf("second entry: %v %d %q", err, rec.Optim.MaxSteps, rec.Model.System)
	}
	if again, err := LoadResume("", []string{"run.dir=" + dir}, nil); err != nil || yamlOf(t, again) != yamlOf(t, rec) {
		t.Errorf("resume after the history: %v", err)
	}
}
