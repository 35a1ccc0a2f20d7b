package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `train eval` refuses bad inputs with a clear error before any work: the
// model directory given has no config.json, so an error about anything else
// shows the check came first.
func TestEvalRefusesBadInputsBeforeWork(t *testing.T) {
	dir := t.TempDir()
	dataPath := writeFile(t, dir, "data.jsonl", cliData)
	empty := writeFile(t, dir, "empty.jsonl", "\n\n")
	noModel := t.TempDir()
	notDir := writeFile(t, dir, "file", "x")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"empty data file", []string{"--data", empty, "--model", noModel, "--out", filepath.Join(dir, "m.json")},
			[]string{empty, "no records"}},
		{"--out in a missing directory", []string{"--data", dataPath, "--model", noModel, "--out", filepath.Join(dir, "NODIR", "m.json")},
			[]string{"--out", filepath.Join(dir, "NODIR"), "does not exist"}},
		{"--out under a file", []string{"--data", dataPath, "--model", noModel, "--out", filepath.Join(notDir, "m.json")},
			[]string{"--out", notDir, "not a directory"}},
		{"--out is a directory", []string{"--data", dataPath, "--model", noModel, "--out", dir},
			[]string{"--out", "is a directory"}},
		{"--bench --out in a missing directory", []string{"--bench", "bfcl", bfclDir, "--model", noModel, "--out", filepath.Join(dir, "NODIR", "m.json")},
			[]string{"--out", "does not exist"}},
	}
	for _, c := range cases {
		stdout, stderr, err := runCmd(t, newEvalCmd, c.args...)
		if !errHas(t, c.name, err, c.want...) {
			continue
		}
		if strings.Contains(err.Error(), "config.json") || strings.Contains(err.Error(), ".tmp-") || strings.Contains(err.Error(), "probe") || stdout != "" || stderr != "" {
			t.Errorf("%s: worked before refusing, or named a temporary file: err %q, stdout %q, stderr %q", c.name, err, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m.json")); !os.IsNotExist(err) {
		t.Errorf("an empty data file still wrote --out: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("the --out checks left files behind: %v", ents)
	}
}

// A failed --out write names the file asked for, not the temporary file
// it goes through.
func TestWriteReportNamesTheTarget(t *testing.T) {
	target := filepath.Join(t.TempDir(), "NODIR", "m.json")
	err := writeReport(target, map[string]int{"n": 1})
	if err == nil || !strings.Contains(err.Error(), target) || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("err %v, want one naming %s and no temporary file", err, target)
	}
}

// errHas reports an error of case name unless err contains every want; it
// returns whether err is non-nil.
func errHas(t *testing.T, name string, err error, want ...string) bool {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return false
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q lacks %q", name, err, w)
		}
	}
	return true
}
