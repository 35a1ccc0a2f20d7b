package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestColumnBlockIDsOnce: on the emulator, kernels.ColumnBlock and its
// backward (the backend's ColumnBlocker methods) give the bits of the
// Embedding form they replace (y's values, zeros outside the block, F32
// and BF16 y), and each shape's row ids are uploaded once: a second call
// of a shape adds no upload, a new shape one.
func TestColumnBlockIDsOnce(t *testing.T) {
	be := newEmu(t, EmuOptions{})
	r := rand.New(rand.NewPCG(3, 4))
	cases := []struct{ N, W, off, w int }{
		{5, 20, 0, 12}, {5, 20, 12, 4}, {5, 20, 16, 4}, // q, k, v
		{3, 14, 0, 7}, {3, 14, 7, 7}, // gate, up
		{4, 9, 2, 5}, {1, 9, 8, 1},
	}
	for round := range 2 {
		for i, c := range cases {
			for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
				y := make([]float32, c.N*c.W)
				for i := range y {
					y[i] = r.Float32()*2 - 1
				}
				yb := be.Alloc(dt, len(y))
				be.CopyIn(yb, y)
				out, want := be.Alloc(kernels.F32, c.N*c.w), be.Alloc(kernels.F32, c.N*c.w)
				if err := kernels.ColumnBlock(be, out, yb, c.N, c.W, c.off, c.w); err != nil {
					t.Fatal(err)
				}
				g, ids := kernels.ColumnRows(c.N, c.W, c.off, c.w)
				be.Embedding(want, yb, ids, g)
				dy, dwant := be.Alloc(kernels.F32, len(y)), be.Alloc(kernels.F32, len(y))
				be.Fill(dy, 7) // overwritten
				if err := kernels.ColumnBlockBackward(be, dy, out, c.N, c.W, c.off, c.w); err != nil {
					t.Fatal(err)
				}
				be.EmbeddingBackward(dwant, out, ids, g)
				for _, pair := range [][2]kernels.Buffer{{out, want}, {dy, dwant}} {
					a, b := make([]float32, pair[0].Len()), make([]float32, pair[1].Len())
					be.CopyOut(a, pair[0])
					be.CopyOut(b, pair[1])
					if err := be.Sync(); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(a, b) {
						t.Fatalf("%+v %v: ColumnBlocker result differs from the Embedding form", c, dt)
					}
				}
				for _, b := range []kernels.Buffer{yb, out, want, dy, dwant} {
					be.Free(b)
				}
			}
			if want := i + 1; round == 0 && len(be.cols) != want || round == 1 && len(be.cols) != len(cases) {
				t.Fatalf("round %d, case %d: %d shapes' ids on the device", round, i, len(be.cols))
			}
		}
	}
}
