//go:build argrl_cuda

package cuda

import (
	"os"

	"github.com/argrl/argrl/kernels"
)

// Available reports whether this binary was built with the CUDA backend.
const Available = true

// New opens the CUDA backend on device ordinal 0 (CUDA_VISIBLE_DEVICES
// selects the GPU).
func New(opt Options) (*Backend, error) {
	d, err := newCUDADevice(0)
	if err != nil {
		return nil, err
	}
	return newBackend(d, opt), nil
}

// Device describes the GPU ("NVIDIA H200 (sm_90, PTX sm_80)").
func (be *Backend) Device() string {
	if d, ok := be.dev.(*cuDevice); ok {
		return d.label
	}
	return be.dev.name()
}

// graphsOn is the GPU's default for Options.Graphs: on, unless
// ARGRL_CUDA_GRAPHS=0.
func graphsOn(o Options) Options {
	o.Graphs = os.Getenv("ARGRL_CUDA_GRAPHS") != "0"
	return o
}

func init() {
	kernels.Register("cuda", func() (kernels.Backend, error) { return New(graphsOn(Options{})) })
	kernels.Register("cuda-bf16tc", func() (kernels.Backend, error) { return New(graphsOn(Options{BF16TensorCores: true})) })
	kernels.Register("cuda-bf16", func() (kernels.Backend, error) { return New(graphsOn(bf16Options)) })
}
