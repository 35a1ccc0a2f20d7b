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
