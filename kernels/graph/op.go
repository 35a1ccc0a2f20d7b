package graph

// The one Gorgonia op type of this package. Every op (forward, backward,
// view) is an *op whose run closure calls the Backend, so the Executor and
// Gorgonia's TapeMachine (through Do) execute the same kernel code.

import (
	"fmt"
	"hash"
	"hash/fnv"
	"sync"

	"github.com/chewxy/hm"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// runFunc computes an op on a backend: out is sized like the node, in holds
// one buffer per child, sized like that child.
type runFunc func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error

// gradFunc is an op's SymDiff: one gradient node per child (nil where the
// op is not differentiable with respect to that child).
type gradFunc func(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error)

// op implements gorgonia.Op and gorgonia.SDOp.
type op struct {
	name   string       // kind, e.g. "RMSNorm"
	key    string       // every parameter, so distinct ops never share a hash
	inT    []hm.Type    // children's types
	out    tensor.Shape // output shape (ScalarShape for a scalar)
	diff   []bool       // DiffWRT
	run    runFunc      // nil for views
	grad   gradFunc     // nil: not differentiable (SymDiff errors)
	view   *viewSpec    // non-nil: zero-copy window of child 0
	padOff int          // Pad: offset of its input in the output
	// scratch is the float32 work space run needs (0: none), passed as
	// one more buffer after the children's: the Executor's one scratch
	// buffer, sized for the largest.
	scratch int
}

// viewSpec is a window [off, off+size) of child 0.
type viewSpec struct{ off int }

var (
	_ gorgonia.Op   = (*op)(nil)
	_ gorgonia.SDOp = (*op)(nil)
)

// apply builds a node of kind name with parameters key over children.
func apply(o *op, children ...*gorgonia.Node) (*gorgonia.Node, error) {
	o.inT = make([]hm.Type, len(children))
	for i, c := range children {
		if c == nil {
			return nil, fmt.Errorf("graph: %s: input %d is nil", o.name, i)
		}
		if c.Dtype() != tensor.Float32 {
			return nil, fmt.Errorf("graph: %s: input %d (%s) is %v, want float32", o.name, i, c.Name(), c.Dtype())
		}
		o.inT[i] = c.Type()
	}
	if o.diff == nil {
		o.diff = make([]bool, len(children))
	}
	n, err := gorgonia.ApplyOp(o, children...)
	if err != nil {
		return nil, fmt.Errorf("graph: %s: %w", o.name, err)
	}
	return n, nil
}

func (o *op) Arity() int { return len(o.inT) }

func (o *op) Type() hm.Type {
	ts := make([]hm.Type, 0, len(o.inT)+1)
	ts = append(ts, o.inT...)
	if o.out.IsScalar() {
		ts = append(ts, gorgonia.Float32)
	} else {
		ts = append(ts, gorgonia.TensorType{Dims: len(o.out), Of: gorgonia.Float32})
	}
	return hm.NewFnType(ts...)
}

func (o *op) InferShape(...gorgonia.DimSizer) (tensor.Shape, error) { return o.out.Clone(), nil }
func (o *op) ReturnsPtr() bool                                      { return false }
func (o *op) CallsExtern() bool                                     { return false }
func (o *op) OverwritesInput() int                                  { return -1 }
func (o *op) String() string                                        { return o.name + "{" + o.key + "}" }

// WriteHash covers name, parameters and output shape: Gorgonia merges nodes
// with equal hashes and equal children, which is right only for ops that
// compute the same thing.
func (o *op) WriteHash(h hash.Hash) { fmt.Fprintf(h, "argrl/%s{%s}%v", o.name, o.key, o.out) }

func (o *op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

func (o *op) DiffWRT(n int) []bool {
	d := make([]bool, n)
	copy(d, o.diff)
	return d
}

func (o *op) SymDiff(in gorgonia.Nodes, out, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	if o.grad == nil {
		return nil, fmt.Errorf("graph: %s is not differentiable (second-order gradients are not supported)", o.name)
	}
	if len(in) != len(o.inT) {
		return nil, fmt.Errorf("graph: %s.SymDiff: %d inputs, want %d", o.name, len(in), len(o.inT))
	}
	g, err := o.grad(in, out, grad)
	if err != nil {
		return nil, fmt.Errorf("graph: %s.SymDiff: %w", o.name, err)
	}
	// Gorgonia sums gradients with its own shape-checked addition, so each
	// must have its input's exact shape (a gradient computed elementwise
	// from another tensor takes that tensor's shape).
	for i, d := range g {
		if d == nil || d.Shape().Eq(in[i].Shape()) {
			continue
		}
		if g[i], err = Reshape(d, in[i].Shape()...); err != nil {
			return nil, fmt.Errorf("graph: %s.SymDiff: gradient %d: %w", o.name, i, err)
		}
	}
	return g, nil
}

// cpuForDo is the backend Do runs on: TapeMachine values live in Go memory.
var cpuForDo = sync.OnceValue(kernels.NewCPU)

// Do runs the op on the CPU backend over Gorgonia values, so a graph of
// these ops also runs under gorgonia.NewTapeMachine (the comparison oracle
// for the Executor).
func (o *op) Do(vals ...gorgonia.Value) (gorgonia.Value, error) {
	if len(vals) != len(o.inT) {
		return nil, fmt.Errorf("graph: %s.Do: %d inputs, want %d", o.name, len(vals), len(o.inT))
	}
	be := cpuForDo()
	var bufs []kernels.Buffer
	defer func() {
		for _, b := range bufs {
			be.Free(b)
		}
	}()
	in := make([]kernels.Buffer, len(vals))
	for i, v := range vals {
		data, err := float32s(v)
		if err != nil {
			return nil, fmt.Errorf("graph: %s.Do: input %d: %w", o.name, i, err)
		}
		in[i] = be.Alloc(kernels.F32, len(data))
		bufs = append(bufs, in[i])
		be.CopyIn(in[i], data)
	}
	if o.scratch > 0 {
		in = append(in, be.Alloc(kernels.F32, o.scratch))
		bufs = append(bufs, in[len(in)-1])
	}
	n := shapeSize(o.out)
	out := be.Alloc(kernels.F32, n)
	bufs = append(bufs, out)
	if o.view != nil {
		be.Copy(out, be.View(in[0], o.view.off, n))
	} else if err := o.run(be, out, in); err != nil {
		return nil, fmt.Errorf("graph: %s.Do: %w", o.name, err)
	}
	host := make([]float32, n)
	be.CopyOut(host, out)
	if err := be.Sync(); err != nil {
		return nil, fmt.Errorf("graph: %s.Do: %w", o.name, err)
	}
	if o.out.IsScalar() {
		return gorgonia.NewF32(host[0]), nil
	}
	return tensor.New(tensor.WithShape(o.out.Clone()...), tensor.WithBacking(host)), nil
}

// float32s returns the elements of a float32 Gorgonia value.
func float32s(v gorgonia.Value) ([]float32, error) {
	switch x := v.(type) {
	case *gorgonia.F32:
		return []float32{float32(*x)}, nil
	case tensor.Tensor:
		if x.Dtype() != tensor.Float32 {
			return nil, fmt.Errorf("dtype %v, want float32", x.Dtype())
		}
		if d, ok := x.(*tensor.Dense); ok && d.IsView() {
			x = d.Materialize()
		}
		switch data := x.Data().(type) {
		case []float32:
			return data, nil
		case float32:
			return []float32{data}, nil
		}
	}
	return nil, fmt.Errorf("unsupported value %T", v)
}

// shapeSize is the element count of s (1 for a scalar).
func shapeSize(s tensor.Shape) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// size is the element count of node n.
func size(n *gorgonia.Node) int { return shapeSize(n.Shape()) }

// children returns n's inputs in order. Gorgonia keeps them unexported; its
// graph's From iterates them in order, duplicates included.
func children(n *gorgonia.Node) []*gorgonia.Node {
	it := n.Graph().From(n.ID())
	if it == nil {
		return nil
	}
	out := make([]*gorgonia.Node, 0, it.Len())
	for it.Next() {
		out = append(out, it.Node().(*gorgonia.Node))
	}
	return out
}

// ourOp returns n's op if it is one of this package's.
func ourOp(n *gorgonia.Node) (*op, bool) {
	o, ok := n.Op().(*op)
	return o, ok
}

// viewOf returns a view of b: elements [off, off+n).
func viewOf(be kernels.Backend, b kernels.Buffer, off, n int) kernels.Buffer {
	if off == 0 && b.Len() == n {
		return b
	}
	return be.View(b, off, n)
}
