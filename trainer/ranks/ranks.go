// Package ranks runs a training step's work on the ranks of a
// data-parallel run (docs/design.md, "Data parallelism"). A recipe makes
// one Team per run (trainer.ClaimRun) and runs every phase of a step
// through it: Map and Fold for the phases whose results every rank needs
// (rollouts, rewards, values, log-probs, validation), Accumulate for the
// one special case, the gradient sum. On one process they are a plain
// loop over the micro-batches.
//
// The split. A phase's items in step order (SFT: sequences; RL: prompts,
// or the rollouts of a mini-batch) are dealt like cards into S shares
// (dist.shares, one per rank by default): micro-batch j to share j mod S,
// or, when the step has fewer micro-batches than shares, item i to share
// i mod S (Team.Deal). Rank r of N holds shares [r·S/N, (r+1)·S/N). A
// share cuts its items, in order, into micro-batches of at most the
// phase's size, so with optim.grad_accum a multiple of S every
// micro-batch is one of the Batcher's, exactly as one process runs it.
// Every rank runs the same Batcher (same seed), so every rank knows the
// whole step: the data cursor is global and a checkpoint resumes on any
// number of ranks. Dealing (rather than contiguous blocks) balances the
// ranks: a step group is sorted longest first.
//
// The sums. Accumulate sums the gradients of each share on its own and
// adds the shares' sums in share order; AllReduce then adds the ranks'
// sums in rank order, so every trainable gradient is
//
//	G = ((g₀ + g₁) + g₂) + … + g_{S−1},  g_s = share s's micro-batches accumulated in order,
//
// before clipping and AdamW, the same bytes on every rank. N = S ranks and
// one process with dist.shares: S form exactly these sums, from exactly
// these micro-batches, so their weights are byte-identical. One process
// with its default S = 1 forms the same sums as N ranks when each rank
// holds one micro-batch per update; otherwise they differ by the float32
// rounding of differently grouped sums (docs/design.md). Fold's
// accumulators are per share too and come back in share order, so a
// caller that adds them in that order gets the same bytes on any number
// of ranks.
//
// A phase, for instance the critic's values of a step's rollouts:
//
//	dealt := team.Deal(len(prompts), batchSize)       // once per step: each prompt's share
//	vs, err := ranks.Map(team, dealtOfItems, micro, func(b ranks.Batch) ([][]float32, error) {
//		… one model call on items b.At …
//		return perItem, nil                         // one result per b.At, in order
//	})                                                // vs[i]: item i's values, on every rank
//
// Micro-batches are cut in one place, Team.Batches (at most size items of
// a share each, in order); with a token budget (optim.micro_tokens,
// UseTokens) a phase that gives its items' lengths is cut by tokens
// instead (trainer/batch Cut: at most the budget's graph tokens per
// micro-batch, in order), and DealTokens deals its items to the shares by
// tokens (batch.Deal), functions of the lengths and S alone, so N ranks
// and one process with dist.shares: N still cut alike.
//
// Failures. Every collective is preceded by a Check that carries this
// rank's error, and every recipe ends with one (Settle), so a rank that
// fails meets the others at their next Check and every rank returns its
// error; one that hangs is ended by the collectives' timeout.
package ranks

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/batch"
)

// Team is this process's place among the ranks of a run.
type Team struct {
	comm   dist.Comm
	shares int // S
	per    int // shares per rank, S/N

	// budget > 0 (optim.micro_tokens) cuts phases with lengths by tokens:
	// cost is the tokens a micro-batch's graph computes (model.GraphTokens).
	budget int
	cost   func(lengths []int) int

	stash []kernels.Buffer // the earlier shares' gradient sums, while the next one accumulates
	be    kernels.Backend  // stash's backend
	times commTimes        // since the last TakeTimes
}

// UseTokens makes the team deal and cut by tokens: micro-batches of at
// most budget tokens by cost (budget ≤ 0: items, as before).
func (t *Team) UseTokens(budget int, cost func(lengths []int) int) { t.budget, t.cost = budget, cost }

// Budget is the token budget of UseTokens (0: none).
func (t *Team) Budget() int { return t.budget }

// DealTokens is Deal for items of these lengths: with a token budget,
// each item goes to the share with the fewest tokens so far (batch.Deal).
func (t *Team) DealTokens(lengths []int, size int) []int {
	if t.budget <= 0 {
		return t.Deal(len(lengths), size)
	}
	return batch.Deal(lengths, t.shares)
}

// commTimes is the time a step spent in its gradient all-reduces: waiting
// at the Check before them (the other ranks still computing) and in the
// all-reduce itself.
type commTimes struct{ wait, reduce time.Duration }

