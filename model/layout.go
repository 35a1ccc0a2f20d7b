package model

// Where a micro-batch's sequences sit in the graph's rows. Unpacked (the
// default layout before Options.Pack): one right-padded row per sequence,
// T the longest rounded up to Options.TBucket. Packed: every sequence end
// to end in one row of T = packRound(Σ lengths) tokens,
//
//	row 0:  [ s₀ … | s₁ … | s₂ … | pad ]
//	Pos     0 1 …    0 1 …   0 1 …   0
//	KStart  0 0 …    o₁ o₁ … o₂ o₂ … n        o_k = Σ_{i<k} len(s_i), n = Σ len
//	Targets each sequence's next token; −1 at its last token and on pad
//
// so RoPE restarts at each sequence, attention never crosses a boundary
// (pad queries see no key) and no prediction spans two sequences. Tokens
// cost the same in either layout; packing removes the padding, whose
// every layer is computed and thrown away.

import (
	"fmt"
	"math/bits"

	"github.com/argrl/argrl/kernels/graph"
)

// layout places sequence b at row row[b], tokens [off[b], off[b]+len).
type layout struct {
	B, T     int
	packed   bool
	row, off []int
	used     int // packed: Σ lengths
}

// layout checks seqs and places them (Options.Pack says how).
func (m *Model) layout(seqs [][]int32) (*layout, error) {
	maxT, err := m.checkSeqs(seqs)
	if err != nil {
		return nil, err
	}
	l := &layout{row: make([]int, len(seqs)), off: make([]int, len(seqs))}
	if !m.opt.Pack {
		tb := m.opt.TBucket
		l.B, l.T = len(seqs), min((maxT+tb-1)/tb*tb, m.maxLen)
		for b := range seqs {
			l.row[b] = b
		}
		return l, nil
	}
	l.packed, l.B = true, 1
	for b, s := range seqs {
		l.off[b] = l.used
		l.used += len(s)
	}
	l.T = packRound(l.used, m.opt.TBucket)
	return l, nil
}

// packRound is the length of a packed row of n tokens: n rounded up to a
// multiple of max(tb, 2^(⌊log₂ n⌋−6)), so padding stays under 1/64 of the
// row (1.6%) while a run meets at most 64 row lengths per octave (one
// compiled graph each).
func packRound(n, tb int) int {
	step := tb
	if n > 0 {
		step = max(tb, 1<<max(0, bits.Len(uint(n))-1-6))
	}
	return (n + step - 1) / step * step
}

// at is the graph row (b·T + t) of sequence b's token t.
func (l *layout) at(b, t int) int { return l.row[b]*l.T + l.off[b] + t }

// fill writes the batch's ids (pad 0), next-token targets (−1 past each
// sequence's last prediction), and the mask: Lens per row, and, packed,
// positions and KStart.
func (l *layout) fill(b *graph.Batch, seqs [][]int32) {
	N := b.B * b.T
	if len(b.IDs) != N {
		b.IDs, b.Targets = make([]int32, N), make([]int32, N)
	}
	if len(b.Lens) != b.B {
		b.Lens = make([]int32, b.B)
	}
	if !l.packed {
		b.Pos, b.KStart = nil, nil
		for r, s := range seqs {
			b.Lens[r] = int32(len(s))
			for t := 0; t < b.T; t++ {
				i := r*b.T + t
				b.IDs[i], b.Targets[i] = 0, -1
				if t < len(s) {
					b.IDs[i] = s[t]
				}
				if t+1 < len(s) {
					b.Targets[i] = s[t+1]
				}
			}
		}
		return
	}
	if len(b.Pos) != N {
		b.Pos, b.KStart = make([]int32, N), make([]int32, N)
	}
	b.Lens[0] = int32(l.used)
	for i := l.used; i < N; i++ {
		b.IDs[i], b.Targets[i], b.Pos[i], b.KStart[i] = 0, -1, 0, int32(l.used)
	}
	for k, s := range seqs {
		o := l.off[k]
		for t, id := range s {
			b.IDs[o+t], b.Pos[o+t], b.KStart[o+t], b.Targets[o+t] = id, int32(t), int32(o), -1
			if t+1 < len(s) {
				b.Targets[o+t] = s[t+1]
			}
		}
	}
}

// GraphTokens is the number of token rows (B·T) the graph of a micro-batch
// of sequences of these lengths computes: their sum and the padding of
// the layout (Options.Pack).
func (m *Model) GraphTokens(lengths []int) int {
	if len(lengths) == 0 {
		return 0
	}
	n, mx := 0, 0
	for _, x := range lengths {
		n += x
		mx = max(mx, x)
	}
	if m.opt.Pack {
		return packRound(n, m.opt.TBucket)
	}
	tb := m.opt.TBucket
	return len(lengths) * min((mx+tb-1)/tb*tb, m.maxLen)
}

// outputs reads the executor's per-token outputs back to [b][t] form.
func (m *Model) outputs(ex *graph.Executor, mg *modelGraph, seqs [][]int32, l *layout) (*Outputs, error) {
	lp, err := ex.Read(mg.lp)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	ent, err := ex.Read(mg.ent)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	o := &Outputs{LogProbs: make([][]float32, len(seqs)), Entropy: make([][]float32, len(seqs))}
	for b, s := range seqs {
		o.LogProbs[b] = make([]float32, len(s))
		o.Entropy[b] = make([]float32, len(s))
		for t := 1; t < len(s); t++ { // row t−1 predicts token t
			o.LogProbs[b][t] = lp[l.at(b, t-1)]
			o.Entropy[b][t] = ent[l.at(b, t-1)]
		}
	}
	if mg.value != nil {
		v, err := ex.Read(mg.value)
		if err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		o.Values = make([][]float32, len(seqs))
		for b, s := range seqs {
			o.Values[b] = append([]float32(nil), v[l.at(b, 0):l.at(b, len(s))]...)
		}
	}
	return o, nil
}

// flatGrad lays a host gradient [b][t] out as the graph's [B·T] rows:
// shifted by one for log-probs (row t−1 holds token t), as is for values.
func flatGrad(g [][]float32, seqs [][]int32, l *layout, shift bool, what string) ([]float32, error) {
	out := make([]float32, l.B*l.T)
	if g == nil {
		return out, nil
	}
	if len(g) != len(seqs) {
		return nil, fmt.Errorf("model: Step: Grads.%s has %d rows, the batch %d", what, len(g), len(seqs))
	}
	for b, s := range seqs {
		if g[b] == nil {
			continue
		}
		if len(g[b]) != len(s) {
			return nil, fmt.Errorf("model: Step: Grads.%s[%d] has %d entries, sequence %d has %d tokens", what, b, len(g[b]), b, len(s))
		}
		for t := range s {
			switch {
			case shift && t >= 1:
				out[l.at(b, t-1)] = g[b][t]
			case !shift:
				out[l.at(b, t)] = g[b][t]
			}
		}
	}
	return out, nil
}
