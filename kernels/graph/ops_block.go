package graph

// Decoder ops: RMSNorm, RoPE, Attention, SwiGLU and LogProbs, each with the
// backward op its SymDiff builds. Multi-output kernels use packed nodes
// (view.go).
//
// Shape legend: B batch rows, T tokens per row, N = B·T, C channels, Hq/Hkv
// query/key-value heads, D head dim, P RoPE table rows, V vocabulary.

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// RMSNorm normalizes every row of len(w) elements of x: x [..., C] with w
// [C] is the usual norm; x [N, H·D] with w [D] is the per-head q/k norm of
// Qwen3. The kernel's rstd rides in a packed node [out | rstd].
func RMSNorm(x, w *gorgonia.Node, eps float32) (*gorgonia.Node, error) {
	ws := w.Shape()
	if len(ws) != 1 || ws[0] <= 0 || size(x)%ws[0] != 0 {
		return nil, fmt.Errorf("graph: RMSNorm: x %v and w %v: want w [C] with C dividing the size of x", x.Shape(), ws)
	}
	C := ws[0]
	n := size(x)
	rows := n / C
	key := fmt.Sprintf("rows=%d C=%d eps=%g", rows, C, eps)
	o := &op{name: "RMSNorm", key: key, out: tensor.Shape{n + rows}, diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.RMSNorm(be.View(out, 0, n), be.View(out, n, rows), in[0], in[1], rows, C, eps)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, p, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "RMSNormBackward", key: key, out: tensor.Shape{n + C}}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			// in: dout, x, w, packed [out | rstd]
			be.RMSNormBackward(be.View(out, 0, n), be.View(out, n, C), viewOf(be, in[0], 0, n),
				in[1], in[2], be.View(in[3], n, rows), rows, C)
			return nil
		}
		bw, err := apply(bo, primaryGrad(g), in[0], in[1], p)
		if err != nil {
			return nil, err
		}
		return parts(bw, false, in[0].Shape(), in[1].Shape())
	}
	p, err := apply(o, x, w)
	if err != nil {
		return nil, err
	}
	return view(p, 0, x.Shape(), true)
}

// RoPE rotates the H heads of x [N, H·D] (any shape of that size) by the
// angles of Batch.Pos (or t) read from cos, sin [P, D/2] (kernels.RopeTables,
// bound as constant inputs). The backward is the inverse rotation.
func RoPE(x, cos, sin *gorgonia.Node, b *Batch, heads int) (*gorgonia.Node, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	cs := cos.Shape()
	if len(cs) != 2 || !cs.Eq(sin.Shape()) {
		return nil, fmt.Errorf("graph: RoPE: cos %v and sin %v: want equal [P, D/2]", cs, sin.Shape())
	}
	P, D := cs[0], 2*cs[1]
	N := b.N()
	if heads <= 0 || size(x) != N*heads*D {
		return nil, fmt.Errorf("graph: RoPE: x %v is not [N=%d, H=%d, D=%d]", x.Shape(), N, heads, D)
	}
	return rope(x, cos, sin, b, heads, D, P, false)
}

func rope(x, cos, sin *gorgonia.Node, b *Batch, H, D, P int, inverse bool) (*gorgonia.Node, error) {
	N := b.N()
	o := &op{name: "RoPE", key: fmt.Sprintf("H=%d D=%d inv=%v batch=%p", H, D, inverse, b), out: x.Shape(),
		diff: []bool{true, false, false}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		pos, err := b.positions()
		if err != nil {
			return err
		}
		if err := checkIDs(pos, P, "Batch.Pos", false); err != nil {
			return fmt.Errorf("%w (RoPE table has %d rows)", err, P)
		}
		be.RoPE(out, in[0], in[1], in[2], pos, N, H, D, inverse)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		d, err := rope(g, in[1], in[2], b, H, D, P, !inverse)
		return gorgonia.Nodes{d, nil, nil}, err
	}
	return apply(o, x, cos, sin)
}

