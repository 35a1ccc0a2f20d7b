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
// from init: "cpu" in this package, "cuda" from kernels/cuda (//go:build argrl_cuda).
// Registering a name twice keeps the later factory.
func Register(name string, f Factory) { factories.Register(name, f) }

// Open returns a new backend of the named kind.
func Open(name string) (Backend, error) {
	f, ok := factories.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("kernels: unknown backend %q (have %s)", name, strings.Join(Names(), ", "))
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
