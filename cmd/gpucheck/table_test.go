package main

import (
	"bytes"
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
