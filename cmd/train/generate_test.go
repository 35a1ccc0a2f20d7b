package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer/bpetrain"
)

type genLine struct {
	ID       string    `json:"id"`
	Sample   int       `json:"sample"`
	Text     string    `json:"text"`
	TokenIDs []int32   `json:"token_ids"`
	Logprobs []float64 `json:"logprobs"`
	Finish   string    `json:"finish_reason"`
}

func runGenerate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newGenerateCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func parseGen(t *testing.T, out string) []genLine {
	t.Helper()
	var lines []genLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var g genLine
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if len(g.TokenIDs) != len(g.Logprobs) {
			t.Fatalf("line %q: %d ids, %d log-probs", l, len(g.TokenIDs), len(g.Logprobs))
		}
		lines = append(lines, g)
	}
	return lines
}

// writePromptIDs writes n random prompts {"id","token_ids"} and returns
// the file and the prompts by id.
func writePromptIDs(t *testing.T, dir string, seed uint64, n int) (string, map[string][]int32) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	byID := map[string][]int32{}
	var b strings.Builder
	for i := range n {
		ids := make([]int32, 1+r.IntN(20))
		for j := range ids {
			ids[j] = int32(4 + r.IntN(300))
		}
		id := fmt.Sprintf("rec-%02d", i)
		byID[id] = ids
		js, _ := json.Marshal(map[string]any{"id": id, "token_ids": ids})
		b.Write(js)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, fmt.Sprintf("prompts-%d-%d.jsonl", seed, n))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, byID
}

// TestGenerateMatchesScore is issue 5's consistency acceptance: for the
// samples `train generate` prints, `train score` on prompt+response gives
// the same response log-probs within 1e-4, on fixture models, with the
// LoRA adapter and without.
func TestGenerateMatchesScore(t *testing.T) {
	tmp := t.TempDir()
	prompts, byID := writePromptIDs(t, tmp, 1, 4)
	for _, name := range []string{"qwen2-f32", "qwen3-bf16-sharded", "llama-bf16-tied"} {
		for _, lora := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lora=%v", name, lora), func(t *testing.T) {
				dir := filepath.Join(scoreFixtures, name)
				var ad []string
				if lora {
					ad = []string{"--adapter", filepath.Join(dir, "adapter")}
				}
				out, err := runGenerate(t, append([]string{"--model", dir, "--prompt-ids", prompts, "--n", "3",
					"--temperature", "0.9", "--top-p", "0.95", "--max-new-tokens", "10", "--seed", "7"}, ad...)...)
				if err != nil {
					t.Fatal(err)
				}
				lines := parseGen(t, out)
				if len(lines) != 12 {
					t.Fatalf("%d lines, want 4 prompts × 3", len(lines))
				}
				var in strings.Builder
				for _, l := range lines {
					js, _ := json.Marshal(map[string]any{"token_ids": append(append([]int32(nil), byID[l.ID]...), l.TokenIDs...)})
					in.Write(js)
					in.WriteByte('\n')
				}
				path := filepath.Join(t.TempDir(), "seqs.jsonl")
				os.WriteFile(path, []byte(in.String()), 0o644)
				sout, err := runScore(t, append([]string{"--model", dir, "--input", path}, ad...)...)
				if err != nil {
					t.Fatal(err)
				}
				scored := strings.Split(strings.TrimSuffix(sout, "\n"), "\n")
				var worst float64
				n := 0
				for i, l := range lines {
					var s struct {
						Logprobs []*float64 `json:"logprobs"`
					}
					if err := json.Unmarshal([]byte(scored[i]), &s); err != nil {
						t.Fatal(err)
					}
					P := len(byID[l.ID])
					for j, lp := range l.Logprobs {
						worst = math.Max(worst, math.Abs(lp-*s.Logprobs[P+j]))
						n++
					}
				}
				t.Logf("%d response tokens: max |generate − score| = %.2e", n, worst)
				if worst > 1e-4 || n < 60 {
					t.Errorf("max |Δ log-prob| %.2e over %d tokens (want ≤ 1e-4 over ≥ 60)", worst, n)
				}
			})
		}
	}
}