// New returns the team of c (nil: one process) with dist.shares s (0: one
// per rank).
func New(c dist.Comm, s int) (*Team, error) {
	if c == nil {
		c = dist.Single()
	}
	n := c.Size()
	if s == 0 {
		s = n
	}
	if s < 1 || s%n != 0 {
		return nil, fmt.Errorf("key \"dist.shares\": %d is not a multiple of the %d ranks (0: one share per rank)", s, n)
	}
	return &Team{comm: c, shares: s, per: s / n}, nil
}

// One is the team of one process with one share.
func One() *Team { return &Team{comm: dist.Single(), shares: 1, per: 1} }

// Size is the number of ranks.
func (t *Team) Size() int { return t.comm.Size() }

// Lead reports whether this is rank 0, the one that writes the run.
func (t *Team) Lead() bool { return t.comm.Rank() == 0 }

// Shares is S, the number of shares of every phase.
func (t *Team) Shares() int { return t.shares }

// Comm is the team's communicator.
func (t *Team) Comm() dist.Comm { return t.comm }

// MostItems is the most of n items that one rank holds when they are
// dealt item by item.
func (t *Team) MostItems(n int) int { return t.per * ((n + t.shares - 1) / t.shares) }

// Describe is the one-line summary of the split, "" on one process with
// one share.
func (t *Team) Describe() string {
	switch {
	case t.Size() > 1:
		return fmt.Sprintf("%d ranks, %d shares per step (%d per rank)", t.Size(), t.shares, t.per)
	case t.shares > 1:
		return fmt.Sprintf("one process summing %d shares per step as %d ranks would (dist.shares)", t.shares, t.shares)
	}
	return ""
}

// Deal returns the share of each of n items of a step (or of an
// evaluation) in micro-batches of size (the package header).
func (t *Team) Deal(n, size int) []int {
	size = max(1, size)
	out := make([]int, n)
	whole := (n+size-1)/size >= t.shares
	for i := range out {
		if whole {
			out[i] = (i / size) % t.shares
		} else {
			out[i] = i % t.shares
		}
	}
	return out
}

// holds reports whether this rank holds share s.
func (t *Team) holds(s int) bool { return s/t.per == t.comm.Rank() }

// byShare returns the positions of each share's items, in order.
func (t *Team) byShare(shareOf []int) [][]int {
	out := make([][]int, t.shares)
	for i, s := range shareOf {
		out[s] = append(out[s], i)
	}
	return out
}

// Batch is one micro-batch of a phase: the positions of its items among
// the phase's items, the share they were dealt to, and its index in the
// phase's micro-batches of every share (the same on every rank).
type Batch struct {
	Share int
	Index int
	At    []int
}

// Batches cuts items dealt to shareOf (Deal) into the micro-batches of
// every share, share by share, each of at most size items (size ≤ 0: a
// share's items in one batch), or, with a token budget and the items'
// lengths (lens, nil: none), of at most the budget's tokens (batch.Cut).
func (t *Team) Batches(shareOf []int, size int, lens []int) []Batch {
	var out []Batch
	for s, at := range t.byShare(shareOf) {
		var ls []int
		if lens != nil {
			ls = make([]int, len(at))
			for k, i := range at {
				ls[k] = lens[i]
			}
		}
		for _, mb := range t.Cut(len(at), size, ls) {
			b := Batch{Share: s, Index: len(out)}
			for _, k := range mb {
				b.At = append(b.At, at[k])
			}
			out = append(out, b)
		}
	}
	return out
}

// Cut cuts n items held in one place into consecutive micro-batches
// (positions 0…n−1), as Batches cuts a share: with a token budget and the
// items' lengths (lens, nil: none), at most the budget's graph tokens each
// (batch.Cut); otherwise at most size items each (size ≤ 0: all in one).
// A phase that runs a share's items in one call (the reference's log-probs,
// which swap weights once per call) cuts them with it.
func (t *Team) Cut(n, size int, lens []int) [][]int {
	if t.budget > 0 && lens != nil {
		return batch.Cut(lens[:n], t.budget, t.cost)
	}
	if size <= 0 {
		size = max(1, n)
	}
	var out [][]int
	for lo := 0; lo < n; lo += size {
		mb := make([]int, 0, min(size, n-lo))
		for i := lo; i < min(lo+size, n); i++ {
			mb = append(mb, i)
		}
		out = append(out, mb)
	}
	return out
}

