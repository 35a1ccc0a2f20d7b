package rl

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

const (
	rlFixture        = "../../testdata/models/qwen2-f32"
	rlFixtureAdapter = "../../testdata/models/qwen2-f32/adapter"
)

// The host merge gives the model that the base plus the adapter computes:
// log-probs of the merged directory (no LoRA) match the base with the
// adapter applied.
func TestMergeAdapterMatchesLoRA(t *testing.T) {
	out := t.TempDir()
	if err := MergeAdapter(rlFixture, rlFixtureAdapter, out); err != nil {
		t.Fatal(err)
	}
	be := kernels.NewCPU()
	merged, err := model.Open(out, be, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Close()
	withAdapter, err := model.Open(rlFixture, be, model.Options{Adapter: rlFixtureAdapter})
	if err != nil {
		t.Fatal(err)
	}
	defer withAdapter.Close()
	base, err := model.Open(rlFixture, be, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	seqs := [][]int32{{5, 17, 40, 99, 300, 12, 7, 64}, {3, 250, 9}}
	a, err := merged.LogProbs(seqs, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := withAdapter.LogProbs(seqs, true)
	c, _ := base.LogProbs(seqs, true)
	var maxDiff, moved float64
	for i := range seqs {
		for j := 1; j < len(seqs[i]); j++ {
			maxDiff = math.Max(maxDiff, math.Abs(float64(a[i][j]-b[i][j])))
			moved = math.Max(moved, math.Abs(float64(b[i][j]-c[i][j])))
		}
	}
	if maxDiff > 1e-4 || moved < 1e-2 {
		t.Fatalf("merged vs base+adapter: max |Δ log-prob| %g (want ≤ 1e-4); the adapter moves them by %g", maxDiff, moved)
	}
	if err := MergeAdapter(rlFixture, "testdata", filepath.Join(t.TempDir(), "x")); err == nil {
		t.Error("a directory without adapter_config.json merged")
	}
}
