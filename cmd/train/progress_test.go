package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward"
)

// progressLine checks that stderr has progress lines of label and that the
// last one reports total of total items and the time taken.
func progressLine(t *testing.T, stderr, label string, total int) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + label + ` (\d+)/(\d+)\b.*$`)
	all := re.FindAllString(stderr, -1)
	if len(all) == 0 {
		t.Fatalf("stderr has no %q progress line:\n%s", label, stderr)
	}
	last := all[len(all)-1]
	if want := fmt.Sprintf("%s %d/%d", label, total, total); !strings.HasPrefix(last, want) || !strings.Contains(last, " in ") {
		t.Errorf("last %s line %q, want %q ... in Ns", label, last, want)
	}
}

// The JSON commands print progress on stderr and nothing but their JSON
// lines on stdout; eval's table is what the scorer prints for the same
// responses.
func TestProgressOnStderrStdoutPure(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(scoreFixtures, "qwen2-f32")

	// score: every stdout line is one JSON object of the contract.
	in := writeFile(t, dir, "in.jsonl", `{"token_ids":[5,6,7]}`+"\n"+`{"token_ids":[8,9]}`+"\n")
	stdout, stderr, err := runCmd(t, newScoreCmd, "--model", model, "--input", in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	for i, want := range []int{3, 2} {
		var got struct {
			TokenIDs []int32    `json:"token_ids"`
			Logprobs []*float64 `json:"logprobs"`
		}
		dec := json.NewDecoder(strings.NewReader(lines[min(i, len(lines)-1)]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil || len(lines) != 2 || len(got.TokenIDs) != want || len(got.Logprobs) != want || dec.More() {
			t.Fatalf("score stdout is not 2 JSON lines of the contract (%v):\n%s", err, stdout)
		}
	}
	progressLine(t, stderr, "score", 2)

	// generate: one JSON line per sample.
	prompts, _ := writePromptIDs(t, dir, 3, 3)
	stdout, stderr, err = runCmd(t, newGenerateCmd, "--model", model, "--prompt-ids", prompts, "--n", "2", "--max-new-tokens", "4")
	if err != nil {
		t.Fatal(err)
	}
	if lines := parseGen(t, stdout); len(lines) != 6 {
		t.Errorf("generate: %d stdout lines, want 6", len(lines))
	}
	progressLine(t, stderr, "generate", 3)

	// eval: the table, unchanged.
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "joke", "¡Claro!")+predLine(t, "cur", spanishPred))
	stdout, stderr, err = runCmd(t, newEvalCmd, "--data", dataPath, "--predictions", preds)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := data.ReadFile(dataPath)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reward.NewScorer(reward.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := s.Evaluate(t.Context(), recs, []string{spanishPred, "¡Claro!"})
	if err != nil {
		t.Fatal(err)
	}
	if stdout != rep.Table() {
		t.Errorf("eval stdout:\n%s\nwant the table alone:\n%s", stdout, rep.Table())
	}
	progressLine(t, stderr, "eval", 2)

	// data convert: progress over the source items.
	out := filepath.Join(dir, "ls.jsonl")
	_, stderr, err = runCmd(t, dataConvertCmd, "--from", "bfcl", "--answers", bfclDir+"/possible_answer/BFCL_v4_live_simple.json",
		bfclDir+"/BFCL_v4_live_simple.json", out)
	if err != nil {
		t.Fatal(err)
	}
	progressLine(t, stderr, "convert", 2)
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}
