// Package registry is a small thread-safe name → value table, for the
// plug-in points that are filled from init functions (compute backends in
// kernels, model architectures in model).
package registry

import (
	"sort"
	"sync"
)

// Registry maps names to values of type T. The zero value is not usable;
// make one with New. Methods are safe for concurrent use.
type Registry[T any] struct {
	mu sync.RWMutex
	m  map[string]T
}

// New returns an empty registry.
func New[T any]() *Registry[T] {
	return &Registry[T]{m: map[string]T{}}
}

// Register stores v under name; registering a name again replaces the
// earlier value.
func (r *Registry[T]) Register(name string, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[name] = v
}

// Lookup returns the value registered under name and whether there is one.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
