package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	n, err := exportModel(src, out, "bf16")
	if err != nil {
		t.Fatal(err)
	}
	a, err := model.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	want := model.ParamsByName(a.Weights)
	total := 0
	for _, p := range b.Weights.Params() {
		q := want[p.Name]
		if q == nil {
			t.Fatalf("exported tensor %s is not in the source", p.Name)
		}
		if p.DType != safetensors.BF16 {
			t.Errorf("%s: dtype %s, want BF16", p.Name, p.DType)
		}
		for i, v := range q.Data {
			if r := safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v)); p.Data[i] != r {
				t.Fatalf("%s[%d] = %v, want bf16(%v) = %v", p.Name, i, p.Data[i], v, r)
			}
		}
		total += len(p.Data)
	}
	if total != n || len(want) != len(b.Weights.Params()) {
		t.Errorf("exported %d parameters in %d tensors; reported %d, source has %d tensors", total, len(b.Weights.Params()), n, len(want))
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
	if _, err := exportModel(src, filepath.Join(t.TempDir(), "x"), "fp8"); err == nil {
		t.Error("--dtype fp8: no error")
	}
}
