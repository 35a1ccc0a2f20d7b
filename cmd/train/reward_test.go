package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Two records: paper 000's currency example and a no-call turn.
const cliData = `{"id": "cur", "lang": "es", "tools": [{"name": "get_conversion_cost", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "from_currency": {"type": "string"}, "to_currency": {"type": "string"}}, "required": ["amount", "from_currency", "to_currency"]}}], "messages": [{"role": "user", "content": "¿Cuánto costará en dólares si transfiero 15000 Euro a dólares? y ¿cuánto si convierto 200 libras a dólares?"}], "calls": [{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}, {"name": "get_conversion_cost", "arguments": {"amount": 200, "from_currency": "pound", "to_currency": "dollars"}}]}
{"id": "joke", "lang": "es", "tools": [{"name": "get_conversion_cost", "parameters": {"type": "object", "properties": {"amount": {"type": "number"}}}}], "messages": [{"role": "user", "content": "Cuéntame un chiste"}], "calls": []}
`

const spanishPred = `<tool_call>{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dólares"}}</tool_call>\n<tool_call>{"name": "get_conversion_cost", "arguments": {"amount": 200, "from_currency": "libras", "to_currency": "dólares"}}</tool_call>`

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func predLine(t *testing.T, id, text string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"id": id, "text": text})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func runCmd(t *testing.T, mk func() *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	c := mk()
	var out, errb bytes.Buffer
	c.SetOut(&out)
	c.SetErr(&errb)
	c.SetArgs(args)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.Execute()
	return out.String(), errb.String(), err
}

func TestRewardCommand(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "cur", spanishPred)+predLine(t, "joke", "¡Claro! Un chiste: ...")+
		predLine(t, "joke", `<tool_call>{"name": "get_conversion_cost", "arguments": {"amount": 1}}</tool_call>`))
	want := map[string][]float64{"rm1": {0, 2, -1}, "rm2": {1.5, 2, -1}, "rm3": {1.375, 2.5, -1}, "decomposed": {0.2 + 0.3 + 0.5*(2.0/3+1.0/3)/2, 1, 0}, "binary": {0, 1, 0}}
	for name, rewards := range want {
		stdout, _, err := runCmd(t, newRewardCmd, "--reward", name, "--data", dataPath, "--predictions", preds)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != 3 {
			t.Fatalf("%s: %d stdout lines, want 3:\n%s", name, len(lines), stdout)
		}
		for i, l := range lines {
			var got struct {
				ID      string             `json:"id"`
				Reward  float64            `json:"reward"`
				Metrics map[string]int     `json:"metrics"`
				Parts   map[string]float64 `json:"parts"`
			}
			if err := json.Unmarshal([]byte(l), &got); err != nil {
				t.Fatalf("%s: stdout line %d is not JSON: %v\n%s", name, i+1, err, l)
			}
			if math.Abs(got.Reward-rewards[i]) > 1e-9 {
				t.Errorf("%s line %d (%s): reward %v, want %v", name, i+1, got.ID, got.Reward, rewards[i])
			}
			if len(got.Metrics) != 5 || got.Parts == nil {
				t.Errorf("%s line %d: metrics %v parts %v", name, i+1, got.Metrics, got.Parts)
			}
		}
	}
	// r2if without a student needs --w-cer 0.
	if _, _, err := runCmd(t, newRewardCmd, "--reward", "r2if", "--format", "reason_tool", "--data", dataPath, "--predictions", preds); err == nil || !strings.Contains(err.Error(), "student") {
		t.Errorf("r2if without --w-cer 0: err %v", err)
	}
	if _, _, err := runCmd(t, newRewardCmd, "--reward", "r2if", "--format", "reason_tool", "--w-cer", "0", "--data", dataPath, "--predictions", preds); err != nil {
		t.Errorf("r2if --w-cer 0: %v", err)
	}
	// r2if reads the <reason> block: another format is refused, not scored 0.
	if stdout, _, err := runCmd(t, newRewardCmd, "--reward", "r2if", "--w-cer", "0", "--data", dataPath, "--predictions", preds); err == nil || !strings.Contains(err.Error(), "reason_tool") || stdout != "" {
		t.Errorf("r2if with --format tool_call: err %v, stdout %q; want a refusal naming reason_tool", err, stdout)
	}
}

