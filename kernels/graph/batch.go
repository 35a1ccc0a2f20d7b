package graph

import (
	"fmt"
	"sync/atomic"
)

// Batch holds the integer side inputs of one step. A graph is built once per
// (B, T) shape around one *Batch; ops keep the pointer and read the fields
// when they run, so the caller refills the slices before each Forward and the
// same compiled graph serves every step.
//
//	IDs      [N]  input token ids (Embedding)
//	Targets  [N]  next-token ids for LogProbs; < 0 masks a position (lp = 0, no gradient)
//	Pos      [N]  RoPE positions; nil means t for row b·T+t
//	Lens     [B]  valid length of each right-padded row (Attention); nil means T
//	KStart   [N]  first key each query may see (kernels.AttnParams.KStart):
//	              packed rows, several sequences end to end; nil means 0
//	Seed          dropout seed of this step (each Dropout op mixes in its own site)
//	Eval          disables dropout (reference / old log-probs)
type Batch struct {
	B, T    int
	IDs     []int32
	Targets []int32
	Pos     []int32
	Lens    []int32
	KStart  []int32
	Seed    uint64
	Eval    bool

	sites  atomic.Uint64 // dropout sites handed out
	defPos []int32       // cached default positions
}

// NewBatch returns the Batch of a graph over B rows of T tokens.
func NewBatch(B, T int) *Batch { return &Batch{B: B, T: T} }

// N is B·T, the number of token rows.
func (b *Batch) N() int { return b.B * b.T }

func (b *Batch) check() error {
	if b == nil {
		return fmt.Errorf("graph: nil *Batch")
	}
	if b.B <= 0 || b.T <= 0 {
		return fmt.Errorf("graph: Batch shape B=%d T=%d must be positive", b.B, b.T)
	}
	return nil
}

func (b *Batch) ids() ([]int32, error) {
	if len(b.IDs) != b.N() {
		return nil, fmt.Errorf("Batch.IDs has %d ids, want B·T = %d", len(b.IDs), b.N())
	}
	return b.IDs, nil
}

func (b *Batch) targets() ([]int32, error) {
	if len(b.Targets) != b.N() {
		return nil, fmt.Errorf("Batch.Targets has %d ids, want B·T = %d", len(b.Targets), b.N())
	}
	return b.Targets, nil
}

func (b *Batch) positions() ([]int32, error) {
	if b.Pos != nil {
		if len(b.Pos) != b.N() {
			return nil, fmt.Errorf("Batch.Pos has %d positions, want B·T = %d", len(b.Pos), b.N())
		}
		return b.Pos, nil
	}
	if len(b.defPos) != b.N() {
		b.defPos = make([]int32, b.N())
		for i := range b.defPos {
			b.defPos[i] = int32(i % b.T)
		}
	}
	return b.defPos, nil
}

func (b *Batch) lens() ([]int32, error) {
	if b.Lens == nil {
		return nil, nil
	}
	if len(b.Lens) != b.B {
		return nil, fmt.Errorf("Batch.Lens has %d lengths, want B = %d", len(b.Lens), b.B)
	}
	for i, l := range b.Lens {
		if l < 0 || int(l) > b.T {
			return nil, fmt.Errorf("Batch.Lens[%d] = %d outside [0, T=%d]", i, l, b.T)
		}
	}
	return b.Lens, nil
}

func (b *Batch) kstart() ([]int32, error) {
	if b.KStart == nil {
		return nil, nil
	}
	if len(b.KStart) != b.N() {
		return nil, fmt.Errorf("Batch.KStart has %d entries, want B·T = %d", len(b.KStart), b.N())
	}
	for i, s := range b.KStart {
		if s < 0 || int(s) > b.T {
			return nil, fmt.Errorf("Batch.KStart[%d] = %d outside [0, T=%d]", i, s, b.T)
		}
	}
	return b.KStart, nil
}

// site hands out a new dropout site; the forward and backward of one Dropout
// share it, so they draw the same mask.
func (b *Batch) site() uint64 { return b.sites.Add(1) }

// seedFor mixes the step seed with a dropout site (splitmix64 finalizer).
func (b *Batch) seedFor(site uint64) uint64 {
	z := b.Seed ^ (site * 0xD1B54A32D192ED03)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
