package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every problem of a record comes in one message, and the reading goes on
// to list up to MaxBadRecords bad records.
func TestReadReportsEveryProblem(t *testing.T) {
	p := filepath.Join(t.TempDir(), "d.jsonl")
	line := `{"tools": [{"name": "f(x)"}], "messages": [{"role": "human", "content": "hi"}], "split": "dev"}`
	if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p)
	if err == nil {
		t.Fatal("a record missing id, lang and calls was accepted")
	}
	msg := err.Error()
	for _, w := range []string{p + ":1: id: missing", "; lang: missing", "; calls: missing"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	// Typed but invalid: every field's problem at once.
	line = `{"id": "", "lang": "spanish", "tools": [{"name": "f(x)"}], "messages": [{"role": "human", "content": "hi"}], "calls": [], "split": "dev"}`
	if err := os.WriteFile(p, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(p)
	if err == nil {
		t.Fatal("an invalid record was accepted")
	}
	msg = err.Error()
	for _, w := range []string{p + ":1: id: empty", "lang: must be an ISO 639-1", "tools[0].name: invalid tool name", `messages[0].role: must be system, user`, "split: must be one of"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}

	var b strings.Builder
	for i := range MaxBadRecords + 5 {
		fmt.Fprintf(&b, `{"id": "r%d", "lang": "en", "tools": [], "messages": [{"role": "user", "content": "q"}]}`+"\n", i)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(p)
	if err == nil {
		t.Fatal("records without calls were accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != MaxBadRecords+1 {
		t.Errorf("%d lines, want %d bad records and the stop line:\n%s", len(lines), MaxBadRecords, err)
	}
	for i, l := range lines[:MaxBadRecords] {
		if want := fmt.Sprintf("%s:%d: calls: missing", p, i+1); !strings.HasPrefix(l, want) {
			t.Errorf("line %d is %q, want %q", i+1, l, want)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, fmt.Sprintf("stopped at line %d after %d bad records", MaxBadRecords, MaxBadRecords)) {
		t.Errorf("last line %q", last)
	}
}
