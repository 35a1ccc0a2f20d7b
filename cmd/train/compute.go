package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// addComputeFlag registers --compute, the matmul arithmetic of the
// commands that run a model outside a training config (generate, eval,
// score, serve): model.Options.Compute.
func addComputeFlag(c *cobra.Command, dst *string) {
	c.Flags().StringVar(dst, "compute", "auto", "matmul arithmetic: auto (bf16 where the backend has bf16 products: a CPU with AVX512-BF16, the CUDA tensor-core modes; f32 elsewhere), bf16 or f32 (f32: float32 throughout)")
}

// checkCompute refuses a --compute value other than auto, bf16 or f32
// ("" is the model's default, f32, for callers without the flag).
func checkCompute(v string) error {
	switch v {
	case "", "auto", "bf16", "f32":
		return nil
	}
	return fmt.Errorf("--compute %q: want auto, bf16 or f32", v)
}
