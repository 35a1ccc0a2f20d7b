package graph

// LogProbsLinear: the LM head and the log-softmax over the vocabulary in
// chunks of rows, so that logits exist for one chunk at a time.
//
// Shape legend: N rows (B·T), C channels, V vocabulary, R rows per chunk.

import (
	"fmt"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/argrl/argrl/kernels"
)

// LogProbsLinear is LogProbs(Linear(h, w), b, true) (or LinearBF16 with
// bf16) computed R ≤ rows rows at a time: h [N, C], w [V, C] → lp, ent
// [N]. The logits of a chunk live in the op's scratch (R·V elements) only
// while it runs; the backward computes them again, chunk by chunk, for
// dlogits (R·V more) and dh = dlogits·w. Every row is computed by the same
// kernels with the same arguments as the unchunked graph, so lp, ent and
// dh are bit-identical to it. w gets no gradient (a frozen LM head).
func LogProbsLinear(h, w *gorgonia.Node, b *Batch, rows int, bf16 bool) (lp, ent *gorgonia.Node, err error) {
	if err := b.check(); err != nil {
		return nil, nil, err
	}
	hs, ws := h.Shape(), w.Shape()
	N := b.N()
	if len(ws) != 2 || len(hs) < 1 || hs[len(hs)-1] != ws[1] || size(h) != N*ws[1] {
		return nil, nil, fmt.Errorf("graph: LogProbsLinear: h %v and w %v: want h [N=%d, C], w [V, C]", hs, ws, N)
	}
	if rows <= 0 {
		return nil, nil, fmt.Errorf("graph: LogProbsLinear: %d rows per chunk", rows)
	}
	V, C := ws[0], ws[1]
	nc := (N + rows - 1) / rows
	R := (N + nc - 1) / nc // equal chunks of at most rows
	fwdMM := kernels.MatMulParams{Batch: 1, N: V, K: C, TransB: true, Alpha: 1, BF16: bf16}
	bwdMM := kernels.MatMulParams{Batch: 1, N: C, K: V, Alpha: 1, BF16: bf16}
	key := fmt.Sprintf("N=%d V=%d C=%d R=%d bf16=%v batch=%p", N, V, C, R, bf16, b)
	o := &op{name: "LogProbsLinear", key: key, out: tensor.Shape{3 * N}, diff: []bool{true, false}, scratch: R * V}
	o.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
		tg, err := b.targets()
		if err != nil {
			return err
		}
		if err := checkIDs(tg, V, "Batch.Targets", true); err != nil {
			return err
		}
		for r0 := 0; r0 < N; r0 += R {
			r := min(R, N-r0)
			logits := viewOf(be, in[2], 0, r*V)
			p := fwdMM
			p.M, p.StrideA, p.StrideB, p.StrideC = r, r*C, V*C, r*V
			be.MatMul(logits, be.View(in[0], r0*C, r*C), in[1], p)
			be.LogProbs(be.View(out, r0, r), be.View(out, N+r0, r), be.View(out, 2*N+r0, r), logits, tg[r0:r0+r], r, V)
		}
		return nil
	}
	o.grad = func(in gorgonia.Nodes, pk, g *gorgonia.Node) (gorgonia.Nodes, error) {
		bo := &op{name: "LogProbsLinearBackward", key: key, out: hs.Clone(), scratch: 2 * R * V}
		bo.run = func(be kernels.Backend, out kernels.Buffer, in []kernels.Buffer) error {
			// in: dlp, h, w, packed [lp | lse | ent], scratch
			tg, err := b.targets()
			if err != nil {
				return err
			}
			for r0 := 0; r0 < N; r0 += R {
				r := min(R, N-r0)
				logits, dl := be.View(in[4], 0, r*V), be.View(in[4], r*V, r*V)
				p := fwdMM
				p.M, p.StrideA, p.StrideB, p.StrideC = r, r*C, V*C, r*V
				be.MatMul(logits, be.View(in[1], r0*C, r*C), in[2], p)
				be.LogProbsBackward(dl, be.View(in[0], r0, r), logits, be.View(in[3], N+r0, r), tg[r0:r0+r], r, V)
				q := bwdMM
				q.M, q.StrideA, q.StrideB, q.StrideC = r, r*V, V*C, r*C
				be.MatMul(be.View(out, r0*C, r*C), dl, in[2], q)
			}
			return nil
		}
		dh, err := apply(bo, primaryGrad(g), in[0], in[1], pk)
		return gorgonia.Nodes{dh, nil}, err
	}
	p, err := apply(o, h, w)
	if err != nil {
		return nil, nil, err
	}
	if lp, err = view(p, 0, tensor.Shape{N}, true); err != nil {
		return nil, nil, err
	}
	if ent, err = view(p, 2*N, tensor.Shape{N}, false); err != nil {
		return nil, nil, err
	}
	return lp, ent, nil
}
