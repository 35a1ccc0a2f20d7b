package kernels_test

import (
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestColumnBlock checks ColumnBlock and its backward against the loops
// they stand for, on blocks whose widths share small and large divisors
// (the q/k/v split of a GQA layer, gate/up, odd widths).
func TestColumnBlock(t *testing.T) {
	be := kernels.NewCPU()
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ N, W, off, w int }{
		{5, 12 + 4 + 4, 0, 12}, {5, 20, 12, 4}, {5, 20, 16, 4}, // q, k, v
		{3, 14, 0, 7}, {3, 14, 7, 7}, // gate, up
		{4, 9, 2, 5}, {1, 9, 8, 1}, {0, 6, 0, 6}, {2, 6, 0, 6},
	} {
		y := make([]float32, c.N*c.W)
		for i := range y {
			y[i] = r.Float32()*2 - 1
		}
		yb, out := be.Alloc(kernels.F32, len(y)), be.Alloc(kernels.F32, c.N*c.w)
		be.CopyIn(yb, y)
		if err := kernels.ColumnBlock(be, out, yb, c.N, c.W, c.off, c.w); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, c.N*c.w)
		be.CopyOut(got, out)
		dy := be.Alloc(kernels.F32, len(y))
		be.Fill(dy, 7) // overwritten, not accumulated
		if err := kernels.ColumnBlockBackward(be, dy, out, c.N, c.W, c.off, c.w); err != nil {
			t.Fatal(err)
		}
		back := make([]float32, len(y))
		be.CopyOut(back, dy)
		if err := be.Sync(); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for n := range c.N {
			for j := range c.W {
				in := j >= c.off && j < c.off+c.w
				want := float32(0)
				if in {
					want = y[n*c.W+j]
					if g := got[n*c.w+j-c.off]; g != want {
						t.Fatalf("%+v: out[%d,%d] = %v, want %v", c, n, j-c.off, g, want)
					}
				}
				if back[n*c.W+j] != want {
					t.Fatalf("%+v: dy[%d,%d] = %v, want %v", c, n, j, back[n*c.W+j], want)
				}
			}
		}
	}
	for _, c := range [][4]int{{2, 6, 4, 4}, {2, 6, -1, 2}, {2, 6, 0, 0}} {
		b := be.Alloc(kernels.F32, 12)
		if err := kernels.ColumnBlock(be, b, b, c[0], c[1], c[2], c[3]); err == nil {
			t.Errorf("block %v accepted", c)
		}
	}
}
