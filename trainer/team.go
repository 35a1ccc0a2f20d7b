package trainer

// Data parallelism: the ranks of a run and how every step's work is split
// among them (docs/design.md, "Data parallelism"). The recipes read as on
// one process; the rank logic lives here, in the scaffold (run.go) and in
// the pieces of a step (sft.go's step, rl.go's rollOut, score, values,
// reference and update; evaluate.go).
//
// The split. A step's records in Batcher order (SFT: sequences; RL:
// prompts, each with its G rollouts) come in micro-batches of
// optim.batch_size; they are dealt like cards into S shares (dist.shares,
// one per rank by default): micro-batch j to share j mod S, or, when the
// step has fewer micro-batches than shares, record i to share i mod S.
// Rank r of N holds shares [r·S/N, (r+1)·S/N). A share cuts its records,
// in order, into micro-batches of at most optim.batch_size (RL: the
// rollouts it holds of each mini-batch, batch_size·G at most), so with
// optim.grad_accum a multiple of S every micro-batch is one of the
// Batcher's, exactly as one process runs it. Every rank runs the same
// Batcher (same seed), so every rank knows the whole step: the data
// cursor is global and a checkpoint resumes on any number of ranks.
// Dealing (rather than contiguous blocks) balances the ranks: a step
// group is sorted longest first. With optim.micro_tokens the records are
// dealt by tokens instead and each share cuts its records by the budget
// (useTokens; trainer/batch tokens.go).
//
// The sums. A rank sums the gradients of each share it holds on its own
// and adds the shares' sums in share order; AllReduce then adds the ranks'
// sums in rank order, so every trainable gradient is
//
//	G = ((g₀ + g₁) + g₂) + … + g_{S−1},  g_s = share s's micro-batches accumulated in order,
//
// before clipping and AdamW, the same bytes on every rank. N = S ranks and
// one process with dist.shares: S form exactly these sums, from exactly
// these micro-batches, so their weights are byte-identical. One process
// with its default S = 1 forms the same sums as N ranks when each rank
// holds one micro-batch per update (SFT: optim.grad_accum = N; RL: each
// update's rollouts are N micro-batches, ppo.mini_batch = N·batch_size·G
// or 0 with grad_accum = N); otherwise they differ
// by the float32 rounding of differently grouped sums, or of differently
// composed micro-batches (and, with LoRA dropout, by the dropout masks,
// drawn per micro-batch), which AdamW's first steps can amplify well
// beyond 1e-5 on weights whose gradient is near zero. The dropout counter
// counts the step's micro-batches of every share, so it is the same on
// every rank.
//
// What is global. Normalizations that span a step or a mini-batch use the
// counts of every rank: SFT's token mean (each rank knows every record of
// the step), RL's loss_agg (every rank holds every rollout's tokens after
// rollOut), PPO's whitening. The host view of an RL step is global: each
// rank rolls out and scores the prompts of its shares, then every rank
// receives every rollout and its reward (gathered in share order), so
// advantages and metrics are computed alike everywhere; model work
// (values, the reference, the updates) runs on the holder only. Loss
// statistics are summed share by share.
//
// Failures. Every collective of a step is preceded by a Check that carries
// this rank's error, and every recipe ends with one (settle), so a rank
// that fails meets the others at their next Check and every rank returns
// its error; one that hangs is ended by the collectives' timeout.

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

// team is this process's place among the ranks of a run.
type team struct {
	comm   dist.Comm
	shares int // S
	per    int // shares per rank, S/N

	// budget > 0 (optim.micro_tokens) deals and cuts by tokens: cost is
	// the tokens a micro-batch's graph computes (model.GraphTokens).
	budget int
	cost   func(lengths []int) int

	stash []kernels.Buffer // the earlier shares' gradient sums, while the next one accumulates
	be    kernels.Backend  // stash's backend
	times commTimes        // since the last takeTimes
}

// commTimes is the time a step spent in its gradient all-reduces: waiting
// at the Check before them (the other ranks still computing) and in the
// all-reduce itself.
type commTimes struct{ wait, reduce time.Duration }

// newTeam returns the team of c (nil: one process) with dist.shares s.
func newTeam(c dist.Comm, s int) (*team, error) {
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
	return &team{comm: c, shares: s, per: s / n}, nil
}

func (t *team) size() int  { return t.comm.Size() }
func (t *team) lead() bool { return t.comm.Rank() == 0 }

