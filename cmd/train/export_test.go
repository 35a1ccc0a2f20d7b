package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer"
)

// TestExportBF16: a random tiny qwen2 exported in bf16 reloads with every
// weight equal to its float32 value rounded to bfloat16, torch_dtype set
// and the tokenizer files copied.
func TestExportBF16(t *testing.T) {
	src := t.TempDir()
	if err := trainer.WriteRandomModel("../../trainer/testdata/sft/tiny", src, 7); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile("../../trainer/testdata/sft/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), tok, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "exported")
	n, err := model.Export(src, out, model.ExportOptions{DType: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := safetensors.OpenDir(src)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := safetensors.OpenDir(out)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	total := 0
	for _, name := range b.Names() {
		info, _ := b.Info(name)
		q, _, err := a.Float32(name)
		if err != nil {
			t.Fatalf("exported tensor %s is not in the source: %v", name, err)
		}
		if info.DType != safetensors.BF16 {
			t.Errorf("%s: dtype %s, want BF16", name, info.DType)
		}
		p, _, _ := b.Float32(name)
		for i, v := range q {
			if r := safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v)); p[i] != r {
				t.Fatalf("%s[%d] = %v, want bf16(%v) = %v", name, i, p[i], v, r)
			}
		}
		total += len(p)
	}
	if total != n || len(a.Names()) != len(b.Names()) {
		t.Errorf("exported %d parameters in %d tensors; reported %d, source has %d tensors", total, len(b.Names()), n, len(a.Names()))
	}
	raw, err := os.ReadFile(filepath.Join(out, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg["torch_dtype"] != "bfloat16" {
		t.Errorf("config.json torch_dtype = %v (%v), want bfloat16", cfg["torch_dtype"], err)
	}
	if got, err := os.ReadFile(filepath.Join(out, "tokenizer.json")); err != nil || string(got) != string(tok) {
		t.Errorf("tokenizer.json not copied (%v)", err)
	}
	if _, err := model.Export(src, filepath.Join(t.TempDir(), "x"), model.ExportOptions{DType: "fp8"}); err == nil {
		t.Error("--dtype fp8: no error")
	}
}

// TestExportMergeScores: `train export --adapter A --merge` writes a full
// model (sharded here, with its index) whose `train score` log-probs are
// those of the base with the adapter, within 1e-5 in f32; bf16 rounds the
// merged weights. `--adapter` alone writes the adapter in PEFT's layout.
func TestExportMergeScores(t *testing.T) {
	const fixture = "../../testdata/models/qwen2-bf16-tied"
	adapter := filepath.Join(fixture, "adapter")
	ids := "5,17,40,99,300,12,7,64,3,250,9"
	// --compute f32: the tolerances are float32 products' (bf16 products
	// would round the merged and the unmerged weights differently).
	want, err := runScore(t, "--model", fixture, "--compute", "f32", "--adapter", adapter, "--ids", ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dtype string
		tol   float64
	}{{"f32", 1e-5}, {"bf16", 5e-2}} {
		out := filepath.Join(t.TempDir(), "merged-"+c.dtype)
		if _, _, err := runCmd(t, newExportCmd, "--model", fixture, "--adapter", adapter, "--merge",
			"--dtype", c.dtype, "--shard-size", "40000", "--out", out); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(out, safetensors.IndexName)); err != nil {
			t.Errorf("%s: a 40 kB shard size wrote no index: %v", c.dtype, err)
		}
		got, err := runScore(t, "--model", out, "--compute", "f32", "--ids", ids)
		if err != nil {
			t.Fatal(err)
		}
		d := maxLogprobDiff(t, got, want)
		t.Logf("%s merged export vs base + adapter: max |Δ log-prob| %.2e", c.dtype, d)
		if d > c.tol {
			t.Errorf("%s merged export: max |Δ log-prob| %.2e > %g", c.dtype, d, c.tol)
		}
	}
	out := filepath.Join(t.TempDir(), "adapter")
	if _, _, err := runCmd(t, newExportCmd, "--model", fixture, "--adapter", adapter, "--out", out); err != nil {
		t.Fatal(err)
	}
	got, err := runScore(t, "--model", fixture, "--compute", "f32", "--adapter", out, "--ids", ids)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxLogprobDiff(t, got, want); d != 0 {
		t.Errorf("re-exported adapter changes log-probs by %g", d)
	}
	if _, _, err := runCmd(t, newExportCmd, "--adapter", adapter, "--merge", "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("an adapter whose base is not a local directory, without --model: %v", err)
	}
}

// maxLogprobDiff compares two `train score` outputs line by line.
func maxLogprobDiff(t *testing.T, a, b string) float64 {
	t.Helper()
	la, lb := strings.Split(strings.TrimSpace(a), "\n"), strings.Split(strings.TrimSpace(b), "\n")
	if len(la) != len(lb) {
		t.Fatalf("%d lines vs %d", len(la), len(lb))
	}
	var worst float64
	for i := range la {
		var x, y struct{ Logprobs []*float64 }
		if json.Unmarshal([]byte(la[i]), &x) != nil || json.Unmarshal([]byte(lb[i]), &y) != nil || len(x.Logprobs) != len(y.Logprobs) {
			t.Fatalf("line %d: %q vs %q", i, la[i], lb[i])
		}
		for j := 1; j < len(x.Logprobs); j++ {
			worst = math.Max(worst, math.Abs(*x.Logprobs[j]-*y.Logprobs[j]))
		}
	}
	return worst
}
