package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/model/plan"
)

const plan7B = "../../model/plan/testdata/qwen2.5-7b"

// `train plan` prints its table for the 7B shape on an H200, every phase
// and the targets labelled as predictions; --json carries the same plan;
// measured ceilings from a file replace the datasheet's; bad input fails
// with the file and key named.
func TestPlanCommand(t *testing.T) {
	run := func(args ...string) (string, error) {
		cmd := newPlanCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--model", plan7B, "--gpu", "h200")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"predictions of the model", "7.62 B weights", "rollout prefill", "rollout decode",
		"reference log-probs", "old log-probs", "train forward", "train backward", "MFU", "SFT step MFU at T = 1,536", "(predicted)"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("\n%s", out)

	js, err := run("--model", plan7B, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	if len(p.Phases) != 6 || p.MFU <= 0 || p.GPU.Name != "h200" {
		t.Errorf("--json: %d phases, MFU %v, GPU %q", len(p.Phases), p.MFU, p.GPU.Name)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "ceilings.json")
	if err := os.WriteFile(good, []byte(`{"gemm_tflops": 371, "copy_gbps": 2160}`), 0o644); err != nil {
		t.Fatal(err)
	}
	js2, err := run("--model", plan7B, "--json", "--ceilings", good)
	if err != nil {
		t.Fatal(err)
	}
	var p2 plan.Plan
	if err := json.Unmarshal([]byte(js2), &p2); err != nil {
		t.Fatal(err)
	}
	if p2.GPU.GEMMTFLOPS != 371 || p2.GPU.CopyGBps != 2160 || !(p2.Seconds > p.Seconds) {
		t.Errorf("measured ceilings: GEMM %v copy %v, step %v s (datasheet %v s)", p2.GPU.GEMMTFLOPS, p2.GPU.CopyGBps, p2.Seconds, p.Seconds)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"gemm_tflop": 371}`), 0o644); err != nil {
		t.Fatal(err)
	}
	neg := filepath.Join(dir, "neg.json")
	if err := os.WriteFile(neg, []byte(`{"copy_gbps": -1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpu", "h200"}, "--model is required"},
		{[]string{"--model", plan7B, "--gpu", "v100"}, "unknown GPU"},
		{[]string{"--model", plan7B, "--ceilings", bad}, `bad.json: json: unknown field "gemm_tflop"`},
		{[]string{"--model", plan7B, "--ceilings", neg}, `neg.json: key "copy_gbps"`},
		{[]string{"--model", plan7B, "--algo", "dpo"}, "want sft or grpo"},
		{[]string{"--model", plan7B, "--attn-frac", "0"}, "--attn-frac 0"},
		{[]string{"--model", dir}, "config.json"},
	} {
		if _, err := run(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}
