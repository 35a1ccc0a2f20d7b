package main

import (
	"testing"

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
