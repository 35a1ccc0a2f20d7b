package model

import (
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestGraphCacheDefaultBudget: with the default Options the cached
// executors of the demo's base model (configs/demo/base-model, the model of
// make reproduce-001's GRPO) plan at most DefaultGraphBytes beyond the one
// in use, on a sweep of the training shapes an RL run meets (8 rows, the
// longest rollout 160 to 640 tokens). Under the former 4 GiB default every
// shape stayed cached (682,426,384 planned bytes here; up to 4 GiB, and
// twice that in RSS, in the real run).
func TestGraphCacheDefaultBudget(t *testing.T) {
	m, err := Open("../configs/demo/base-model", kernels.NewCPU(), Options{MaxLen: 640, LoRA: &LoRAOptions{R: 16, Alpha: 32, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var largest, sum int64
	for _, T := range []int{160, 320, 480, 640} {
		mg, err := m.graphShape(8, T)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.executor(mg, true); err != nil {
			t.Fatal(err)
		}
		largest = max(largest, mg.planned())
		sum += mg.planned()
		var total int64
		for _, g := range m.graphs.m {
			total += g.planned()
		}
		if m.graphs.m[[2]int{8, T}] != mg {
			t.Fatalf("T %d: the graph in use was evicted", T)
		}
		if total > max(DefaultGraphBytes, mg.planned()) {
			t.Fatalf("T %d: %d graphs cached plan %d bytes, over the default budget of %d", T, len(m.graphs.m), total, DefaultGraphBytes)
		}
	}
	if sum <= DefaultGraphBytes || largest > DefaultGraphBytes {
		t.Fatalf("the sweep plans %d bytes (largest %d): it must exceed the budget %d for the test to test it", sum, largest, DefaultGraphBytes)
	}
	t.Logf("4 training graphs planned %d MB in all, largest %d MB; cached at the end: %d", sum>>20, largest>>20, len(m.graphs.m))
}
