package graph

// Dense and elementwise ops: MatMul/Linear, AddBias, Embedding, AXPBY,
// Scale, ScaleVar, Mul, Dot, Dropout, and the backward-only ops their
// SymDiffs build (SumRows, EmbeddingBackward, ScaleBy).
//
// Shape legend: N rows (B·T), K in features, M out features, C channels,
// V vocabulary.

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// mm is C[b] = alpha·op(A[b])·op(B[b]); op(A) is m×k, op(B) is k×n;
// bf16: bf16 products (kernels.MatMulParams.BF16), the backward's too.
type mm struct {
	batch, m, n, k int
	ta, tb         bool
	alpha          float32
	bf16           bool
}

// matmul builds the MatMul node of p over a and b with output shape out.
// Its SymDiff is two more matmuls (dA, dB), laid out like A and B.
func matmul(a, b *gorgonia.Node, p mm, out tensor.Shape) (*gorgonia.Node, error) {
	if size(a) != p.batch*p.m*p.k || size(b) != p.batch*p.k*p.n || shapeSize(out) != p.batch*p.m*p.n {
		return nil, fmt.Errorf("graph: MatMul %+v: sizes a=%v b=%v out=%v do not match", p, a.Shape(), b.Shape(), out)
	}
	kp := kernels.MatMulParams{Batch: p.batch, M: p.m, N: p.n, K: p.k, TransA: p.ta, TransB: p.tb,
		Alpha: p.alpha, StrideA: p.m * p.k, StrideB: p.k * p.n, StrideC: p.m * p.n, BF16: p.bf16}
	o := &op{name: "MatMul", key: fmt.Sprintf("%+v", p), out: out, diff: []bool{true, true}}
	o.run = func(be kernels.Backend, c kernels.Buffer, in []kernels.Buffer) error {
		be.MatMul(c, in[0], in[1], kp)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		A, B := in[0], in[1]
		var da, db *gorgonia.Node
		var err error
		if !p.ta { // dA = dC·op(B)ᵀ
			da, err = matmul(g, B, mm{p.batch, p.m, p.k, p.n, false, !p.tb, p.alpha, p.bf16}, A.Shape())
		} else { // A is k×m: dA = op(B)·dCᵀ
			da, err = matmul(B, g, mm{p.batch, p.k, p.m, p.n, p.tb, true, p.alpha, p.bf16}, A.Shape())
		}
		if err != nil {
			return nil, err
		}
		if !p.tb { // dB = op(A)ᵀ·dC
			db, err = matmul(A, g, mm{p.batch, p.k, p.n, p.m, !p.ta, false, p.alpha, p.bf16}, B.Shape())
		} else { // B is n×k: dB = dCᵀ·op(A)
			db, err = matmul(g, A, mm{p.batch, p.n, p.k, p.m, true, p.ta, p.alpha, p.bf16}, B.Shape())
		}
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{da, db}, nil
	}
	return apply(o, a, b)
}

// MatMul is alpha·op(a)·op(b) for matrices (2-D) or batches of matrices
// (3-D, equal leading dimension). op(a) is aᵀ when transA.
func MatMul(a, b *gorgonia.Node, transA, transB bool, alpha float32) (*gorgonia.Node, error) {
	as, bs := a.Shape(), b.Shape()
	if len(as) != len(bs) || (len(as) != 2 && len(as) != 3) {
		return nil, fmt.Errorf("graph: MatMul: shapes %v and %v: want two 2-D or two 3-D tensors", as, bs)
	}
	batch := 1
	if len(as) == 3 {
		if as[0] != bs[0] {
			return nil, fmt.Errorf("graph: MatMul: batch %d != %d", as[0], bs[0])
		}
		batch, as, bs = as[0], as[1:], bs[1:]
	}
	m, k := as[0], as[1]
	if transA {
		m, k = k, m
	}
	k2, n := bs[0], bs[1]
	if transB {
		k2, n = n, k2
	}
	if k != k2 {
		return nil, fmt.Errorf("graph: MatMul: inner dimensions %d and %d differ (shapes %v, %v)", k, k2, a.Shape(), b.Shape())
	}
	out := tensor.Shape{m, n}
	if batch > 1 || len(a.Shape()) == 3 {
		out = tensor.Shape{batch, m, n}
	}
	return matmul(a, b, mm{batch, m, n, k, transA, transB, alpha, false}, out)
}