// Attention is causal grouped-query attention over right-padded rows
// (Batch.Lens), or packed ones (Batch.KStart): q [N, Hq·D], k and v [N, Hkv·D] (any shapes of those sizes)
// → out shaped like q. Scores are scaled by 1/sqrt(D). The log-sum-exp the
// backward needs rides in a packed node [out | lse].
func Attention(q, k, v *gorgonia.Node, b *Batch, hq, hkv int) (*gorgonia.Node, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	N := b.N()
	if hq <= 0 || hkv <= 0 || hq%hkv != 0 || size(q)%(N*hq) != 0 {
		return nil, fmt.Errorf("graph: Attention: q %v with Hq=%d, Hkv=%d over N=%d rows", q.Shape(), hq, hkv, N)
	}
	D := size(q) / (N * hq)
	if size(k) != N*hkv*D || size(v) != N*hkv*D {
		return nil, fmt.Errorf("graph: Attention: k %v, v %v: want N·Hkv·D = %d elements", k.Shape(), v.Shape(), N*hkv*D)
	}
	nq, nk, nl := N*hq*D, N*hkv*D, N*hq
	params := func() (kernels.AttnParams, error) {
		lens, err := b.lens()
		if err != nil {
			return kernels.AttnParams{}, err
		}
		ks, err := b.kstart()
		return kernels.AttnParams{B: b.B, Tq: b.T, Hq: hq, Hkv: hkv, D: D, S: b.B, Tmax: b.T, KLen: lens, KStart: ks}, err
	}
	key := fmt.Sprintf("Hq=%d Hkv=%d D=%d batch=%p", hq, hkv, D, b)
	o := &op{name: "Attention", key: key, out: tensor.Shape{nq + nl}, diff: []bool{true, true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		p, err := params()
		if err != nil {
			return err
		}
		be.Attention(be.View(out, 0, nq), be.View(out, nq, nl), in[0], in[1], in[2], p)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, pk, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "AttentionBackward", key: key, out: tensor.Shape{nq + 2*nk}}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			// in: dout, q, k, v, packed [out | lse]
			p, err := params()
			if err != nil {
				return err
			}
			be.AttentionBackward(be.View(out, 0, nq), be.View(out, nq, nk), be.View(out, nq+nk, nk),
				viewOf(be, in[0], 0, nq), in[1], in[2], in[3], be.View(in[4], 0, nq), be.View(in[4], nq, nl), p)
			return nil
		}
		bw, err := apply(bo, primaryGrad(g), in[0], in[1], in[2], pk)
		if err != nil {
			return nil, err
		}
		return parts(bw, false, in[0].Shape(), in[1].Shape(), in[2].Shape())
	}
	p, err := apply(o, q, k, v)
	if err != nil {
		return nil, err
	}
	return view(p, 0, q.Shape(), true)
}

// SwiGLU is silu(gate)·up elementwise (equal sizes; the shape of gate).
func SwiGLU(gate, up *gorgonia.Node) (*gorgonia.Node, error) {
	if err := sameSize(gate, up, "SwiGLU"); err != nil {
		return nil, err
	}
	n := size(gate)
	F := n // rows of the last axis (one row for a vector)
	if sh := gate.Shape(); len(sh) > 1 && sh[len(sh)-1] > 0 {
		F = sh[len(sh)-1]
	}
	o := &op{name: "SwiGLU", out: gate.Shape(), diff: []bool{true, true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.SwiGLU(out, in[0], in[1], n/max(F, 1), F, F)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "SwiGLUBackward", key: fmt.Sprintf("n=%d", n), out: tensor.Shape{2 * n}}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			// in: dout, gate, up
			be.SwiGLUBackward(be.View(out, 0, n), be.View(out, n, n), viewOf(be, in[0], 0, n), in[1], in[2], n/max(F, 1), F, F)
			return nil
		}
		bw, err := apply(bo, g, in[0], in[1])
		if err != nil {
			return nil, err
		}
		return parts(bw, false, in[0].Shape(), in[1].Shape())
	}
	return apply(o, gate, up)
}

