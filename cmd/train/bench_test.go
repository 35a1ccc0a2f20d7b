package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// data/testdata/bfcl/v4: entries written in BFCL v4's formats (and layout:
// answers under possible_answer/), one quirk of the official data each.
const bfclDir = "../../data/testdata/bfcl/v4"

func TestDataConvertBFCL(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "ls.jsonl")
	_, stderr, err := runCmd(t, dataConvertCmd, "--from", "bfcl", "--answers", bfclDir+"/possible_answer/BFCL_v4_live_simple.json",
		bfclDir+"/BFCL_v4_live_simple.json", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"quirk: 1× an answer has an empty list of acceptable values", `quirk: 1× a required parameter's only acceptable value is ""`,
		"2 items → 2 records"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	// A malformed line fails with file:line and names --skip-bad.
	bad := writeFile(t, dir, "BFCL_v4_simple_python.json", `{"id": "simple_python_0", "question": "q", "function": [{"name": "f", "parameters": {"type": "dict", "properties": {}, "required": []}}]}`+"\n")
	ans := writeFile(t, dir, "a.json", `{"id": "simple_python_0", "ground_truth": [{"f": {"x": 1}}]}`+"\n")
	_, _, err = runCmd(t, dataConvertCmd, "--from", "bfcl", "--answers", ans, bad, out)
	if err == nil || !strings.Contains(err.Error(), bad+":1: ") || !strings.Contains(err.Error(), "--skip-bad") {
		t.Errorf("malformed line: %v", err)
	}
}

func TestRewardBFCLCommand(t *testing.T) {
	dir := t.TempDir()
	recs := filepath.Join(dir, "java.jsonl")
	if _, _, err := runCmd(t, dataConvertCmd, "--from", "bfcl", "--answers", bfclDir+"/possible_answer/BFCL_v4_simple_java.json",
		bfclDir+"/BFCL_v4_simple_java.json", recs); err != nil {
		t.Fatal(err)
	}
	call := func(args string) string {
		return `<tool_call>{"name": "CacheConfig.build", "arguments": ` + args + `}</tool_call>`
	}
	preds := writeFile(t, dir, "p.jsonl",
		predLine(t, "simple_java_0", call(`{"name": "Users", "maxEntries": "5000L", "loadFactor": "0.75f", "persistent": "true", "options": "new HashMap<>() {{ put(\"eviction\", \"LRU\"); put(\"shards\", 4); }}", "regions": "new ArrayList<>(Arrays.asList(\"eu\", \"us\"))", "keys": "new String[]{id}", "owner": "authService"}`))+
			predLine(t, "simple_java_0", call(`{"name": "users", "maxEntries": "5000"}`))+
			predLine(t, "simple_java_1", `<tool_call>{"name": "Session.setAttributes", "arguments": {"pairs": "new ArrayList<>(Arrays.asList(userId, 42, active, true))"}}</tool_call>`))
	stdout, _, err := runCmd(t, newRewardCmd, "--reward", "bfcl", "--format", "tool_call", "--data", recs, "--predictions", preds)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := []struct {
		id     string
		reward float64
		parts  map[string]float64
	}{
		{"simple_java_0", 1, map[string]float64{"valid": 1}},
		{"simple_java_0", 0, map[string]float64{"valid": 0, "type_error:simple": 1}},      // 5000 without L stays text
		{"simple_java_1", 0, map[string]float64{"valid": 0, "value_error:list/tuple": 1}}, // ArrayList<any> holds text only
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines:\n%s", len(lines), stdout)
	}
	for i, l := range lines {
		var got struct {
			ID     string             `json:"id"`
			Reward float64            `json:"reward"`
			Parts  map[string]float64 `json:"parts"`
		}
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatal(err)
		}
		w := want[i]
		if got.ID != w.id || got.Reward != w.reward || len(got.Parts) != len(w.parts) {
			t.Errorf("line %d: %s, want %+v", i+1, l, w)
		}
		for k, v := range w.parts {
			if got.Parts[k] != v {
				t.Errorf("line %d: parts %v, want %v", i+1, got.Parts, w.parts)
			}
		}
	}
}

