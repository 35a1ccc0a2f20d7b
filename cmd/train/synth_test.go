package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/synth"
)

func TestParseSizes(t *testing.T) {
	cfg := synth.DefaultConfig()
	if err := parseSizes("train=10, test=3,base=0", &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Train != 10 || cfg.Test != 3 || cfg.Base != 0 || cfg.Val != synth.DefaultConfig().Val {
		t.Errorf("sizes not applied: %+v", cfg)
	}
	for _, bad := range []string{"train", "train=-1", "train=x", "dev=3"} {
		if err := parseSizes(bad, &cfg); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
}

// TestDataSynthMultiTurn: --multi-turn writes the dialogue files, whose
// records read back with their turns.
func TestDataSynthMultiTurn(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := runCmd(t, dataSynthCmd, "--multi-turn", "--seed", "4", "--sizes", "train=6,val=2,test=1", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "multi-turn dialogues") || !strings.Contains(stderr, "train.jsonl") {
		t.Errorf("stderr %q", stderr)
	}
	recs, err := data.ReadFile(filepath.Join(dir, "test.jsonl"))
	if err != nil || len(recs) != 4 || len(recs[0].Turns) < 3 || recs[0].Env == nil {
		t.Fatalf("test.jsonl: %d records, %v", len(recs), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "base.jsonl")); err == nil {
		t.Error("--multi-turn wrote base.jsonl")
	}
}

// TestDataSynthStyle: --style writes train, val and test of the style's
// corpus and style.json; an unknown style or --style with --multi-turn
// is refused.
func TestDataSynthStyle(t *testing.T) {
	dir := t.TempDir()
	_, stderr, err := runCmd(t, dataSynthCmd, "--style", "toolace", "--seed", "4", "--sizes", "train=6,val=2,test=3", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "style toolace") {
		t.Errorf("stderr %q", stderr)
	}
	for name, n := range map[string]int{"train.jsonl": 6, "val.jsonl": 2, "test.jsonl": 3} {
		recs, err := data.ReadFile(filepath.Join(dir, name))
		if err != nil || len(recs) != n {
			t.Errorf("%s: %d records, %v", name, len(recs), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "style.json")); err != nil {
		t.Error(err)
	}
	if _, _, err := runCmd(t, dataSynthCmd, "--style", "glaive", "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "unknown style") {
		t.Errorf("unknown style: %v", err)
	}
	if _, _, err := runCmd(t, dataSynthCmd, "--style", "xlam", "--multi-turn", "--out", t.TempDir()); err == nil {
		t.Error("--style with --multi-turn accepted")
	}
}
