package main

import (
	"path/filepath"
	"testing"
)

// TestRatioExactOnCUDAEmu: on the CUDA kernels (the emulator) the sampler
// and the training forward read the same K/V through the same summation
// order, so the first mini-batch's ratio is exactly 1 at every step, as on
// the CPU (docs/design.md "ρ ≡ 1"): in float32 (cuda-emu) and with bf16
// tensor cores, bf16 activations, the tensor-core attention and the bf16
// paged KV cache (cuda-emu-bf16), with f32 products elsewhere and with
// bf16 products everywhere (model.compute bf16: the LoRA branches on the
// tensor cores too). GRPO with the vowel reward, so the adapters move
// between steps: one sequence per row (data.packing: false), then packed
// rows (the default), where the CUDA attention (f32 and tensor-core)
// restarts its key tiles at each sequence's KStart, as the CPU's does, so
// a packed sequence's log-probs have the bits of the same sequence decoded
// alone.
func TestRatioExactOnCUDAEmu(t *testing.T) {
	for _, c := range []struct{ be, compute string }{{"cuda-emu", "f32"}, {"cuda-emu-bf16", "f32"}, {"cuda-emu-bf16", "bf16"}} {
		be, name := c.be, c.be+"/compute-"+c.compute
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := filepath.Join(t.TempDir(), be)
			cfg := tinyRecipeConfig(t, "grpo", run, be, 3)
			cfg.Data.Packing = false
			// bf16 products: the projections, the LM head and the LoRA
			// branches (on the tensor cores, adapters rounded to bf16) in
			// the sampler and in the training forward alike
			cfg.Model.Compute = c.compute
			runRecipe(t, "grpo", cfg)
			steps := trainSteps(t, run)
			if len(steps) != 3 {
				t.Fatalf("%d train lines, want 3", len(steps))
			}
			for i, m := range steps {
				d, ok := m["ratio_dev_first"]
				t.Logf("step %d: ratio_dev_first %v, grad_norm %v", i+1, d, m["grad_norm"])
				if !ok || d != 0 {
					t.Errorf("step %d: ratio_dev_first %v, want exactly 0", i+1, d)
				}
			}
			if steps[0]["grad_norm"] == 0 {
				t.Error("step 1 has no gradient: the adapters would not move")
			}
			if c.compute != "f32" {
				return // packed rows: the f32 runs cover them
			}
			packed := filepath.Join(t.TempDir(), be+"-packed")
			runRecipe(t, "grpo", tinyRecipeConfig(t, "grpo", packed, be, 2))
			psteps := trainSteps(t, packed)
			if len(psteps) != 2 {
				t.Fatalf("packed: %d train lines, want 2", len(psteps))
			}
			for i, m := range psteps {
				d, ok := m["ratio_dev_first"]
				t.Logf("packed, step %d: ratio_dev_first %v", i+1, d)
				if !ok || d != 0 {
					t.Errorf("packed, step %d: ratio_dev_first %v, want exactly 0", i+1, d)
				}
			}
		})
	}
}
