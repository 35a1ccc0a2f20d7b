package kernels

import (
	"fmt"
	"strings"

	"github.com/argrl/argrl/internal/registry"
)

// Factory makes a ready-to-use Backend.
type Factory func() (Backend, error)

var factories = registry.New[Factory]()

// Register makes a backend available to Open under name. Backends call it
// from init: "cpu" in this package, "cuda" from kernels/cuda (//go:build
// argrl_cuda). "auto" is not a registrable name (see Auto).
// Registering a name twice keeps the later factory.
func Register(name string, f Factory) { factories.Register(name, f) }

// Auto is the backend name that picks the best one this binary and
// machine have: AutoCUDA when it is registered (the binary was built with
// the CUDA backend) and opens (a GPU answers), else "cpu". It never picks
// an emulator. "cuda" named explicitly stays the f32 path.
const Auto = "auto"

// AutoCUDA is the mode Auto picks on a GPU: "cuda-bf16" (bf16 tensor-core
// GEMMs and bf16 activations, f32 master weights and optimizer; about 3x
// the f32 path's GEMM rate on paper), the fastest CUDA mode, which passes
// the same conformance suite at bf16 tolerances (docs/gpu.md).
const AutoCUDA = "cuda-bf16"

// Open returns a new backend of the named kind, or for Auto the one it
// picks (see Choose, which also says which).
func Open(name string) (Backend, error) {
	b, _, err := Choose(name)
	return b, err
}

// Choose is Open that also returns a line for the user saying which
// backend Auto picked and why ("cpu (this binary has no CUDA backend)");
// for a named backend the line is its name.
func Choose(name string) (Backend, string, error) {
	if name == Auto {
		if _, ok := factories.Lookup(AutoCUDA); !ok {
			b, err := open("cpu")
			return b, "cpu (auto: this binary has no CUDA backend; make train-cuda builds one)", err
		}
		b, err := open(AutoCUDA)
		if err == nil {
			return b, AutoCUDA + " (auto: the GPU's fastest mode; model.backend: cuda for f32" + device(b) + ")", nil
		}
		c, cerr := open("cpu")
		return c, fmt.Sprintf("cpu (auto: no usable GPU, falling back to the CPU: %v)", err), cerr
	}
	b, err := open(name)
	if err != nil {
		return nil, "", err
	}
	return b, name + device(b), nil
}

// device is ": <device>" for a backend that describes its device.
func device(b Backend) string {
	if d, ok := b.(interface{ Device() string }); ok && d.Device() != "" {
		return ": " + d.Device()
	}
	return ""
}

func open(name string) (Backend, error) {
	f, ok := factories.Lookup(name)
	if !ok {
		if strings.HasPrefix(name, "cuda") {
			return nil, fmt.Errorf("kernels: backend %q is not in this binary, which was built without the CUDA backend (make train-cuda builds it); %q picks cuda-bf16 when it is there and a GPU answers, and cpu otherwise (have %s)", name, Auto, strings.Join(Names(), ", "))
		}
		return nil, fmt.Errorf("kernels: unknown backend %q (have %s, or %s)", name, strings.Join(Names(), ", "), Auto)
	}
	b, err := f()
	if err != nil {
		return nil, fmt.Errorf("kernels: open backend %q: %w", name, err)
	}
	return b, nil
}

// Names lists the registered backends, sorted.
func Names() []string { return factories.Names() }

func init() {
	Register("cpu", func() (Backend, error) { return NewCPU(), nil })
}