// Linear is y = x·Wᵀ: x [..., K], w [M, K] (the Hugging Face layout) →
// y [..., M].
func Linear(x, w *gorgonia.Node) (*gorgonia.Node, error) { return linear(x, w, false) }

// LinearBF16 is Linear with bf16 products (kernels.MatMulParams.BF16) in
// the forward and the backward matmuls.
func LinearBF16(x, w *gorgonia.Node) (*gorgonia.Node, error) { return linear(x, w, true) }

func linear(x, w *gorgonia.Node, bf16 bool) (*gorgonia.Node, error) {
	xs, ws := x.Shape(), w.Shape()
	if len(ws) != 2 || len(xs) < 1 || xs[len(xs)-1] != ws[1] {
		return nil, fmt.Errorf("graph: Linear: x %v and w %v: want x [..., K], w [M, K]", xs, ws)
	}
	out := xs.Clone()
	out[len(out)-1] = ws[0]
	return matmul(x, w, mm{1, size(x) / ws[1], ws[0], ws[1], false, true, 1, bf16}, out)
}

// lastDim returns C = len(v) for a 1-D v and the number of C-rows in x.
func rowsOf(x, v *gorgonia.Node, what string) (rows, C int, err error) {
	xs, vs := x.Shape(), v.Shape()
	if len(vs) != 1 || len(xs) < 1 || xs[len(xs)-1] != vs[0] {
		return 0, 0, fmt.Errorf("graph: %s: x %v and vector %v: want x [..., C], vector [C]", what, xs, vs)
	}
	return size(x) / vs[0], vs[0], nil
}

// AddBias is out[n,c] = x[n,c] + bias[c]: x [..., C], bias [C].
func AddBias(x, bias *gorgonia.Node) (*gorgonia.Node, error) {
	N, C, err := rowsOf(x, bias, "AddBias")
	if err != nil {
		return nil, err
	}
	o := &op{name: "AddBias", key: fmt.Sprintf("N=%d C=%d", N, C), out: x.Shape(), diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.AddBias(out, in[0], in[1], N, C)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		db, err := sumRows(g, N, C, in[1].Shape())
		return gorgonia.Nodes{g, db}, err
	}
	return apply(o, x, bias)
}

// sumRows is out[c] = Σ_n x[n,c] (the bias gradient).
func sumRows(x *gorgonia.Node, N, C int, out tensor.Shape) (*gorgonia.Node, error) {
	o := &op{name: "SumRows", key: fmt.Sprintf("N=%d C=%d", N, C), out: out}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.SumRows(out, viewOf(be, in[0], 0, N*C), N, C)
		return nil
	}
	return apply(o, x)
}

// Embedding gathers rows of table [V, C] at Batch.IDs: out [N, C].
func Embedding(table *gorgonia.Node, b *Batch) (*gorgonia.Node, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	ts := table.Shape()
	if len(ts) != 2 {
		return nil, fmt.Errorf("graph: Embedding: table %v: want [V, C]", ts)
	}
	V, C := ts[0], ts[1]
	key := fmt.Sprintf("V=%d C=%d batch=%p", V, C, b)
	o := &op{name: "Embedding", key: key, out: tensor.Shape{b.N(), C}, diff: []bool{true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		ids, err := b.ids()
		if err != nil {
			return err
		}
		if err := checkIDs(ids, V, "Batch.IDs", false); err != nil {
			return err
		}
		be.Embedding(out, in[0], ids, C)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "EmbeddingBackward", key: key, out: ts}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			ids, err := b.ids()
			if err != nil {
				return err
			}
			be.EmbeddingBackward(out, viewOf(be, in[0], 0, b.N()*C), ids, C)
			return nil
		}
		d, err := apply(bo, g)
		return gorgonia.Nodes{d}, err
	}
	return apply(o, table)
}

