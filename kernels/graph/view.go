package graph

// Multi-output kernels (Attention → out+lse, RMSNorm → out+rstd, LogProbs →
// lp+lse+ent, and backward ops with several gradients) produce one packed
// node, a flat buffer holding the parts one after another with the primary
// output first. View nodes select parts; the Executor maps them onto
// Backend.View (no copy), and Do copies.
//
// Gradients: the SymDiff of a view of a packed node P returns Pad(dView), a
// P-sized node with dView at the view's offset and zeros elsewhere. The
// packed op's own SymDiff unwraps a Pad at offset 0 (primaryGrad) and feeds
// dView straight to its backward kernel, so the Pad node is left without
// consumers and the Executor never runs it (TapeMachine still does; both
// are correct, since backward kernels read only the first part of their
// gradient input).

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// view is the window [off, off+prod(shape)) of x, with the given shape.
// Gradients flow through it only when diff is set.
func view(x *gorgonia.Node, off int, shape tensor.Shape, diff bool) (*gorgonia.Node, error) {
	n := shapeSize(shape)
	total := size(x)
	if off < 0 || off+n > total {
		return nil, fmt.Errorf("graph: View [%d, %d) outside %v", off, off+n, x.Shape())
	}
	o := &op{name: "View", key: fmt.Sprintf("off=%d diff=%v", off, diff), out: shape.Clone(),
		diff: []bool{diff}, view: &viewSpec{off: off}}
	if diff {
		inShape := x.Shape()
		o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
			var d *gorgonia.Node
			var err error
			if off == 0 && n == total {
				d, err = Reshape(g, inShape...)
			} else {
				d, err = pad(g, off, inShape)
			}
			return gorgonia.Nodes{d}, err
		}
	}
	return apply(o, x)
}

// Reshape is x with another shape of the same size (a zero-copy view).
func Reshape(x *gorgonia.Node, shape ...int) (*gorgonia.Node, error) {
	s := tensor.Shape(shape)
	if shapeSize(s) != size(x) {
		return nil, fmt.Errorf("graph: Reshape %v to %v changes the size", x.Shape(), s)
	}
	if s.Eq(x.Shape()) {
		return x, nil
	}
	return view(x, 0, s, true)
}

// pad is a node shaped out with x at element offset off and zeros elsewhere.
func pad(x *gorgonia.Node, off int, out tensor.Shape) (*gorgonia.Node, error) {
	n, total := size(x), shapeSize(out)
	if off < 0 || off+n > total {
		return nil, fmt.Errorf("graph: Pad: [%d, %d) outside %v", off, off+n, out)
	}
	o := &op{name: "Pad", key: fmt.Sprintf("off=%d", off), out: out.Clone(), diff: []bool{true}, padOff: off}
	o.run = func(be kernels.Backend, dst kernels.Buffer, in []kernels.Buffer) error {
		if off > 0 {
			be.Fill(be.View(dst, 0, off), 0)
		}
		if off+n < total {
			be.Fill(be.View(dst, off+n, total-off-n), 0)
		}
		be.Copy(viewOf(be, dst, off, n), in[0])
		return nil
	}
	xShape := x.Shape()
	o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		d, err := view(g, off, xShape, true)
		return gorgonia.Nodes{d}, err
	}
	return apply(o, x)
}

// primaryGrad returns the gradient of a packed node's first part: the input
// of a Pad at offset 0 when g is one, else g itself (whose first elements
// are that gradient).
func primaryGrad(g *gorgonia.Node) *gorgonia.Node {
	if o, ok := ourOp(g); ok && o.name == "Pad" && o.padOff == 0 {
		if c := children(g); len(c) == 1 {
			return c[0]
		}
	}
	return g
}

// parts splits a packed node into views of the given shapes, in order.
func parts(p *gorgonia.Node, diff bool, shapes ...tensor.Shape) (gorgonia.Nodes, error) {
	out := make(gorgonia.Nodes, len(shapes))
	off := 0
	for i, s := range shapes {
		v, err := view(p, off, s, diff)
		if err != nil {
			return nil, err
		}
		out[i] = v
		off += shapeSize(s)
	}
	return out, nil
}