func TestEvalBenchBFCL(t *testing.T) {
	dir := t.TempDir()
	tc := func(s string) string { return "<tool_call>" + s + "</tool_call>" }
	preds := writeFile(t, dir, "p.jsonl", strings.Join([]string{
		predLine(t, "parallel_multiple_0", tc(`{"name": "compute_escape", "arguments": {"mass": 6e24, "radius": 6.4e6}}`)+"\n"+tc(`{"name": "compute_orbit", "arguments": {"mass": 6e24, "radius": 7e6}}`)),
		predLine(t, "live_simple_0-0-0", tc(`{"name": "log_intents", "arguments": {"greeting_start": ["hi", "hello"]}}`)),
		predLine(t, "live_simple_1-1-0", tc(`{"name": "search_flights", "arguments": {"origin": "", "destination": "oslo"}}`)),
		predLine(t, "live_multiple_0-0-0", tc(`{"name": "transfer_to_agent", "arguments": {"statement": "refund"}}`)),
		predLine(t, "simple_python_0", tc(`{"name": "weighted_mean", "arguments": {"values": [1.0, 2.5, 4.0]}}`)),
		predLine(t, "simple_java_0", tc(`{"name": "CacheConfig.build", "arguments": {"name": "users", "maxEntries": "5000L"}}`)),
		predLine(t, "simple_java_1", "no"),
		predLine(t, "simple_javascript_0", tc(`{"name": "drawChart", "arguments": {"title": "Sales", "points": "[3, 4.5, 6]", "style": "{color: 'red'}", "seed": "7n"}}`)),
		predLine(t, "live_relevance_0-0-0", tc(`{"name": "search_flights", "arguments": {}}`)),
		predLine(t, "live_irrelevance_0-0-0", "Why did the pilot..."),
		predLine(t, "irrelevance_0", tc(`{"name": "weighted_mean", "arguments": {"values": []}}`)),
	}, ""))
	out := filepath.Join(dir, "bfcl.json")
	stdout, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", bfclDir, "--predictions", preds, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"live_simple", "50.00%", "Non-Live AST Acc", "N/A", "Irrelevance Detection"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("table lacks %q:\n%s", w, stdout)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Categories map[string]struct{ Correct, Total int }
		Summary    map[string]*float64
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// simple_java_0 misses its optional-less gold parameters; simple_java_1
	// and live_simple_0 and live_multiple_0 cannot pass; irrelevance_0 calls.
	wantCat := map[string][2]int{"parallel_multiple": {1, 1}, "live_simple": {1, 2}, "live_multiple": {0, 1}, "simple_python": {1, 1},
		"simple_java": {0, 2}, "simple_javascript": {1, 1}, "live_relevance": {1, 1}, "live_irrelevance": {1, 1}, "irrelevance": {0, 1}}
	if len(rep.Categories) != len(wantCat) {
		t.Errorf("categories %v", rep.Categories)
	}
	for c, w := range wantCat {
		if g := rep.Categories[c]; g.Correct != w[0] || g.Total != w[1] {
			t.Errorf("%s: %d/%d, want %d/%d", c, g.Correct, g.Total, w[0], w[1])
		}
	}
	near := func(k string, want float64) {
		if v := rep.Summary[k]; v == nil || math.Abs(*v-want) > 1e-12 {
			t.Errorf("summary %s = %v, want %v", k, v, want)
		}
	}
	near("non_live_simple", (1+0+1)/3.0)
	near("irrelevance", 0.5)
	near("relevance", 1)
	if rep.Summary["non_live"] != nil || rep.Summary["live"] != nil {
		t.Errorf("non_live and live need every category: %v %v", rep.Summary["non_live"], rep.Summary["live"])
	}
	if _, _, err := runCmd(t, newEvalCmd, "--bench", "bfcl", dir, "--predictions", preds); err == nil || !strings.Contains(err.Error(), "no BFCL question files") {
		t.Errorf("empty dir: %v", err)
	}
	if _, _, err := runCmd(t, newEvalCmd, "--bench", "mmlu", bfclDir); err == nil || !strings.Contains(err.Error(), "bfcl") {
		t.Errorf("unknown bench: %v", err)
	}
}
