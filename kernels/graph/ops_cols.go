package graph

// SplitCols: the parts of a fused projection's output. One GEMM computes
// y = x·[W₁; W₂; …]ᵀ [N, W] with part i in columns [offᵢ, offᵢ+wᵢ) of
// every row; each part becomes a dense [N, wᵢ] node (kernels.ColumnBlock,
// an exact copy) whose gradient is that block of dy with zeros elsewhere,
// so the parts' gradients add up to dy and the GEMM's backward is one
// GEMM over the concatenated weights.

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// SplitCols cuts y [N, W] into column blocks of the given widths, which
// must sum to W: part i is [N, widths[i]].
func SplitCols(y *gorgonia.Node, widths ...int) ([]*gorgonia.Node, error) {
	ys := y.Shape()
	if len(ys) != 2 {
		return nil, fmt.Errorf("graph: SplitCols: y %v: want [N, W]", ys)
	}
	N, W := ys[0], ys[1]
	sum := 0
	for _, w := range widths {
		if w <= 0 {
			return nil, fmt.Errorf("graph: SplitCols: width %d in %v", w, widths)
		}
		sum += w
	}
	if sum != W {
		return nil, fmt.Errorf("graph: SplitCols: widths %v sum to %d, y is %v", widths, sum, ys)
	}
	out := make([]*gorgonia.Node, len(widths))
	next := 0
	for i, w := range widths {
		var err error
		if out[i], err = colsOf(y, N, W, next, w); err != nil {
			return nil, err
		}
		next += w
	}
	return out, nil
}

// colsOf is the node of columns [off, off+w) of y [N, W] as a dense
// [N, w] (kernels.ColumnBlock), whose gradient is that block of dy with
// zeros elsewhere.
func colsOf(y *gorgonia.Node, N, W, off, w int) (*gorgonia.Node, error) {
	ys := tensor.Shape{N, W}
	o := &op{name: "Cols", key: fmt.Sprintf("N=%d W=%d off=%d w=%d", N, W, off, w), out: tensor.Shape{N, w}, diff: []bool{true}}
	o.run = func(be kernels.Backend, dst kernels.Buffer, in []kernels.Buffer) error {
		return kernels.ColumnBlock(be, dst, in[0], N, W, off, w)
	}
	o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "ColsBackward", key: o.key, out: ys}
		bo.run = func(be kernels.Backend, dst kernels.Buffer, in []kernels.Buffer) error {
			return kernels.ColumnBlockBackward(be, dst, in[0], N, W, off, w)
		}
		d, err := apply(bo, g)
		return gorgonia.Nodes{d}, err
	}
	return apply(o, y)
}
