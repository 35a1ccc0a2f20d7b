package cuda

import "github.com/argrl/argrl/kernels"

// The emulated backends are in every build: "cuda-emu" runs the CUDA
// backend (host code, pool, launch shapes, GEMM mapping, kernels) on the
// CPU emulator of its kernels, built with g++ on first use;
// "cuda-emu-bf16" is the emulated "cuda-bf16" (bf16 tensor-core GEMMs and
// bf16 activations).
func init() {
	kernels.Register("cuda-emu", func() (kernels.Backend, error) { return NewEmulated(EmuOptions{}) })
	kernels.Register("cuda-emu-bf16", func() (kernels.Backend, error) {
		return NewEmulated(EmuOptions{Options: bf16Options})
	})
}

// bf16Options is the mode of "cuda-bf16": peers' mixed precision.
var bf16Options = Options{BF16TensorCores: true, BF16Activations: true}
