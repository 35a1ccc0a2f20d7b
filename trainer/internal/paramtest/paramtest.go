// Package paramtest builds model params on a backend for the trainer's
// tests (optimizer, checkpoint and scaffold tests), and compares files.
package paramtest

import (
	"bytes"
	"os"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

// New allocates a param on be with value w and gradient g.
func New(be kernels.Backend, name string, shape []int, w, g []float32) *model.Param {
	p := &model.Param{Name: name, Shape: shape, W: be.Alloc(kernels.F32, len(w)), G: be.Alloc(kernels.F32, len(g))}
	be.CopyIn(p.W, w)
	be.CopyIn(p.G, g)
	return p
}

// Read copies a buffer to the host.
func Read(be kernels.Backend, b kernels.Buffer) []float32 {
	out := make([]float32, b.Len())
	be.CopyOut(out, b)
	return out
}

// SameFile reports whether files a and b hold the same bytes; a file that
// cannot be read fails the test.
func SameFile(t testing.TB, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
