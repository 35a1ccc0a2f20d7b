// Package batch holds the data order of training and the run's random
// streams, the two things a bit-identical resume depends on.
//
// RNG is a named PCG stream (math/rand/v2) seeded from (run.seed, name). Its
// 128-bit state serializes with MarshalBinary and is stored in
// trainer_state.json ("rng": {name: state}; trainer/ckpt), so a resumed run
// draws the same numbers (dropout seeds, rollout uniforms) as one that
// never stopped.
//
// Batcher yields the optimizer steps of training, each a group of
// micro·accum records split into accum micro-batches of up to micro
// records. An epoch's plan is a pure function of (seed, epoch, lengths):
//
//  1. perm = a shuffle of the records by PCG(seed, epoch);
//  2. cut perm into windows of window·micro·accum records and sort each
//     window by length, longest first (stable: ties keep shuffle order);
//  3. cut each window into step groups of micro·accum records (only the
//     epoch's last group may be short), and shuffle the group order with
//     the same PCG, so long and short steps alternate;
//  4. each group is sorted by length and cut into micro-batches.
//
// Sorting inside a window makes micro-batches length-homogeneous, so right
// padding to the batch's longest record wastes little (see the padding test),
// while the window bound keeps the order random at the scale of the epoch.
// window ≤ 1 gives a plain shuffle (groups sorted only within themselves).
// Because a step's records do not depend on how they are split, micro=8,
// accum=1 and micro=1, accum=8 train on the same records in every step.
//
// The position is (epoch, cursor): cursor = the next step group of the
// epoch. Seek(epoch, cursor) rebuilds that epoch's plan, so a resumed run
// continues with exactly the batches of an uninterrupted one.
package batch

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
)

// RNG is a serializable random stream.
type RNG struct {
	*rand.Rand
	src *rand.PCG
}

// NewRNG returns the stream name of the run seeded with seed.
func NewRNG(seed int64, name string) *RNG {
	h := fnv.New64a()
	h.Write([]byte(name))
	src := rand.NewPCG(uint64(seed), h.Sum64())
	return &RNG{Rand: rand.New(src), src: src}
}

// MarshalBinary returns the stream's state.
func (r *RNG) MarshalBinary() ([]byte, error) { return r.src.MarshalBinary() }

// UnmarshalBinary restores a state from MarshalBinary.
func (r *RNG) UnmarshalBinary(b []byte) error {
	if err := r.src.UnmarshalBinary(b); err != nil {
		return fmt.Errorf("rng state: %w", err)
	}
	return nil
}

// StepBatch is one optimizer step's data: record indices per micro-batch.
type StepBatch struct {
	Epoch, Index int     // Index: the step group's position in its epoch
	Micro        [][]int // accum (or fewer, at an epoch's end) micro-batches
}

// Records returns every record index of the step.
func (s StepBatch) Records() []int {
	var out []int
	for _, m := range s.Micro {
		out = append(out, m...)
	}
	return out
}

// Batcher plans epochs of length-bucketed step groups. See the file header.
type Batcher struct {
	lengths      []int
	micro, accum int
	window       int
	seed         int64

	epoch, cursor int
	plan          [][]int // step groups of the current epoch
}

// New plans batches over records with the given lengths (tokens).
func New(lengths []int, micro, accum, window int, seed int64) (*Batcher, error) {
	if len(lengths) == 0 {
		return nil, errors.New("batcher: no training records")
	}
	if micro < 1 || accum < 1 {
		return nil, fmt.Errorf("batcher: micro-batch size %d and accumulation %d must be ≥ 1", micro, accum)
	}
	b := &Batcher{lengths: append([]int(nil), lengths...), micro: micro, accum: accum, window: window, seed: seed}
	b.plan = b.planEpoch(0)
	return b, nil
}

// StepsPerEpoch is ceil(records / (micro·accum)).
func (b *Batcher) StepsPerEpoch() int {
	g := b.micro * b.accum
	return (len(b.lengths) + g - 1) / g
}

// Position returns (epoch, cursor) of the next step.
func (b *Batcher) Position() (epoch, cursor int) { return b.epoch, b.cursor }

// Seek moves to (epoch, cursor); cursor may equal StepsPerEpoch (the
// epoch is done; Next starts the following one).
func (b *Batcher) Seek(epoch, cursor int) error {
	if epoch < 0 || cursor < 0 || cursor > b.StepsPerEpoch() {
		return fmt.Errorf("batcher: position (epoch %d, cursor %d) outside [0, %d] steps per epoch", epoch, cursor, b.StepsPerEpoch())
	}
	if epoch != b.epoch {
		b.plan = b.planEpoch(epoch)
	}
	b.epoch, b.cursor = epoch, cursor
	return nil
}

// Next returns the next step's micro-batches and advances, rolling over
// into the next epoch.
func (b *Batcher) Next() StepBatch {
	if b.cursor >= len(b.plan) {
		b.epoch++
		b.cursor = 0
		b.plan = b.planEpoch(b.epoch)
	}
	g := b.plan[b.cursor]
	s := StepBatch{Epoch: b.epoch, Index: b.cursor}
	for i := 0; i < len(g); i += b.micro {
		s.Micro = append(s.Micro, append([]int(nil), g[i:min(i+b.micro, len(g))]...))
	}
	b.cursor++
	return s
}

// longestFirst sorts idx by length, longest first, keeping ties in order.
func (b *Batcher) longestFirst(idx []int) {
	sort.SliceStable(idx, func(i, j int) bool { return b.lengths[idx[i]] > b.lengths[idx[j]] })
}

func (b *Batcher) planEpoch(epoch int) [][]int {
	rng := rand.New(rand.NewPCG(uint64(b.seed), 0xda7a0000^uint64(epoch)))
	perm := rng.Perm(len(b.lengths))
	gs := b.micro * b.accum
	win := max(1, b.window) * gs
	var groups [][]int
	for lo := 0; lo < len(perm); lo += win {
		w := perm[lo:min(lo+win, len(perm))]
		if b.window > 1 {
			b.longestFirst(w)
		}
		for g := 0; g < len(w); g += gs {
			groups = append(groups, w[g:min(g+gs, len(w))])
		}
	}
	rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	for _, g := range groups {
		b.longestFirst(g)
	}
	return groups
}

// PaddingFraction is the share of padding tokens when each micro-batch is
// right-padded to its longest record: Σ(B·maxlen − Σlen) / Σ(B·maxlen).
func PaddingFraction(lengths []int, micro [][]int) float64 {
	var pad, total int
	for _, mb := range micro {
		mx, sum := 0, 0
		for _, i := range mb {
			mx = max(mx, lengths[i])
			sum += lengths[i]
		}
		total += mx * len(mb)
		pad += mx*len(mb) - sum
	}
	if total == 0 {
		return 0
	}
	return float64(pad) / float64(total)
}