// TestGenerateDeterministic: byte-identical output across runs and --batch
// widths; a prompt's lines are the same alone as among 16 prompts.
func TestGenerateDeterministic(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(scoreFixtures, "qwen3-f32-tied")
	many, byID := writePromptIDs(t, tmp, 2, 16)
	args := []string{"--model", dir, "--adapter", filepath.Join(dir, "adapter"), "--n", "2", "--max-new-tokens", "16", "--seed", "3"}
	a, err := runGenerate(t, append(args, "--prompt-ids", many)...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runGenerate(t, append(args, "--prompt-ids", many, "--batch", "3")...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := runGenerate(t, append(args, "--prompt-ids", many)...)
	if err != nil {
		t.Fatal(err)
	}
	if a != c || a != b {
		t.Fatalf("outputs differ across runs or --batch 64 vs 3")
	}
	one := filepath.Join(tmp, "one.jsonl")
	js, _ := json.Marshal(map[string]any{"id": "rec-09", "token_ids": byID["rec-09"]})
	os.WriteFile(one, append(js, '\n'), 0o644)
	solo, err := runGenerate(t, append(args, "--prompt-ids", one)...)
	if err != nil {
		t.Fatal(err)
	}
	var inBatch strings.Builder
	for _, l := range strings.SplitAfter(a, "\n") {
		if strings.HasPrefix(l, `{"id":"rec-09",`) {
			inBatch.WriteString(l)
		}
	}
	if solo == "" || solo != inBatch.String() {
		t.Fatalf("rec-09 alone:\n%s\nin a batch of 16:\n%s", solo, inBatch.String())
	}
	other, err := runGenerate(t, append(args[:len(args)-1], "4", "--prompt-ids", many)...)
	if err != nil {
		t.Fatal(err)
	}
	if other == a {
		t.Fatal("--seed 3 and --seed 4 print the same samples")
	}
}

func TestGenerateErrors(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(scoreFixtures, "llama-f32")
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	long := make([]string, 129)
	for i := range long {
		long[i] = "7"
	}
	ok := write("ok.jsonl", `{"id":"a","token_ids":[5,6]}`+"\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prompt-ids", ok}, "--model is required"},
		{[]string{"--model", dir}, "exactly one of --data and --prompt-ids"},
		{[]string{"--model", dir, "--prompt-ids", write("empty.jsonl", `{"id":"e","token_ids":[]}`+"\n")}, `empty.jsonl:1: key "token_ids": empty prompt`},
		{[]string{"--model", dir, "--prompt-ids", write("noid.jsonl", `{"token_ids":[4]}`+"\n")}, `noid.jsonl:1: key "id"`},
		{[]string{"--model", dir, "--prompt-ids", write("dup.jsonl", `{"id":"a","token_ids":[4]}`+"\n\n"+`{"id":"a","token_ids":[5]}`+"\n")}, `dup.jsonl:3: key "id": "a" repeats line 1`},
		{[]string{"--model", dir, "--prompt-ids", write("vocab.jsonl", `{"id":"v","token_ids":[4,320]}`+"\n")}, `vocab.jsonl:1: key "token_ids"[1]: 320`},
		{[]string{"--model", dir, "--prompt-ids", write("json.jsonl", `{"id":"v","token_ids":[4}`+"\n")}, "json.jsonl:1"},
		{[]string{"--model", dir, "--prompt-ids", write("long.jsonl", `{"id":"l","token_ids":[`+strings.Join(long, ",")+"]}\n")}, "long.jsonl:1: the prompt has 129 tokens, more than the model's context of 128"},
		{[]string{"--model", dir, "--prompt-ids", ok, "--n", "8", "--batch", "4"}, "--batch 4 is smaller than --n 8"},
		{[]string{"--model", dir, "--prompt-ids", ok, "--top-p", "0"}, "--top-p 0"},
		{[]string{"--model", dir, "--prompt-ids", ok, "--temperature", "-1"}, "--temperature -1"},
		{[]string{"--model", dir, "--prompt-ids", ok, "--max-new-tokens", "-1"}, "--max-new-tokens -1"},
		{[]string{"--model", dir, "--prompt-ids", ok, "--stop", "x"}, "need a tokenizer"},
		{[]string{"--model", dir, "--data", ok}, "has no tokenizer.json"},
		{[]string{"--model", dir, "--prompt-ids", filepath.Join(tmp, "missing.jsonl")}, "missing.jsonl"},
	} {
		out, err := runGenerate(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want it to mention %q", c.args, err, c.want)
		}
		if out != "" {
			t.Errorf("%v: printed %q before failing", c.args, out)
		}
	}
	// max_new_tokens 0: one line per sample with empty arrays.
	out, err := runGenerate(t, "--model", dir, "--prompt-ids", ok, "--n", "2", "--max-new-tokens", "0")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a","sample":0,"text":"","token_ids":[],"logprobs":[],"finish_reason":"length"}` + "\n" +
		`{"id":"a","sample":1,"text":"","token_ids":[],"logprobs":[],"finish_reason":"length"}` + "\n"
	if out != want {
		t.Errorf("--max-new-tokens 0 printed:\n%s\nwant:\n%s", out, want)
	}
}

