package cuda

import "github.com/argrl/argrl/kernels"

// The emulated backends are in every build: "cuda-emu" runs the CUDA
// backend (host code, pool, launch shapes, GEMM mapping, kernels) on the
// CPU emulator of its kernels, built with g++ on first use.
func init() {
	kernels.Register("cuda-emu", func() (kernels.Backend, error) { return NewEmulated(EmuOptions{}) })
}