// SwiGLUFused is silu(gate)·up over the fused gate/up layout: gu is
// [N, 2F] with gate in columns [0, F) and up in [F, 2F) of each row (one
// GEMM's output); the result is [N, F]. Its gradient is [N, 2F] in the same
// layout, so no split or concatenation copy is made either way.
func SwiGLUFused(gu *gorgonia.Node) (*gorgonia.Node, error) {
	sh := gu.Shape()
	if len(sh) != 2 || sh[1]%2 != 0 {
		return nil, fmt.Errorf("SwiGLUFused: gate/up must be [N, 2F], got %v", sh)
	}
	N, F := sh[0], sh[1]/2
	o := &op{name: "SwiGLUFused", key: fmt.Sprintf("N=%d F=%d", N, F), out: tensor.Shape{N, F}, diff: []bool{true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		be.SwiGLU(out, in[0], upper(be, in[0], F), N, F, 2*F)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, _, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "SwiGLUFusedBackward", key: fmt.Sprintf("N=%d F=%d", N, F), out: tensor.Shape{N, 2 * F}}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			// in: dout [N, F], gu [N, 2F]; out = dgu, every element written
			be.SwiGLUBackward(out, upper(be, out, F), viewOf(be, in[0], 0, N*F), in[1], upper(be, in[1], F), N, F, 2*F)
			return nil
		}
		bw, err := apply(bo, g, in[0])
		if err != nil {
			return nil, err
		}
		return gorgonia.Nodes{bw}, nil
	}
	return apply(o, gu)
}

// upper is b from element F on (the up half's first row), empty if b is
// shorter.
func upper(be kernels.Backend, b kernels.Buffer, F int) kernels.Buffer {
	off := min(F, b.Len())
	return be.View(b, off, b.Len()-off)
}

// LogProbs is the fused log-softmax + gather over logits [N, V] at
// Batch.Targets: lp [N] (0 where the target is < 0). With entropy it also
// returns ent [N], the entropy of each row's distribution, which is an
// output only (no gradient flows from it). The packed node is [lp | lse | ent].
func LogProbs(logits *gorgonia.Node, b *Batch, entropy bool) (lp, ent *gorgonia.Node, err error) {
	if err := b.check(); err != nil {
		return nil, nil, err
	}
	ls := logits.Shape()
	N := b.N()
	if len(ls) < 1 || size(logits) != N*ls[len(ls)-1] {
		return nil, nil, fmt.Errorf("graph: LogProbs: logits %v: want [N=%d, V]", ls, N)
	}
	V := ls[len(ls)-1]
	total := 2 * N
	if entropy {
		total = 3 * N
	}
	key := fmt.Sprintf("N=%d V=%d ent=%v batch=%p", N, V, entropy, b)
	o := &op{name: "LogProbs", key: key, out: tensor.Shape{total}, diff: []bool{true}}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		tg, err := b.targets()
		if err != nil {
			return err
		}
		if err := checkIDs(tg, V, "Batch.Targets", true); err != nil {
			return err
		}
		var e kernels.Buffer
		if entropy {
			e = be.View(out, 2*N, N)
		}
		be.LogProbs(be.View(out, 0, N), be.View(out, N, N), e, in[0], tg, N, V)
		return nil
	}
	o.grad = func(in gorgonia.Nodes, p, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "LogProbsBackward", key: key, out: ls.Clone()}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			// in: dlp, logits, packed [lp | lse | ent]
			tg, err := b.targets()
			if err != nil {
				return err
			}
			be.LogProbsBackward(out, viewOf(be, in[0], 0, N), in[1], be.View(in[2], N, N), tg, N, V)
			return nil
		}
		d, err := apply(bo, primaryGrad(g), in[0], p)
		return gorgonia.Nodes{d}, err
	}
	p, err := apply(o, logits)
	if err != nil {
		return nil, nil, err
	}
	if lp, err = view(p, 0, tensor.Shape{N}, true); err != nil {
		return nil, nil, err
	}
	if entropy {
		if ent, err = view(p, 2*N, tensor.Shape{N}, false); err != nil {
			return nil, nil, err
		}
	}
	return lp, ent, nil
}
