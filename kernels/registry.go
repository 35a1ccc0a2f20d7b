package kernels

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Factory makes a ready-to-use Backend.
type Factory func() (Backend, error)

var registry = struct {
	sync.Mutex
	m map[string]Factory
}{m: map[string]Factory{}}

// Register makes a backend available to Open under name. Backends call it
// from init: "cpu" in this package, "cuda" from the //go:build cuda files.
// Registering a name twice keeps the later factory.
func Register(name string, f Factory) {
	registry.Lock()
	defer registry.Unlock()
	registry.m[name] = f
}

// Open returns a new backend of the named kind.
func Open(name string) (Backend, error) {
	registry.Lock()
	f, ok := registry.m[name]
	registry.Unlock()
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
func Names() []string {
	registry.Lock()
	defer registry.Unlock()
	out := make([]string, 0, len(registry.m))
	for n := range registry.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func init() {
	Register("cpu", func() (Backend, error) { return NewCPU(), nil })
}
