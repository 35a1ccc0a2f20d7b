package graph

// LoRAUp: a linear layer's output plus its LoRA branch, accumulated by the
// branch's matmul into the layer's output (no buffer or elementwise pass
// for the branch), with the bits of Add(y, ScaleVar(Linear(t, b), s)).
//
// Shape legend: N rows, M out features, r the LoRA rank.

import (
	"fmt"
	"math"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// LoRAMaxRank is the largest rank LoRAUp takes: the branch's matmul must
// sum its r products in one cache block of the CPU SGEMM (256 k) so that
// accumulating into y rounds as the separate addition did.
const LoRAMaxRank = 256

// LoRAUp is y + (*s)·(t·bᵀ) (with bf16 products when bf16): y [..., M] a
// linear layer's output, t [..., r] its LoRA branch's x·Aᵀ, b [M, r] the
// branch's B, *s the LoRA scale read at run time. It copies y and lets the
// branch's matmul accumulate into it (Alpha = *s, Beta = 1), which rounds
// s·(t·bᵀ) and then the sum, as ScaleVar and Add do; with *s = 0 it runs
// the separate ops (so that y + 0·u keeps their signs of zero). The
// backward scales the branch's matmuls by *s directly when it is a power
// of two from 1 to 2²⁴ (exact), and the gradient as ScaleVar does
// otherwise.
func LoRAUp(y, t, b *gorgonia.Node, s *float32, bf16 bool) (*gorgonia.Node, error) {
	if s == nil {
		return nil, fmt.Errorf("graph: LoRAUp: nil scale")
	}
	ys, ts, bs := y.Shape(), t.Shape(), b.Shape()
	if len(bs) != 2 || len(ys) < 1 || len(ts) < 1 || ys[len(ys)-1] != bs[0] || ts[len(ts)-1] != bs[1] || size(y)/bs[0] != size(t)/bs[1] {
		return nil, fmt.Errorf("graph: LoRAUp: y %v, t %v, b %v: want y [N, M], t [N, r], b [M, r]", ys, ts, bs)
	}
	M, r := bs[0], bs[1]
	N := size(y) / M
	if r > LoRAMaxRank {
		return nil, fmt.Errorf("graph: LoRAUp: rank %d above %d", r, LoRAMaxRank)
	}
	up := mm{1, N, M, r, false, true, 1, bf16} // t·bᵀ
	kp := kernels.MatMulParams{Batch: 1, M: N, N: M, K: r, TransB: true, Alpha: 1, StrideA: N * r, StrideB: M * r, StrideC: N * M, BF16: bf16}
	o := &op{name: "LoRAUp", key: fmt.Sprintf("%+v s=%p", up, s), out: ys.Clone(), diff: []bool{true, true, true}, scratch: N * M}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		p := kp
		if *s == 0 { // the separate ops: u = t·bᵀ; u = 0·u; out = y + u
			u := viewOf(be, in[3], 0, N*M)
			be.MatMul(u, in[1], in[2], p)
			be.AXPBY(u, u, nil, 0, 0, N*M)
			be.AXPBY(out, in[0], u, 1, 1, N*M)
			return nil
		}
		be.Copy(out, in[0])
		p.Alpha, p.Beta = *s, 1
		be.MatMul(out, in[1], in[2], p)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		T, B := in[1], in[2]
		dt, err := scaledMatMul(g, B, mm{1, N, r, M, false, false, 1, bf16}, s, T.Shape()) // s·g·b
		if err != nil {
			return nil, err
		}
		db, err := scaledMatMul(g, T, mm{1, M, r, N, true, false, 1, bf16}, s, B.Shape()) // s·gᵀ·t
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{g, dt, db}, nil
	}
	return apply(o, y, t, b)
}

// exactScale reports whether multiplying by s is exact for every float32
// that stays normal: s a power of two from 1 to 2²⁴.
func exactScale(s float32) bool {
	f, e := math.Frexp(float64(s))
	return f == 0.5 && e >= 1 && e <= 25
}