// checkIDs reports the first id outside [0, V) (negatives allowed when
// masked is true: they mean "no target").
func checkIDs(ids []int32, V int, what string, masked bool) error {
	for i, id := range ids {
		if int(id) >= V || (id < 0 && !masked) {
			return fmt.Errorf("%s[%d] = %d outside [0, %d)", what, i, id, V)
		}
	}
	return nil
}

func sameSize(a, b *gorgonia.Node, what string) error {
	if size(a) != size(b) {
		return fmt.Errorf("graph: %s: sizes differ: %v and %v", what, a.Shape(), b.Shape())
	}
	return nil
}

// AXPBY is alpha·a + beta·b elementwise (equal sizes; the shape of a).
func AXPBY(a, b *gorgonia.Node, alpha, beta float32) (*gorgonia.Node, error) {
	if err := sameSize(a, b, "AXPBY"); err != nil {
		return nil, err
	}
	n := size(a)
	o := &op{name: "AXPBY", key: fmt.Sprintf("%g %g", alpha, beta), out: a.Shape(), diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.AXPBY(out, in[0], in[1], alpha, beta, n)
		return nil
	}
	o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		da, err := Scale(g, alpha)
		if err != nil {
			return nil, err
		}
		db, err := Scale(g, beta)
		return gorgonia.Nodes{da, db}, err
	}
	return apply(o, a, b)
}

// Add is a + b (AXPBY with 1, 1): residual connections, LoRA sums.
func Add(a, b *gorgonia.Node) (*gorgonia.Node, error) { return AXPBY(a, b, 1, 1) }

// Scale is alpha·x. Scale(x, 1) is x itself (no node).
func Scale(x *gorgonia.Node, alpha float32) (*gorgonia.Node, error) {
	if alpha == 1 {
		return x, nil
	}
	n := size(x)
	o := &op{name: "Scale", key: fmt.Sprintf("%g", alpha), out: x.Shape(), diff: []bool{true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.AXPBY(out, in[0], nil, alpha, 0, n)
		return nil
	}
	o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		d, err := Scale(g, alpha)
		return gorgonia.Nodes{d}, err
	}
	return apply(o, x)
}

// ScaleVar is (*s)·x with *s read at run time: the LoRA scale α/r, set to 0
// to switch adapters off without rebuilding the graph.
func ScaleVar(x *gorgonia.Node, s *float32) (*gorgonia.Node, error) {
	if s == nil {
		return nil, fmt.Errorf("graph: ScaleVar: nil scale")
	}
	n := size(x)
	o := &op{name: "ScaleVar", key: fmt.Sprintf("%p", s), out: x.Shape(), diff: []bool{true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.AXPBY(out, in[0], nil, *s, 0, n)
		return nil
	}
	o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		d, err := ScaleVar(g, s)
		return gorgonia.Nodes{d}, err
	}
	return apply(o, x)
}

// Mul is a·b elementwise (equal sizes; the shape of a).
func Mul(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if err := sameSize(a, b, "Mul"); err != nil {
		return nil, err
	}
	n := size(a)
	o := &op{name: "Mul", out: a.Shape(), diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.Mul(out, in[0], in[1], n)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		da, err := Mul(g, in[1])
		if err != nil {
			return nil, err
		}
		db, err := Mul(g, in[0])
		return gorgonia.Nodes{da, db}, err
	}
	return apply(o, a, b)
}

// Dot is the scalar Σ_i a[i]·b[i]. The training cost is Dot(lp, g), with g
// the dLoss/dlp input that the trainer sets between Forward and Backward.
func Dot(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if err := sameSize(a, b, "Dot"); err != nil {
		return nil, err
	}
	n := size(a)
	o := &op{name: "Dot", out: tensor.ScalarShape(), diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.Dot(out, in[0], in[1], n)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		da, err := scaleBy(g, in[1])
		if err != nil {
			return nil, err
		}
		db, err := scaleBy(g, in[0])
		return gorgonia.Nodes{da, db}, err
	}
	return apply(o, a, b)
}