// Fold runs fn on every micro-batch this rank holds (Batches(shareOf,
// size, lens)), share by share, with the accumulator of the batch's share, and
// returns every share's accumulator, in share order, on every rank: A
// travels between ranks (encoding/gob: exported fields). fn's first
// error stops the rank's work and every rank returns an error.
func Fold[A any](t *Team, shareOf []int, size int, lens []int, fn func(b Batch, acc *A) error) ([]A, error) {
	accs := make([]A, t.shares)
	var err error
	for _, b := range t.Batches(shareOf, size, lens) {
		if !t.holds(b.Share) {
			continue
		}
		if err = fn(b, &accs[b.Share]); err != nil {
			break
		}
	}
	return exchange(t, err, accs)
}

// Map runs fn on every micro-batch this rank holds, share by share; fn
// returns one result per item of the batch (b.At), in order. Every rank
// receives every item's result, by position: R travels between ranks
// (encoding/gob). This rank's own results are returned as fn gave them.
func Map[R any](t *Team, shareOf []int, size int, lens []int, fn func(b Batch) ([]R, error)) ([]R, error) {
	per, err := Fold(t, shareOf, size, lens, func(b Batch, acc *[]R) error {
		rs, err := fn(b)
		if err == nil && len(rs) != len(b.At) {
			err = fmt.Errorf("%d results for %d items", len(rs), len(b.At))
		}
		*acc = append(*acc, rs...)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]R, len(shareOf))
	for s, at := range t.byShare(shareOf) {
		if len(per[s]) != len(at) {
			return nil, fmt.Errorf("dist: share %d sent %d results for its %d items", s, len(per[s]), len(at))
		}
		for k, i := range at {
			out[i] = per[s][k]
		}
	}
	return out, nil
}

// exchange returns the accumulators of every share: this rank's as they
// are, the others' from the ranks holding them. err is this rank's
// failure so far (checked first).
func exchange[A any](t *Team, err error, accs []A) ([]A, error) {
	if t.Size() == 1 {
		return accs, err
	}
	lo := t.per * t.comm.Rank()
	var buf bytes.Buffer
	if err == nil {
		if e := gob.NewEncoder(&buf).Encode(accs[lo : lo+t.per]); e != nil {
			err = fmt.Errorf("dist: encode: %w", e)
		}
	}
	parts, err := t.Gather(err, buf.Bytes())
	if err != nil {
		return nil, err
	}
	for r, p := range parts {
		if r == t.comm.Rank() {
			continue
		}
		var v []A
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&v); err != nil {
			return nil, fmt.Errorf("dist: rank %d's data: %w", r, err)
		}
		if len(v) != t.per {
			return nil, fmt.Errorf("dist: rank %d sent %d values for its %d shares", r, len(v), t.per)
		}
		copy(accs[r*t.per:], v)
	}
	return accs, nil
}

// Accumulate is Fold for a backward pass: it zeroes the params'
// gradients, runs fn on every micro-batch this rank holds, summing each
// share's gradients on its own and adding the sums in share order, then,
// after a Check that tells every rank of any rank's failure, all-reduces
// them: on return every rank holds the phase's gradients and every
// share's accumulator. It also returns the number of micro-batches of
// every rank.
func Accumulate[A any](t *Team, be kernels.Backend, params []*model.Param, shareOf []int, size int, lens []int, fn func(b Batch, acc *A) error) ([]A, int, error) {
	batches := t.Batches(shareOf, size, lens)
	for _, p := range params {
		be.Fill(p.G, 0)
	}
	accs := make([]A, t.shares)
	var err error
	cur, started, stashed := -1, false, false
	for _, b := range batches {
		if !t.holds(b.Share) {
			continue
		}
		if b.Share != cur {
			if stashed {
				t.addStash(params)
			}
			if started {
				t.stashGrads(be, params)
			}
			cur, started, stashed = b.Share, true, started
		}
		if err = fn(b, &accs[b.Share]); err != nil {
			break
		}
	}
	if err == nil && stashed {
		t.addStash(params)
		if err = be.Sync(); err != nil {
			err = fmt.Errorf("sum of shares: %w", err)
		}
	}
	if t.Size() > 1 {
		err = t.allReduce(err, be, params)
	}
	accs, err = exchange(t, err, accs)
	return accs, len(batches), err
}

// allReduce sums the params' gradients over the ranks after a Check of err.
func (t *Team) allReduce(err error, be kernels.Backend, params []*model.Param) error {
	t0 := time.Now()
	if err = t.Check(err); err != nil {
		return err
	}
	t1 := time.Now()
	grads := make([]kernels.Buffer, len(params))
	for i, p := range params {
		grads[i] = p.G
	}
	if err := t.comm.AllReduce(be, grads...); err != nil {
		return fmt.Errorf("gradient all-reduce: %w", err)
	}
	t.times.wait += t1.Sub(t0)
	t.times.reduce += time.Since(t1)
	return nil
}

