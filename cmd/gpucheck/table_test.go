package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A FAIL row, or a result file that is missing, fails the table; the
// script's own rows round-trip through `gpucheck row`.
func TestTable(t *testing.T) {
	dir := t.TempDir()
	ok, bad := filepath.Join(dir, "1.json"), filepath.Join(dir, "2.json")
	if err := run([]string{"row", "-out", ok, "-check", "a", "-status", "ok", "-value", "1 s"}); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"table", ok}); err != nil {
		t.Errorf("an ok row failed the table: %v", err)
	}
	if err := run([]string{"row", "-out", bad, "-check", "b", "-detail", "timed out after 3s"}); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"table", ok, bad}); err == nil {
		t.Error("a FAIL row passed the table")
	}
	if err := run([]string{"table", ok, filepath.Join(dir, "missing.json")}); err == nil {
		t.Error("a missing result passed the table")
	}
	var b bytes.Buffer
	if n := printTable(&b, []Row{{Check: "x", Value: "1", Status: "FAIL", Detail: "why"}}); n != 1 || !strings.Contains(b.String(), "why") {
		t.Errorf("printTable: %d failures, %q", n, b.String())
	}
	if err := run([]string{"nope"}); err == nil {
		t.Error("an unknown subcommand was accepted")
	}
}

// The predicted column: filled from a `train plan --json` file by key,
// "—" without one; -json writes every row; "not run" fails the table.
func TestTablePredicted(t *testing.T) {
	dir := t.TempDir()
	rows, plan, all := filepath.Join(dir, "1.json"), filepath.Join(dir, "plan.json"), filepath.Join(dir, "all.json")
	if err := writeRows(rows, Row{Check: "decode batch 64", Key: "decode_b64_tok_s", Value: "1000 tokens/s", Status: "ok"},
		Row{Check: "load", Key: "load_s", Value: "3 s", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plan, []byte(`{"gpu": "h200", "predicted": {"decode_b64_tok_s": 1234.5, "load_s": "2.1 s"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"table", "-json", all, "-plan", plan, rows}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(all)
	if err != nil {
		t.Fatal(err)
	}
	var got []Row
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 2 || got[0].Predicted != "1234" || got[1].Predicted != "2.1 s" {
		t.Errorf("predicted: %+v %v", got, err)
	}
	var w bytes.Buffer
	printTable(&w, []Row{{Check: "x", Value: "1", Status: "ok"}})
	if !strings.Contains(w.String(), "predicted") || !strings.Contains(w.String(), "—") {
		t.Errorf("no predicted column:\n%s", w.String())
	}
	if n := printTable(&w, []Row{{Check: "x", Status: "not run"}}); n != 1 {
		t.Errorf("a \"not run\" row counted %d failures", n)
	}
}