func TestRewardCommandErrors(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	good := predLine(t, "cur", spanishPred)
	cases := []struct {
		name, preds string
		args        []string
		want        []string
	}{
		{"not JSON", good + "{oops\n", nil, []string{"preds.jsonl:2", "JSON"}},
		{"unknown id", predLine(t, "nope", "x"), nil, []string{"preds.jsonl:1", `"nope"`, "not in the data file"}},
		{"missing id", good + `{"text": "x"}` + "\n", nil, []string{"preds.jsonl:2", `"id"`}},
		{"missing text", `{"id": "cur"}` + "\n", nil, []string{"preds.jsonl:1", `"text"`}},
		{"unknown reward", good, []string{"--reward", "rm9"}, []string{"rm9", "rm1", "decomposed", "r2if"}},
		{"unknown format", good, []string{"--format", "xml"}, []string{"xml", "pythonic"}},
		{"http judge without url", good, []string{"--judge", "http"}, []string{"url"}},
	}
	for _, c := range cases {
		p := writeFile(t, dir, "preds.jsonl", c.preds)
		args := append([]string{"--reward", "rm3", "--data", dataPath, "--predictions", p}, c.args...)
		stdout, _, err := runCmd(t, newRewardCmd, args...)
		if !errHas(t, c.name, err, c.want...) {
			continue
		}
		if c.name == "not JSON" && stdout != "" {
			t.Errorf("%s: wrote to stdout before failing: %q", c.name, stdout)
		}
	}
	bad := writeFile(t, dir, "bad.jsonl", cliData+`{"id": "x", "lang": "es", "messages": [], "calls": []}`+"\n")
	p := writeFile(t, dir, "preds.jsonl", good)
	if _, _, err := runCmd(t, newRewardCmd, "--reward", "rm3", "--data", bad, "--predictions", p); err == nil || !strings.Contains(err.Error(), "bad.jsonl:3") {
		t.Errorf("bad data file: err %v, want one naming bad.jsonl:3", err)
	}
}

func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "joke", "¡Claro!")+predLine(t, "cur", spanishPred))
	out := filepath.Join(dir, "metrics.json")
	stdout, _, err := runCmd(t, newEvalCmd, "--data", dataPath, "--predictions", preds, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"TID", "TSA", "ACA", "ALC", "FCM", "exact_match", "name_acc", "arg_score"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("table lacks %s:\n%s", w, stdout)
		}
	}
	rep := readRates(t, out)
	// cur stops at ALC (Spanish values), joke is a correct no-call.
	want := map[string]float64{"n": 2, "tid": 1, "tsa": 1, "aca": 1, "alc": 0.5, "fcm": 0.5, "exact_match": 0.5,
		"name_acc": 1, "arg_score": (1 + (2.0/3+1.0/3)/2) / 2}
	for k, v := range want {
		if math.Abs(rep[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, rep[k], v)
		}
	}

	// Exactly one prediction per record.
	dup := writeFile(t, dir, "dup.jsonl", predLine(t, "joke", "a")+predLine(t, "cur", spanishPred)+predLine(t, "joke", "b"))
	if _, _, err := runCmd(t, newEvalCmd, "--data", dataPath, "--predictions", dup); err == nil || !strings.Contains(err.Error(), "dup.jsonl:3") {
		t.Errorf("duplicate: err %v", err)
	}
	miss := writeFile(t, dir, "miss.jsonl", predLine(t, "joke", "a"))
	if _, _, err := runCmd(t, newEvalCmd, "--data", dataPath, "--predictions", miss); err == nil || !strings.Contains(err.Error(), "cur") {
		t.Errorf("missing: err %v", err)
	}
	// Model-driven evaluation (rollout engine, generate.go) needs a model directory.
	if _, _, err := runCmd(t, newEvalCmd, "--data", dataPath, "--model", dir); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("--model: err %v", err)
	}
	if _, _, err := runCmd(t, newEvalCmd, "--data", dataPath); err == nil || !strings.Contains(err.Error(), "--predictions") {
		t.Errorf("no predictions: err %v", err)
	}
}