// split returns the share of each of n records of a step (or of an
// evaluation) in micro-batches of size (the file header).
func (t *team) split(n, size int) []int {
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

// useTokens makes the team deal and cut a step's sequences by tokens,
// micro-batches of at most budget graph tokens (optim.micro_tokens; 0
// leaves batch_size rows), after checking, before anything is allocated
// for training, that the graph of such a micro-batch fits in the memory
// the backend has free.
func (t *team) useTokens(budget int, m *model.Model) error {
	if budget <= 0 {
		return nil
	}
	st, err := m.PlanTokens(budget)
	if err != nil {
		return fmt.Errorf("key \"optim.micro_tokens\": %w", err)
	}
	need := model.PlannedBytes(st)
	if free, ok := m.FreeMemory(); ok && need > free {
		return fmt.Errorf("key \"optim.micro_tokens\": a micro-batch of %d tokens plans %.2f GiB (activations %.2f GiB), more than the %.2f GiB free; lower optim.micro_tokens or set model.recompute: layer",
			budget, float64(need)/(1<<30), float64(st.ActivationBytes())/(1<<30), float64(free)/(1<<30))
	}
	t.budget, t.cost = budget, m.GraphTokens
	return nil
}

// splitTokens is split for a step whose records have these lengths: with
// a token budget, batch.Deal's balancing of the shares' tokens.
func (t *team) splitTokens(lengths []int, size int) []int {
	if t.budget <= 0 {
		return t.split(len(lengths), size)
	}
	return batch.Deal(lengths, t.shares)
}

// dealTokens is deal for records of these lengths: with a token budget,
// each share's records are cut by batch.Cut instead of size rows.
func (t *team) dealTokens(size int, shareOf, lengths []int) []chunk {
	if t.budget <= 0 {
		return t.deal(size, shareOf)
	}
	var out []chunk
	for s, at := range t.byShare(shareOf) {
		ls := make([]int, len(at))
		for k, i := range at {
			ls[k] = lengths[i]
		}
		for _, mb := range batch.Cut(ls, t.budget, t.cost) {
			c := chunk{share: s}
			for _, k := range mb {
				c.at = append(c.at, at[k])
			}
			out = append(out, c)
		}
	}
	return out
}

// byShare returns the positions of each share's records, in order.
func (t *team) byShare(shareOf []int) [][]int {
	out := make([][]int, t.shares)
	for i, s := range shareOf {
		out[s] = append(out[s], i)
	}
	return out
}

// holds reports whether this rank holds share s.
func (t *team) holds(s int) bool { return s/t.per == t.comm.Rank() }

// describe is the one-line summary of the split, "" on one process with
// one share.
func (t *team) describe() string {
	switch {
	case t.size() > 1:
		return fmt.Sprintf("%d ranks, %d shares per step (%d per rank)", t.size(), t.shares, t.per)
	case t.shares > 1:
		return fmt.Sprintf("one process summing %d shares per step as %d ranks would (dist.shares)", t.shares, t.shares)
	}
	return ""
}

// mine is the part of perShare (one value per share) this rank holds.
func mine[T any](t *team, perShare []T) []T {
	lo := t.per * t.comm.Rank()
	return perShare[lo : lo+t.per]
}

// chunk is one micro-batch of a step: its share and its records'
// positions (in the step, or in a mini-batch).
type chunk struct {
	share int
	at    []int
}

// deal cuts records into the micro-batches of every share, share by
// share, each of at most size records, record i going to share shareOf[i].
func (t *team) deal(size int, shareOf []int) []chunk {
	var out []chunk
	for s, at := range t.byShare(shareOf) {
		for lo := 0; lo < len(at); lo += size {
			out = append(out, chunk{share: s, at: at[lo:min(lo+size, len(at))]})
		}
	}
	return out
}

// accumulate zeroes the params' gradients, runs step(j) for every chunk j
// this rank holds (chunks share by share, as deal returns them), summing
// each share's gradients on its own and adding the sums in share order,
// then, after a Check that tells every rank of any rank's failure,
// all-reduces them: on return every rank holds the step's gradients.
func (t *team) accumulate(be kernels.Backend, params []*model.Param, chunks []chunk, step func(j int) error) error {
	for _, p := range params {
		be.Fill(p.G, 0)
	}
	var err error
	cur, started, stashed := -1, false, false
	for j, c := range chunks {
		if !t.holds(c.share) {
			continue
		}
		if c.share != cur {
			if stashed {
				t.addStash(params)
			}
			if started {
				t.stashGrads(be, params)
			}
			cur, started, stashed = c.share, true, started
		}
		if err = step(j); err != nil {
			break
		}
	}
	if err == nil && stashed {
		t.addStash(params)
		if err = be.Sync(); err != nil {
			err = fmt.Errorf("sum of shares: %w", err)
		}
	}
	if t.size() == 1 {
		return err
	}
	t0 := time.Now()
	if err = t.sync(err); err != nil {
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
func (t *team) stashGrads(be kernels.Backend, params []*model.Param) {
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
func (t *team) addStash(params []*model.Param) {
	for i, p := range params {
		t.be.AXPBY(p.G, t.stash[i], p.G, 1, 1, p.Len())
	}
}

// takeTimes returns and resets the all-reduce times, as metrics (none on
// one process).
func (t *team) takeTimes(m map[string]float64) {
	if t.size() > 1 {
		m["time_allreduce_s"], m["time_wait_s"] = t.times.reduce.Seconds(), t.times.wait.Seconds()
	}
	t.times = commTimes{}
}

// free releases the stash.
func (t *team) free() {
	for _, b := range t.stash {
		t.be.Free(b)
	}
	t.stash = nil
}

// sync is a Check: every rank learns whether any rank failed. An error
// every rank already shares (Shared) needs none.
func (t *team) sync(err error) error {
	if err != nil && Shared(err) {
		return err
	}
	return t.comm.Check(err)
}

// gather is a sync of err, then an all-gather of b.
func (t *team) gather(err error, b []byte) ([][]byte, error) {
	if err := t.sync(err); err != nil {
		return nil, err
	}
	return t.comm.AllGather(b)
}

// shareValues returns the values of every share in share order, each
// given by the rank holding it: mine are this rank's, one per share it
// holds, in order. err is this rank's failure so far (checked first).
func shareValues[T any](t *team, err error, mine []T) ([]T, error) {
	if err == nil && len(mine) != t.per {
		err = fmt.Errorf("dist: %d values for the %d shares of this rank", len(mine), t.per)
	}
	if t.size() == 1 {
		return mine, err
	}
	var buf bytes.Buffer
	if err == nil {
		if e := gob.NewEncoder(&buf).Encode(mine); e != nil {
			err = fmt.Errorf("dist: encode: %w", e)
		}
	}
	parts, err := t.gather(err, buf.Bytes())
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, t.shares)
	for r, p := range parts {
		var v []T
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&v); err != nil {
			return nil, fmt.Errorf("dist: rank %d's data: %w", r, err)
		}
		if len(v) != t.per {
			return nil, fmt.Errorf("dist: rank %d sent %d values for its %d shares", r, len(v), t.per)
		}
		out = append(out, v...)
	}
	return out, nil
}

// signal agrees on a stop: the first signal any rank received (lowest rank
// first), 0 when none did, so that every rank stops at the same step.
func (t *team) signal(local syscall.Signal) (syscall.Signal, error) {
	if t.size() == 1 {
		return local, nil
	}
	parts, err := t.gather(nil, []byte{byte(local)})
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

// settle ends a recipe on the ranks of c (nil: one process): see
// team.settle.
func settle(c dist.Comm, err error) error {
	if c == nil {
		return err
	}
	return (&team{comm: c}).settle(err)
}

// settled is an error every rank of a run ended with alike.
type settled struct{ err error }

func (e *settled) Error() string { return e.err.Error() }
func (e *settled) Unwrap() error { return e.err }

// Shared reports whether err ended every rank of a data-parallel run, the
// failing rank's message included, so that rank 0's report of it
// suffices (train prints a failure from ranks > 0 only when it is not).
func Shared(err error) bool {
	var re *dist.RankError
	var se *settled
	return errors.As(err, &re) || errors.As(err, &se)
}

// settle ends a recipe on every rank: a Check of its result (nil: it
// finished), so that a rank that failed between collectives makes every
// rank return its error. An error every rank already shares is returned
// as the Check that shared it said it ("rank R: …", without what this
// rank was doing when it learned it); the same message on every failing
// rank, this one included, is returned once, as this rank's own error.
func (t *team) settle(err error) error {
	if t == nil || t.size() == 1 {
		return err
	}
	if err != nil && Shared(err) {
		return checkResult(err)
	}
	e := t.comm.Check(err)
	if e == nil {
		return nil
	}
	if err != nil && sameMessage(e, err.Error()) {
		return &settled{err}
	}
	return e
}

// checkResult returns the outermost error in err's chain that a Check
// returned (a *dist.RankError or a join of them) or settle made, err
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