// scaledMatMul is the matmul p of (s·a) and b, with s read at run time:
// Alpha = s on a when s is exactly representable as a scaling (exactScale;
// the products then round as those of the scaled a), else a is scaled into
// the scratch first, as ScaleVar would.
func scaledMatMul(a, b *gorgonia.Node, p mm, s *float32, out tensor.Shape) (*gorgonia.Node, error) {
	if size(a) != p.batch*p.m*p.k || size(b) != p.batch*p.k*p.n || shapeSize(out) != p.batch*p.m*p.n {
		return nil, fmt.Errorf("graph: ScaledMatMul %+v: sizes a=%v b=%v out=%v do not match", p, a.Shape(), b.Shape(), out)
	}
	kp := kernels.MatMulParams{Batch: p.batch, M: p.m, N: p.n, K: p.k, TransA: p.ta, TransB: p.tb,
		Alpha: p.alpha, StrideA: p.m * p.k, StrideB: p.k * p.n, StrideC: p.m * p.n, BF16: p.bf16}
	na := size(a)
	o := &op{name: "ScaledMatMul", key: fmt.Sprintf("%+v s=%p", p, s), out: out, diff: []bool{false, false}, scratch: na}
	o.run = func(be kernels.Backend, c kernels.Buffer, in []kernels.Buffer) error {
		q := kp
		if exactScale(*s) {
			q.Alpha *= *s
			be.MatMul(c, in[0], in[1], q)
			return nil
		}
		sa := viewOf(be, in[2], 0, na)
		be.AXPBY(sa, in[0], nil, *s, 0, na)
		be.MatMul(c, sa, in[1], q)
		return nil
	}
	return apply(o, a, b)
}

// LoRAUpCols is LoRAUp for a fused projection's output left whole: y
// [N, W] holds the parts in column blocks [offs[i], offs[i]+bs[i] rows),
// and out = y with each branch (*s)·(ts[i]·bs[i]ᵀ) accumulated straight
// into its block (MatMulParams.LdC = W), one copy of y and no split. Each
// block gets the bits LoRAUp gives the part cut out of y. With *s = 0 out
// is y as it is (LoRAUp adds 0·u, which differs only where y is −0 or u
// is not finite). The backward passes g through to y, and cuts each
// block of g out (SplitCols' copy) for the branch's matmuls, as LoRAUp's
// backward reads its part's gradient.
func LoRAUpCols(y *gorgonia.Node, offs []int, ts, bs []*gorgonia.Node, s *float32, bf16 bool) (*gorgonia.Node, error) {
	if s == nil {
		return nil, fmt.Errorf("graph: LoRAUpCols: nil scale")
	}
	ys := y.Shape()
	if len(ys) != 2 || len(offs) == 0 || len(ts) != len(offs) || len(bs) != len(offs) {
		return nil, fmt.Errorf("graph: LoRAUpCols: y %v with %d offsets, %d t, %d b: want y [N, W] and one t and b per offset", ys, len(offs), len(ts), len(bs))
	}
	N, W := ys[0], ys[1]
	kps := make([]kernels.MatMulParams, len(offs))
	for i, off := range offs {
		sh, th := bs[i].Shape(), ts[i].Shape()
		if len(sh) != 2 || len(th) != 2 || th[0] != N || th[1] != sh[1] || off < 0 || off+sh[0] > W {
			return nil, fmt.Errorf("graph: LoRAUpCols: part %d: t %v, b %v at column %d of y %v: want t [N, r], b [w, r], off+w ≤ W", i, th, sh, off, ys)
		}
		if sh[1] > LoRAMaxRank {
			return nil, fmt.Errorf("graph: LoRAUpCols: rank %d above %d", sh[1], LoRAMaxRank)
		}
		kps[i] = kernels.MatMulParams{Batch: 1, M: N, N: sh[0], K: sh[1], TransB: true, Beta: 1, BF16: bf16, LdC: W}
	}
	o := &op{name: "LoRAUpCols", key: fmt.Sprintf("%v offs=%v %+v s=%p", ys, offs, kps, s), out: ys.Clone(), diff: make([]bool, 1+2*len(offs))}
	for i := range o.diff {
		o.diff[i] = true
	}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.Copy(out, in[0])
		if *s == 0 {
			return nil
		}
		for i, p := range kps {
			p.Alpha = *s
			off := offs[i]
			be.MatMul(be.View(out, off, N*W-off), in[1+i], in[1+len(offs)+i], p)
		}
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		grads := make(gorgonia.Nodes, 1+2*len(offs))
		grads[0] = g
		for i, off := range offs {
			T, B := in[1+i], in[1+len(offs)+i]
			w, r := B.Shape()[0], B.Shape()[1]
			gi, err := colsOf(g, N, W, off, w)
			if err != nil {
				return nil, err
			}
			if grads[1+i], err = scaledMatMul(gi, B, mm{1, N, r, w, false, false, 1, bf16}, s, T.Shape()); err != nil { // s·g·b
				return nil, err
			}
			if grads[1+len(offs)+i], err = scaledMatMul(gi, T, mm{1, w, r, N, true, false, 1, bf16}, s, B.Shape()); err != nil { // s·gᵀ·t
				return nil, err
			}
		}
		return grads, nil
	}
	return apply(o, append(append([]*gorgonia.Node{y}, ts...), bs...)...)
}
