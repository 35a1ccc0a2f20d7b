package kernels

import (
	"fmt"
	"sync"
)

// Column blocks of a row-major matrix, for the fused projections: a layer's
// q, k and v (or gate and up) come out of one GEMM as y [N, W] with each
// part in its own columns of every row, and the ops that read them take
// dense [N, w] matrices. The block is moved by Embedding (a row gather)
// over y seen as N·W/g rows of g = gcd(W, off, w) columns, so every backend
// does it with the kernels it already has and the copy is exact; its
// backward is EmbeddingBackward over the same rows (zeros outside the
// block). Bytes: 4·N·w read and 4·N·w written (plus 4·N·W zeroed in the
// backward); no FLOPs. A backend that implements ColumnBlocker moves the
// block itself (the CUDA backend: the same kernels, with each shape's row
// ids uploaded once and kept on the device).

// ColumnBlocker is implemented by backends that move column blocks
// themselves; ColumnBlock and ColumnBlockBackward then call them (after
// their own checks) with the same contract.
type ColumnBlocker interface {
	ColumnBlock(out, y Buffer, N, W, off, w int)
	ColumnBlockBackward(dy, dout Buffer, N, W, off, w int)
}

// colCache holds ColumnRows' results by (N, W, off, w).
var colCache sync.Map

// ColumnRows is the row width g and the row ids of columns [off, off+w)
// of y [N, W] seen as [N·W/g, g] (see ColumnBlock), computed once per
// shape: the same slice is returned for the same arguments and must not
// be modified.
func ColumnRows(N, W, off, w int) (int, []int32) {
	type rows struct {
		g   int
		ids []int32
	}
	key := [4]int{N, W, off, w}
	if r, ok := colCache.Load(key); ok {
		return r.(rows).g, r.(rows).ids
	}
	g, ids := colRows(N, W, off, w)
	colCache.Store(key, rows{g, ids})
	return g, ids
}

// colRows returns the row width g and the ids of the rows of y [N, W], seen
// as [N·W/g, g], that make up columns [off, off+w) in order.
func colRows(N, W, off, w int) (int, []int32) {
	g := gcd(gcd(W, off), w)
	if g == 0 || N <= 0 {
		return max(g, 1), nil
	}
	per, first, cnt := W/g, off/g, w/g
	ids := make([]int32, 0, N*cnt)
	for n := range N {
		for j := range cnt {
			ids = append(ids, int32(n*per+first+j))
		}
	}
	return g, ids
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// checkColumnBlock refuses a block outside rows of W columns.
func checkColumnBlock(N, W, off, w int) error {
	if N < 0 || w <= 0 || off < 0 || off+w > W {
		return fmt.Errorf("column block [%d, %d) of %d rows of %d columns: want 0 ≤ off < off+w ≤ W, N ≥ 0", off, off+w, N, W)
	}
	return nil
}

// ColumnBlock writes out [N, w] = columns [off, off+w) of y [N, W]. It
// refuses a block outside the rows before calling be (buffer errors are
// recorded by be as for any op).
func ColumnBlock(be Backend, out, y Buffer, N, W, off, w int) error {
	if err := checkColumnBlock(N, W, off, w); err != nil {
		return fmt.Errorf("ColumnBlock: %w", err)
	}
	if cb, ok := be.(ColumnBlocker); ok {
		cb.ColumnBlock(out, y, N, W, off, w)
		return nil
	}
	g, ids := ColumnRows(N, W, off, w)
	if len(ids) == 0 {
		return nil
	}
	be.Embedding(out, be.View(y, 0, N*W), ids, g)
	return nil
}

// ColumnBlockBackward writes dy [N, W] = dout [N, w] in columns [off,
// off+w) and 0 in the others: the gradient of ColumnBlock.
func ColumnBlockBackward(be Backend, dy, dout Buffer, N, W, off, w int) error {
	if err := checkColumnBlock(N, W, off, w); err != nil {
		return fmt.Errorf("ColumnBlockBackward: %w", err)
	}
	if cb, ok := be.(ColumnBlocker); ok {
		cb.ColumnBlockBackward(dy, dout, N, W, off, w)
		return nil
	}
	g, ids := ColumnRows(N, W, off, w)
	be.EmbeddingBackward(be.View(dy, 0, N*W), dout, ids, g)
	return nil
}