// `train reward --reward r2if --student DIR` scores CER with that student
// (the committed tiny model); flags that cannot work are refused before it
// loads.
func TestRewardR2IFStudent(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	reasoned := `<reason>The user wants 15000 euro in dollars.</reason><tool>[{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}]</tool>`
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "cur", reasoned))
	student := "../../configs/demo/base-model"
	stdout, _, err := runCmd(t, newRewardCmd, "--reward", "r2if", "--format", "reason_tool", "--student", student, "--data", dataPath, "--predictions", preds)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Reward float64            `json:"reward"`
		Parts  map[string]float64 `json:"parts"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	cer, ok := got.Parts["cer"]
	if !ok || cer < -1 || cer > 1 {
		t.Fatalf("parts %v: want a CER in [-1, 1]", got.Parts)
	}
	if want := 3*got.Parts["binary"] + cer + got.Parts["smv"]; math.Abs(got.Reward-want) > 1e-9 {
		t.Errorf("reward %v, want 3·binary + cer + smv = %v", got.Reward, want)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"student for another reward", []string{"--reward", "rm3", "--student", student}, "only used by --reward r2if"},
		{"r2if in tool_call, missing student", []string{"--reward", "r2if", "--student", filepath.Join(dir, "none")}, "reason_tool"},
		{"missing student", []string{"--reward", "r2if", "--format", "reason_tool", "--student", filepath.Join(dir, "none")}, "--student " + filepath.Join(dir, "none")},
	} {
		_, _, err := runCmd(t, newRewardCmd, append(c.args, "--data", dataPath, "--predictions", preds)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one with %q", c.name, err, c.want)
		}
	}
}

// `train eval --metric ace` reports R2IF's ACE from the same student as
// the r2if reward: for one record it is that response's CER, as `train
// reward --reward r2if` computes it; flags that cannot work are refused.
func TestEvalACE(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", strings.SplitAfter(cliData, "\n")[0]) // the "cur" record alone
	reasoned := `<reason>The user wants 15000 euro in dollars.</reason><tool>[{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}]</tool>`
	preds := writeFile(t, dir, "preds.jsonl", predLine(t, "cur", reasoned))
	student := "../../configs/demo/base-model"
	stdout, _, err := runCmd(t, newRewardCmd, "--reward", "r2if", "--format", "reason_tool", "--student", student, "--data", dataPath, "--predictions", preds)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Parts map[string]float64 `json:"parts"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	out := filepath.Join(dir, "m.json")
	stdout, _, err = runCmd(t, newEvalCmd, "--format", "reason_tool", "--metric", "ace", "--student", student, "--data", dataPath, "--predictions", preds, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "ACE ") || !strings.Contains(stdout, "standard error; 1 records") {
		t.Errorf("stdout:\n%s", stdout)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		N   int `json:"n"`
		ACE struct {
			ACE float64 `json:"ace"`
			SE  float64 `json:"ace_se"`
			N   int     `json:"n"`
		} `json:"ace"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.N != 1 || rep.ACE.N != 1 || rep.ACE.ACE != got.Parts["cer"] || rep.ACE.SE != 0 {
		t.Errorf("eval --out %s, want ace = the reward's cer %v", raw, got.Parts["cer"])
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no student", []string{"--format", "reason_tool", "--metric", "ace"}, "--student"},
		{"unknown metric", []string{"--metric", "bleu"}, "ace"},
		{"student without the metric", []string{"--student", student}, "--metric ace"},
		{"ace in tool_call", []string{"--metric", "ace", "--student", student}, "reason_tool"},
	} {
		_, _, err := runCmd(t, newEvalCmd, append(c.args, "--data", dataPath, "--predictions", preds)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one with %q", c.name, err, c.want)
		}
	}
}
