package main

// The CUDA backend registers "cuda-emu" and "cuda-emu-bf16" (the CPU
// emulator of its kernels) in every build; the GPU build (make train-cuda,
// -tags argrl_cuda) adds "cuda", "cuda-bf16tc" and "cuda-bf16".
import (
	"fmt"
	"io"

	"github.com/argrl/argrl/kernels"
	_ "github.com/argrl/argrl/kernels/cuda"
)

// closeBackend closes a backend a command opened (after its models); a
// failure is a warning on w, since the command's work is done.
func closeBackend(be kernels.Backend, w io.Writer) {
	if be == nil {
		return
	}
	if r, ok := be.(kernels.MemReporter); ok {
		fmt.Fprintf(w, "train: %s memory pool: %s\n", be.Name(), r.MemReport())
	}
	if err := be.Close(); err != nil {
		fmt.Fprintf(w, "train: warning: %v\n", err)
	}
}
