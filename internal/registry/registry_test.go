package registry

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[int]()
	if v, ok := r.Lookup("a"); ok || v != 0 {
		t.Fatalf("Lookup on an empty registry = %v, %v", v, ok)
	}
	if n := r.Names(); len(n) != 0 {
		t.Fatalf("Names of an empty registry = %v", n)
	}
	r.Register("b", 2)
	r.Register("a", 1)
	r.Register("c", 3)
	r.Register("b", 20) // replaces
	for name, want := range map[string]int{"a": 1, "b": 20, "c": 3} {
		if v, ok := r.Lookup(name); !ok || v != want {
			t.Errorf("Lookup(%q) = %v, %v; want %v, true", name, v, ok, want)
		}
	}
	if _, ok := r.Lookup("d"); ok {
		t.Errorf("Lookup of an unregistered name succeeded")
	}
	if got := r.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Names = %v, want [a b c]", got)
	}
	// Names returns a copy.
	r.Names()[0] = "z"
	if got := r.Names(); got[0] != "a" {
		t.Errorf("Names shares its slice: %v", got)
	}
}

// TestConcurrent registers and looks up from many goroutines (run with
// -race to check the locking).
func TestConcurrent(t *testing.T) {
	r := New[string]()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				name := fmt.Sprintf("k%d-%d", g, i)
				r.Register(name, name)
				if v, ok := r.Lookup(name); !ok || v != name {
					t.Errorf("Lookup(%q) = %q, %v", name, v, ok)
					return
				}
				_ = r.Names()
			}
		}(g)
	}
	wg.Wait()
	if n := len(r.Names()); n != 800 {
		t.Errorf("%d names, want 800", n)
	}
}