// scaleBy is s·x for a one-element node s, on the device: a matmul with
// K = 1 (out[1×n] = s[1×1]·x[1×n]), so no host round trip is needed.
func scaleBy(s, x *gorgonia.Node) (*gorgonia.Node, error) {
	if size(s) != 1 {
		return nil, fmt.Errorf("graph: ScaleBy: scale has shape %v, want one element", s.Shape())
	}
	n := size(x)
	kp := kernels.MatMulParams{Batch: 1, M: 1, N: n, K: 1, Alpha: 1, StrideA: 1, StrideB: n, StrideC: n}
	o := &op{name: "ScaleBy", out: x.Shape(), diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.MatMul(out, in[0], in[1], kp)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		ds, err := Dot(g, in[1])
		if err != nil {
			return nil, err
		}
		if !in[0].Shape().IsScalar() {
			if ds, err = Reshape(ds, in[0].Shape()...); err != nil {
				return nil, err
			}
		}
		dx, err := scaleBy(in[0], g)
		return gorgonia.Nodes{ds, dx}, err
	}
	return apply(o, s, x)
}

// Dropout is x·keep/(1−p) with the mask of kernels.Backend.Dropout, seeded
// per step by Batch.Seed and per op by its own site; Batch.Eval (or p = 0)
// makes it the identity. The backward applies the same mask.
func Dropout(x *gorgonia.Node, p float32, b *Batch) (*gorgonia.Node, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("graph: Dropout: p = %v outside [0, 1)", p)
	}
	return dropout(x, p, b, b.site())
}

func dropout(x *gorgonia.Node, p float32, b *Batch, site uint64) (*gorgonia.Node, error) {
	n := size(x)
	o := &op{name: "Dropout", key: fmt.Sprintf("p=%g site=%d batch=%p", p, site, b), out: x.Shape(), diff: []bool{true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		if b.Eval || p == 0 {
			be.Copy(out, in[0])
			return nil
		}
		be.Dropout(out, in[0], n, p, b.seedFor(site))
		return nil
	}
	o.grad = func(_ gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		d, err := dropout(g, p, b, site)
		return gorgonia.Nodes{d}, err
	}
	return apply(o, x)
}

// LinearBias is y = x·Wᵀ + b (with bf16 products when bf16) in one MatMul
// whose bias is added by the GEMM (kernels.MatMulParams.Bias: cuBLASLt's
// bias epilogue on the CUDA backend): x [..., K], w [M, K], b [M]. The bias
// is a frozen input: gradients flow to x and w only (a trainable bias
// needs Linear and AddBias).
func LinearBias(x, w, b *gorgonia.Node, bf16 bool) (*gorgonia.Node, error) {
	xs, ws, bs := x.Shape(), w.Shape(), b.Shape()
	if len(ws) != 2 || len(xs) < 1 || xs[len(xs)-1] != ws[1] || size(b) != ws[0] || len(bs) != 1 {
		return nil, fmt.Errorf("graph: LinearBias: x %v, w %v, b %v: want x [..., K], w [M, K], b [M]", xs, ws, bs)
	}
	M, K := ws[0], ws[1]
	N := size(x) / K
	out := xs.Clone()
	out[len(out)-1] = M
	p := mm{1, N, M, K, false, true, 1, bf16}
	kp := kernels.MatMulParams{Batch: 1, M: N, N: M, K: K, TransB: true, Alpha: 1, StrideA: N * K, StrideB: M * K, StrideC: N * M, BF16: bf16}
	o := &op{name: "LinearBias", key: fmt.Sprintf("%+v", p), out: out, diff: []bool{true, true, false}}
	o.run = func(be kernels.Backend, c kernels.Buffer, in []kernels.Buffer) error {
		q := kp
		q.Bias = in[2]
		be.MatMul(c, in[0], in[1], q)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		dx, err := matmul(g, in[1], mm{1, N, K, M, false, false, 1, bf16}, in[0].Shape()) // g·W
		if err != nil {
			return nil, err
		}
		dw, err := matmul(g, in[0], mm{1, M, K, N, true, false, 1, bf16}, in[1].Shape()) // gᵀ·x
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{dx, dw, nil}, nil
	}
	return apply(o, x, w, b)
}
