package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

// Outputs written in tool_call but scored as pythonic: eval, train reward
// and a GRPO step and its evaluation each print one warning line naming
// both formats.
func TestFormatMismatchWarning(t *testing.T) {
	dir := t.TempDir()
	syn := filepath.Join(dir, "alm")
	if _, stderr, code := runTrain(t, "data", "synth", "--seed", "1", "--out", syn, "--sizes", "train=4,val=2,test=2,base=0"); code != 0 {
		t.Fatalf("synth: exit %d\n%s", code, stderr)
	}
	test := filepath.Join(syn, "test_learn.jsonl")
	recs, err := data.ReadFile(test)
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := format.Get("tool_call", format.Options{})
	var preds strings.Builder
	for _, r := range recs {
		b, _ := json.Marshal(map[string]string{"id": r.ID, "text": tc.Render(r.Calls, r.Tools)})
		preds.Write(append(b, '\n'))
	}
	pp := filepath.Join(dir, "preds.jsonl")
	if err := os.WriteFile(pp, []byte(preds.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "outputs have no call in format pythonic but parse as tool_call: the model writes tool_call; set format: tool_call"
	for _, args := range [][]string{
		{"eval", "--data", test, "--predictions", pp, "--format", "pythonic"},
		{"reward", "--reward", "rm3", "--data", test, "--predictions", pp, "--format", "pythonic"},
	} {
		_, stderr, code := runTrain(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", args[0], code, stderr)
		}
		if n := strings.Count(stderr, want); n != 1 || !strings.Contains(stderr, "warning: "+args[0]) {
			t.Errorf("%s: %d warnings, want 1:\n%s", args[0], n, stderr)
		}
		// In the right format: no warning.
		args[len(args)-1] = "tool_call"
		if _, stderr, _ := runTrain(t, args...); strings.Contains(stderr, "warning:") {
			t.Errorf("%s --format tool_call warned:\n%s", args[0], stderr)
		}
	}
	// The demo model writes tool_call; GRPO with format pythonic warns at
	// the step and at the evaluation, once each.
	_, stderr, code := runTrain(t, "grpo", "--config", "../../configs/grpo-tiny.yaml", "--set", "run.dir="+filepath.Join(dir, "run"),
		"--set", "model.path=../../configs/demo/base-model", "--set", "model.init=pretrained", "--set", "model.system=",
		"--set", "format=pythonic", "--set", "optim.max_steps=2", "--set", "rollout.max_new_tokens=96", "--set", "eval_every=2", "--set", "rollout.g=2",
		"--set", "data.train="+filepath.Join(syn, "train.jsonl"), "--set", "data.val="+filepath.Join(syn, "val.jsonl"))
	if code != 0 {
		t.Fatalf("grpo: exit %d\n%s", code, stderr)
	}
	for _, w := range []string{"warning: step 1: ", "warning: evaluate " + filepath.Join(syn, "val.jsonl")} {
		if strings.Count(stderr, w) != 1 || !strings.Contains(stderr, want) {
			t.Errorf("grpo: want one %q line naming both formats:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "warning: step 2") {
		t.Errorf("grpo: the step warning repeated:\n%s", stderr)
	}
}
