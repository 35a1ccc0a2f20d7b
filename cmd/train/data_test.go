package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
)

// `train data --help` and `train --help` name every data tool.
func TestDataHelpNamesEveryTool(t *testing.T) {
	for _, args := range [][]string{{"data", "--help"}, {"--help"}} {
		stdout, stderr, code := runTrain(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		first := ""
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "dataset tools") || strings.HasPrefix(strings.TrimSpace(l), "data ") {
				first = l
				break
			}
		}
		for _, w := range []string{"convert", "split", "synth", "bpe"} {
			if !strings.Contains(first, w) {
				t.Errorf("%v: the data line %q does not name %s", args, first, w)
			}
		}
	}
}

// data convert --from openai through the CLI: the records written load
// back; empty input exits non-zero.
func TestDataConvertOpenAI(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ft.jsonl")
	body := `{"messages": [{"role": "user", "content": "Weather in Oslo?"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}]}], "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]}` + "\n"
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	_, stderr, code := runTrain(t, "data", "convert", "--from", "openai", in, out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "openai: 1 items → 1 records") {
		t.Errorf("stderr: %s", stderr)
	}
	recs, err := data.ReadFile(out)
	if err != nil || len(recs) != 1 || recs[0].Calls[0].Arguments["city"] != "Oslo" {
		t.Fatalf("written records: %+v, %v", recs, err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runTrain(t, "data", "convert", "--from", "sharegpt", empty, filepath.Join(dir, "e.jsonl"))
	if code == 0 || !strings.Contains(stderr, "empty.jsonl: no sharegpt items: the file is empty") {
		t.Errorf("empty input: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "e.jsonl")); err == nil {
		t.Error("empty input wrote an output file")
	}
}
