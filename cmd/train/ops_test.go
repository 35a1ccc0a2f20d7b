package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/argrl/argrl/internal/sha256sums"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/metrics"
)

// A second process on a live run directory is refused, naming the
// holder's PID and host, and touches nothing (not even the leftovers of
// a kill, which could be the live run's checkpoint in progress); once the
// holder is gone (SIGKILL: its lock file stays, the kernel drops the
// flock) --resume proceeds, cleans up, and metrics.jsonl has each step
// once.
func TestRunDirectoryLock(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	cfg := sftYAML(t, run, "")
	args := []string{"sft", "--config", cfg, "--set", "optim.max_steps=400", "--set", "checkpoint.every=2", "--set", "eval_every=0"}
	a := startTrain(t, args...)
	a.waitTrainLines(t, run, 3)
	strayDir := filepath.Join(run, ckpt.CheckpointsDir, ".tmp-step-000399-x")
	strayFiles := []string{filepath.Join(run, ckpt.CheckpointsDir, ".latest.tmp-1"), filepath.Join(run, ".config.yaml.tmp-2")}
	if err := os.Mkdir(strayDir, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, f := range strayFiles {
		if err := os.WriteFile(f, []byte("half"), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	host, _ := os.Hostname()
	_, stderr, code := runTrain(t, append(args, "--resume")...)
	if code == 0 {
		t.Fatalf("a second process on the live run exited 0:\n%s", stderr)
	}
	for _, w := range []string{"in use by another train process", fmt.Sprintf("pid %d ", a.cmd.Process.Pid), "host " + host, run} {
		if !strings.Contains(stderr, w) {
			t.Errorf("the refusal lacks %q:\n%s", w, stderr)
		}
	}
	for _, p := range append(strayFiles, strayDir) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the refused process removed %s: %v", p, err)
		}
	}
	t.Logf("refused: %s", lastLine(stderr))
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t)
	if b, _ := os.ReadFile(filepath.Join(run, ckpt.LockFile)); !strings.Contains(string(b), fmt.Sprintf("pid %d ", a.cmd.Process.Pid)) {
		t.Fatalf("the killed holder's lock file holds %q", b)
	}
	ck, err := ckpt.New(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := ck.Latest()
	done, _ := ckpt.ParseStepName(latest)
	total := done + 4 // a short continuation (the schedule's change is only warned about)
	_, stderr, code = runTrain(t, "sft", "--config", cfg, "--set", fmt.Sprint("optim.max_steps=", total), "--set", "checkpoint.every=2", "--set", "eval_every=0", "--resume")
	if code != 0 {
		t.Fatalf("--resume after the holder died: exit %d\n%s", code, stderr)
	}
	for _, p := range append(strayFiles, strayDir) {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived the start-up cleanup: %v", p, err)
		}
	}
	recs, err := metrics.Read(filepath.Join(run, metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, r := range recs {
		if r.Kind == "train" {
			if seen[r.Step] {
				t.Errorf("metrics.jsonl has step %d twice", r.Step)
			}
			seen[r.Step] = true
		}
	}
	if len(seen) != total {
		t.Errorf("metrics.jsonl has %d train steps, want %d", len(seen), total)
	}
}

// tinyModel writes a model directory (weights, config, tokenizer) for the
// tiny test config.
func tinyModel(t *testing.T) string {
	t.Helper()
	src := "../../trainer/testdata/sft/tiny"
	dir := filepath.Join(t.TempDir(), "model")
	if err := trainer.WriteRandomModel(src, dir, 3); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// flipLastByte corrupts a file the way a bad disk or copy would.
func flipLastByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o666); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint whose SHA256SUMS fails is refused by every command that
// loads one, whichever way it is named (--adapter, --model, init.adapter
// merged or kept, ref.path, --resume), with an error naming the file; the
// intact checkpoint loads.
func TestCorruptCheckpointRefusedEverywhere(t *testing.T) {
	dir := t.TempDir()
	mdl := tinyModel(t)
	td, _ := filepath.Abs("../../trainer/testdata/sft")
	val := filepath.Join(td, "val.jsonl")
	run := filepath.Join(dir, "sft")
	cfg := sftYAML(t, run, "")
	if _, stderr, code := runTrain(t, "sft", "--config", cfg, "--set", "optim.max_steps=2", "--set", "data.val="); code != 0 {
		t.Fatalf("sft: exit %d\n%s", code, stderr)
	}
	bad := filepath.Join(run, ckpt.CheckpointsDir, ckpt.StepName(2)) // also the run's latest
	// A model directory with SHA256SUMS (a full fine-tuning checkpoint).
	badModel := tinyModel(t)
	if err := sha256sums.Write(badModel); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{mdl, badModel} {
		if _, stderr, code := runTrain(t, "score", "--model", m, "--adapter", bad, "--ids", "1,2,3"); code != 0 {
			t.Fatalf("score with the intact checkpoint: exit %d\n%s", code, stderr)
		}
	}
	flipLastByte(t, filepath.Join(bad, model.AdapterWeightsName))
	flipLastByte(t, filepath.Join(badModel, "model.safetensors"))
	runs := 0
	rl := func(sets ...string) []string {
		runs++
		args := tinyRLArgs("grpo", "grpo-tiny", filepath.Join(dir, fmt.Sprint("rl-", runs)), "1")
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		return args
	}
	cases := []struct {
		name string
		args []string
		file string
	}{
		{"score --adapter", []string{"score", "--model", mdl, "--adapter", bad, "--ids", "1,2,3"}, model.AdapterWeightsName},
		{"eval --adapter", []string{"eval", "--model", mdl, "--adapter", bad, "--data", val, "--max-new-tokens", "4"}, model.AdapterWeightsName},
		{"generate --adapter", []string{"generate", "--model", mdl, "--adapter", bad, "--data", val, "--n", "1", "--max-new-tokens", "4"}, model.AdapterWeightsName},
		{"export --adapter", []string{"export", "--model", mdl, "--adapter", bad, "--out", filepath.Join(dir, "exported")}, model.AdapterWeightsName},
		{"export --adapter --merge", []string{"export", "--model", mdl, "--adapter", bad, "--merge", "--out", filepath.Join(dir, "merged")}, model.AdapterWeightsName},
		{"score --model (checkpoint)", []string{"score", "--model", badModel, "--ids", "1,2,3"}, "model.safetensors"},
		{"init.adapter kept", rl("model.path="+mdl, "model.init=pretrained", "init.adapter="+bad, "init.merge=false"), model.AdapterWeightsName},
		{"init.adapter merged", rl("model.path="+mdl, "model.init=pretrained", "init.adapter="+bad, "init.merge=true"), model.AdapterWeightsName},
		{"ref.path adapter", rl("model.path="+mdl, "model.init=pretrained", "ref.path="+bad), model.AdapterWeightsName},
		{"ref.path model", rl("model.path="+mdl, "model.init=pretrained", "ref.path="+badModel), "model.safetensors"},
	}
	for _, c := range cases {
		stdout, stderr, code := runTrain(t, c.args...)
		if code == 0 {
			t.Errorf("%s: a corrupt checkpoint was accepted (exit 0)\n%s", c.name, stderr)
			continue
		}
		if !strings.Contains(stderr, c.file+" is corrupt") || !strings.Contains(stderr, sha256sums.File) {
			t.Errorf("%s: exit %d without naming the corrupt file %s:\n%s", c.name, code, c.file, stderr)
		}
		if stdout != "" {
			t.Errorf("%s: printed output before refusing: %q", c.name, stdout)
		}
		t.Logf("%s: exit %d: %s", c.name, code, lastLine(stderr))
	}
	// --resume from the corrupt latest.
	_, stderr, code := runTrain(t, "sft", "--config", cfg, "--set", "optim.max_steps=3", "--set", "data.val=", "--resume")
	if code == 0 || !strings.Contains(stderr, model.AdapterWeightsName+" is corrupt") {
		t.Errorf("--resume from a corrupt checkpoint: exit %d\n%s", code, stderr)
	}
}

// A password in a URL never reaches the output: the judge endpoint's
// error (here a 400 from a server that records the request) names the URL
// with the password masked.
func TestURLPasswordRedacted(t *testing.T) {
	var got bytes.Buffer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(&got, r.Body)
		http.Error(w, "bad model", http.StatusBadRequest)
	}))
	defer srv.Close()
	const secret = "S3cr3tPassw0rd"
	url := strings.Replace(srv.URL, "http://", "http://alice:"+secret+"@", 1) + "/v1"
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "cur", spanishPred)+predLine(t, "joke", "¡Claro!"))
	stdout, stderr, code := runTrain(t, "reward", "--reward", "rm3", "--judge", "http", "--judge-url", url, "--judge-model", "m",
		"--judge-cache", "off", "--data", dataPath, "--predictions", preds)
	if got.Len() == 0 {
		t.Fatalf("the judge was never asked (exit %d):\n%s", code, stderr)
	}
	if code == 0 {
		t.Fatalf("exit 0 although the judge failed:\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, secret) {
		t.Errorf("the password is in the output:\n%s%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "alice:xxxxx@") || !strings.Contains(stderr, "status 400") {
		t.Errorf("the error does not name the endpoint (password masked) and its answer:\n%s", stderr)
	}
	t.Logf("exit %d: %s", code, lastLine(stderr))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// An init.adapter trained for another base is blamed on init.adapter and
// names the adapter and the base model (the real one, not a temporary
// merged copy), kept or merged; a kept one of another rank than a lora.r
// given explicitly is refused naming both ranks (the adapter decides
// LoRA's shape: config.adoptAdapter).
func TestInitAdapterMisfitNamesBoth(t *testing.T) {
	mdl := tinyModel(t)
	qwen3, _ := filepath.Abs("../../testdata/models/qwen3-f32-tied/adapter") // q_proj out 128, the tiny qwen2's 64
	qwen2, _ := filepath.Abs("../../testdata/models/qwen2-f32/adapter")      // the tiny model's shapes, r = 4
	for _, c := range []struct {
		adapter, merge, r string
		want              []string
	}{
		{qwen3, "false", "4", []string{`key "init.adapter"`, "adapter " + qwen3 + " does not fit the base model " + mdl, model.AdapterWeightsName, "has shape"}},
		{qwen3, "true", "4", []string{"init.adapter", "adapter " + qwen3 + " does not fit the base model " + mdl, model.AdapterWeightsName, "has shape"}},
		{qwen2, "false", "8", []string{`key "lora.r" is 8 (--set lora.r)`, "init.adapter", "r 4 (" + filepath.Join(qwen2, model.AdapterConfigName) + ")"}},
	} {
		run := filepath.Join(t.TempDir(), "run")
		// lora.alpha 8 is both adapters' (grpo-tiny.yaml says 16).
		args := append(tinyRLArgs("grpo", "grpo-tiny", run, "1"), "--set", "model.path="+mdl, "--set", "model.init=pretrained",
			"--set", "init.adapter="+c.adapter, "--set", "init.merge="+c.merge, "--set", "lora.r="+c.r, "--set", "lora.alpha=8")
		_, stderr, code := runTrain(t, args...)
		name := filepath.Base(filepath.Dir(c.adapter)) + " merge " + c.merge
		if code == 0 {
			t.Fatalf("%s: a misfit adapter was accepted", name)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: the error lacks %q:\n%s", name, w, stderr)
			}
		}
		if strings.Contains(stderr, `key "model.path"`) || strings.Contains(stderr, "argrl-") {
			t.Errorf("%s: the error blames model.path or a temporary directory:\n%s", name, stderr)
		}
		t.Logf("%s: %s", name, lastLine(stderr))
	}
}

// eval_every 0 validates at the end only, and says so (never "every 0
// steps"); the adapter_config.json written has lora_dropout 0.05, not its
// float32 widening.
func TestEvalAtEndMessageAndDropoutText(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	_, stderr, code := runTrain(t, "sft", "--config", sftYAML(t, run, ""), "--set", "eval_every=0", "--set", "optim.max_steps=2", "--set", "lora.dropout=0.05")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "every 0") || !strings.Contains(stderr, "val.jsonl at the end") {
		t.Errorf("validation schedule message:\n%s", stderr)
	}
	raw, err := os.ReadFile(filepath.Join(run, ckpt.BestDir, model.AdapterConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"lora_dropout": 0.05,`) {
		t.Errorf("adapter_config.json:\n%s", raw)
	}
}
