package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const scoreFixtures = "../../testdata/models"

type scoreRef struct {
	Tokens       [][]int32    `json:"tokens"`
	Logprobs     [][]*float64 `json:"logprobs"`
	LoraLogprobs [][]*float64 `json:"lora_logprobs"`
}

func runScore(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newScoreCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func idList(s []int32) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(int(v))
	}
	return strings.Join(parts, ",")
}

// checkLines parses the JSON lines and compares them with the reference.
func checkLines(t *testing.T, out string, seqs [][]int32, want [][]*float64) float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(seqs) {
		t.Fatalf("%d lines for %d sequences:\n%s", len(lines), len(seqs), out)
	}
	var worst float64
	for i, l := range lines {
		var got struct {
			TokenIDs []int32    `json:"token_ids"`
			Logprobs []*float64 `json:"logprobs"`
		}
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if idList(got.TokenIDs) != idList(seqs[i]) || len(got.Logprobs) != len(want[i]) || got.Logprobs[0] != nil {
			t.Fatalf("line %d: %s", i, l)
		}
		for j := 1; j < len(want[i]); j++ {
			worst = math.Max(worst, math.Abs(*got.Logprobs[j]-*want[i][j]))
		}
	}
	return worst
}

func TestScoreCommand(t *testing.T) {
	for _, name := range []string{"qwen2-f32", "qwen3-bf16-sharded", "llama-bf16-tied"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(scoreFixtures, name)
			raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref scoreRef
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			// --ids, base model.
			// --compute f32: the PyTorch reference is float32.
			out, err := runScore(t, "--model", dir, "--compute", "f32", "--ids", idList(ref.Tokens[0]))
			if err != nil {
				t.Fatal(err)
			}
			d1 := checkLines(t, out, ref.Tokens[:1], ref.Logprobs[:1])
			// --input with every sequence, with the adapter.
			var in strings.Builder
			for _, s := range ref.Tokens {
				js, _ := json.Marshal(map[string]any{"id": "x", "token_ids": s})
				in.Write(js)
				in.WriteString("\n")
			}
			path := filepath.Join(t.TempDir(), "in.jsonl")
			if err := os.WriteFile(path, []byte(in.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err = runScore(t, "--model", dir, "--compute", "f32", "--adapter", filepath.Join(dir, "adapter"), "--input", path)
			if err != nil {
				t.Fatal(err)
			}
			d2 := checkLines(t, out, ref.Tokens, ref.LoraLogprobs)
			t.Logf("max |Δ log-prob| vs PyTorch: --ids base %.2e, --input LoRA %.2e", d1, d2)
			if d1 > 1e-4 || d2 > 1e-4 {
				t.Errorf("score vs PyTorch: %.2e, %.2e > 1e-4", d1, d2)
			}
		})
	}
}

func TestScoreErrors(t *testing.T) {
	dir := filepath.Join(scoreFixtures, "llama-f32")
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"token_ids\":[1,2]}\n{\"token_ids\":[1,\"a\"]}\n"), 0o644)
	noKey := filepath.Join(tmp, "nokey.jsonl")
	os.WriteFile(noKey, []byte("{\"ids\":[1,2]}\n"), 0o644)
	big := filepath.Join(tmp, "big.jsonl")
	os.WriteFile(big, []byte("{\"token_ids\":[1,2]}\n\n{\"token_ids\":[1,320]}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ids", "1,2"}, "--model is required"},
		{[]string{"--model", dir}, "exactly one of"},
		{[]string{"--model", dir, "--ids", "1,x,3"}, `item 2 "x"`},
		{[]string{"--model", dir, "--ids", "1,-4"}, `item 2 "-4"`},
		{[]string{"--model", dir, "--ids", "1,320"}, "id 320 is outside the vocabulary"},
		{[]string{"--model", filepath.Join(tmp, "none"), "--ids", "1,2"}, "none"},
		{[]string{"--model", dir, "--input", bad}, "bad.jsonl:2"},
		{[]string{"--model", dir, "--input", noKey}, `nokey.jsonl:1: key "token_ids"`},
		{[]string{"--model", dir, "--input", big}, "big.jsonl:3: token 1: id 320"},
		{[]string{"--model", dir, "--input", filepath.Join(tmp, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"--model", dir, "--adapter", tmp, "--ids", "1,2"}, "adapter_config.json"},
	} {
		out, err := runScore(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to mention %q", c.args, err, c.want)
		}
		if out != "" {
			t.Errorf("%v: wrote %q to stdout on error", c.args, out)
		}
	}
}