// TestGenerateAndEvalWithText: --data records through the chat template
// and a real tokenizer (a 300-token BPE trained here, which fits the
// fixtures' vocabulary of 320); model-driven `train eval` scores exactly
// the texts of greedy `train generate` (--n 1 --temperature 0).
func TestGenerateAndEvalWithText(t *testing.T) {
	tmp := t.TempDir()
	cfg := synth.DefaultConfig()
	cfg.Train, cfg.Val, cfg.Test, cfg.Base = 40, 5, 2, 4
	o, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := chat.Get("qwen2.5")
	f, _ := format.Get("tool_call", format.Options{})
	var texts []string
	for _, r := range o.Train {
		rr, err := tmpl.Render(r, f, true)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, rr.Text)
	}
	bpe, err := bpetrain.Train(texts, bpetrain.Config{VocabSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	tokDir := filepath.Join(tmp, "tok")
	if err := bpe.WriteDir(tokDir, 4096); err != nil {
		t.Fatal(err)
	}
	val := filepath.Join(tmp, "val.jsonl")
	if err := data.WriteFile(val, o.Val); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(scoreFixtures, "qwen2-f32")
	common := []string{"--model", dir, "--adapter", filepath.Join(dir, "adapter"), "--tokenizer", tokDir, "--data", val,
		"--template", "qwen2.5", "--max-len", "2048"}
	out, err := runGenerate(t, append(common, "--n", "1", "--temperature", "0", "--max-new-tokens", "24")...)
	if err != nil {
		t.Fatal(err)
	}
	lines := parseGen(t, out)
	if len(lines) != len(o.Val) {
		t.Fatalf("%d lines for %d records", len(lines), len(o.Val))
	}
	var preds strings.Builder
	for i, l := range lines {
		if l.ID != o.Val[i].ID || (l.Text == "" && len(l.TokenIDs) > 1) {
			t.Fatalf("line %d: id %q text %q for %d tokens", i, l.ID, l.Text, len(l.TokenIDs))
		}
		js, _ := json.Marshal(map[string]string{"id": l.ID, "text": l.Text})
		preds.Write(js)
		preds.WriteByte('\n')
	}
	predPath := filepath.Join(tmp, "preds.jsonl")
	os.WriteFile(predPath, []byte(preds.String()), 0o644)
	runEvalCmd := func(args ...string) string {
		cmd := newEvalCmd()
		var so, se bytes.Buffer
		cmd.SetOut(&so)
		cmd.SetErr(&se)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("eval %v: %v", args, err)
		}
		return so.String()
	}
	fromFile := runEvalCmd("--data", val, "--predictions", predPath, "--out", filepath.Join(tmp, "a.json"))
	fromModel := runEvalCmd(append(common, "--max-new-tokens", "24", "--out", filepath.Join(tmp, "b.json"))...)
	a, _ := os.ReadFile(filepath.Join(tmp, "a.json"))
	b, _ := os.ReadFile(filepath.Join(tmp, "b.json"))
	if fromFile != fromModel || !bytes.Equal(a, b) || len(a) == 0 {
		t.Errorf("model-driven eval differs from eval of greedy generate's texts:\n%s\nvs\n%s", fromModel, fromFile)
	}
}