// stashGrads moves the gradients into the stash and zeroes them.
func (t *Team) stashGrads(be kernels.Backend, params []*model.Param) {
	if t.stash == nil {
		t.be = be
		t.stash = make([]kernels.Buffer, len(params))
		for i, p := range params {
			t.stash[i] = be.Alloc(kernels.F32, p.Len())
		}
	}
	for i, p := range params {
		be.Copy(t.stash[i], p.G)
		be.Fill(p.G, 0)
	}
}

// addStash sets each gradient to stash + gradient (one float32 rounding,
// as AllReduce adds two ranks' sums).
func (t *Team) addStash(params []*model.Param) {
	for i, p := range params {
		t.be.AXPBY(p.G, t.stash[i], p.G, 1, 1, p.Len())
	}
}

// TakeTimes adds and resets the all-reduce times, as metrics (none on one
// process).
func (t *Team) TakeTimes(m map[string]float64) {
	if t.Size() > 1 {
		m["time_allreduce_s"], m["time_wait_s"] = t.times.reduce.Seconds(), t.times.wait.Seconds()
	}
	t.times = commTimes{}
}

// Free releases the stash.
func (t *Team) Free() {
	if t == nil {
		return
	}
	for _, b := range t.stash {
		t.be.Free(b)
	}
	t.stash = nil
}

// Check: every rank learns whether any rank failed. An error every rank
// already shares (Shared) needs none.
func (t *Team) Check(err error) error {
	if err != nil && Shared(err) {
		return err
	}
	return t.comm.Check(err)
}

// Gather is a Check of err, then an all-gather of b.
func (t *Team) Gather(err error, b []byte) ([][]byte, error) {
	if err := t.Check(err); err != nil {
		return nil, err
	}
	return t.comm.AllGather(b)
}

// Signal agrees on a stop: the first signal any rank received (lowest
// rank first), 0 when none did, so that every rank stops at the same step.
func (t *Team) Signal(local syscall.Signal) (syscall.Signal, error) {
	if t.Size() == 1 {
		return local, nil
	}
	parts, err := t.Gather(nil, []byte{byte(local)})
	if err != nil {
		return 0, err
	}
	for _, p := range parts {
		if len(p) == 1 && p[0] != 0 {
			return syscall.Signal(p[0]), nil
		}
	}
	return 0, nil
}

// settled is an error every rank of a run ended with alike.
type settled struct{ err error }

func (e *settled) Error() string { return e.err.Error() }
func (e *settled) Unwrap() error { return e.err }

// Shared reports whether err ended every rank of a data-parallel run, the
// failing rank's message included, so that rank 0's report of it
// suffices.
func Shared(err error) bool {
	var re *dist.RankError
	var se *settled
	return errors.As(err, &re) || errors.As(err, &se)
}

// Settle ends a recipe on every rank of c (nil: one process): a Check of
// its result (nil: it finished), so that a rank that failed between
// collectives makes every rank return its error. An error every rank
// already shares is returned as the Check that shared it said it ("rank
// R: …", without what this rank was doing when it learned it); the same
// message on every failing rank, this one included, is returned once, as
// this rank's own error.
func Settle(c dist.Comm, err error) error {
	if c == nil || c.Size() == 1 {
		return err
	}
	if err != nil && Shared(err) {
		return checkResult(err)
	}
	e := c.Check(err)
	if e == nil {
		return nil
	}
	if err != nil && sameMessage(e, err.Error()) {
		return &settled{err}
	}
	return e
}

// checkResult returns the outermost error in err's chain that a Check
// returned (a *dist.RankError or a join of them) or Settle made, err
// itself when there is none.
func checkResult(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch x := e.(type) {
		case *dist.RankError, *settled:
			return x
		case interface{ Unwrap() []error }:
			all := true
			for _, y := range x.Unwrap() {
				if _, ok := y.(*dist.RankError); !ok {
					all = false
				}
			}
			if all {
				return e
			}
		}
	}
	return err
}

// sameMessage reports whether every rank error in e says msg.
func sameMessage(e error, msg string) bool {
	errs := []error{e}
	if j, ok := e.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, x := range errs {
		var re *dist.RankError
		if !errors.As(x, &re) || re.Msg != msg {
			return false
		}
	}
	return true
}
