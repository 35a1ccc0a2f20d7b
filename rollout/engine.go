package rollout

// The scheduler (continuous batching over the paged KV cache): admission,
// steps of decode rows and prefill chunks under a token budget, the G-way
// fork after a prompt's prefill, preemption when the pages run out,
// in-order emission. See rollout.go.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

// seqState is one admitted sequence: a sample, or a group's prompt before
// its G samples are drawn (s nil). Its tokens are the prompt then s.IDs;
// the cache holds a prefix of them, and a step feeds the rest (pending):
// one token while decoding, more after an admission, an environment's
// answer (multi-turn) or a preemption. When the cache has caught up, the
// logits of the last token draw the next one.
type seqState struct {
	g    *groupState
	s    *Sample
	slot int      // the cache sequence, held from admission to the end
	ep   *episode // multi-turn rollouts only (multiturn.go)
}

// drawIndex is the step of the sample's random stream that draws its next
// token: the number of tokens it sampled so far.
func (sq *seqState) drawIndex() int {
	if sq.ep != nil {
		return sq.ep.drawIndex(sq)
	}
	return len(sq.s.IDs)
}

// total is the sequence's token count (prompt and response).
func (sq *seqState) total() int {
	n := len(sq.g.PromptIDs)
	if sq.s != nil {
		n += len(sq.s.IDs)
	}
	return n
}

// tokens returns the sequence's tokens [from, to): a slice of the prompt
// or the response, or a copy in *buf when they span both.
func (sq *seqState) tokens(from, to int, buf *[]int32) []int32 {
	P := len(sq.g.PromptIDs)
	switch {
	case to <= P:
		return sq.g.PromptIDs[from:to]
	case from >= P:
		return sq.s.IDs[from-P : to-P]
	}
	*buf = append(append((*buf)[:0], sq.g.PromptIDs[from:]...), sq.s.IDs[:to-P]...)
	return *buf
}

// groupState is a group being generated.
type groupState struct {
	Group
	left  int   // samples still running
	slots []int // the G cache sequences, reserved at admission
	eps   []*episode
	start time.Time
	// The group's parameters: the call's, or its Request's (Serve).
	p       *Params
	kp      *kernels.SampleParams
	adapter int      // model.KVRow.Adapter
	req     *Request // Serve only
}

// Groups generates p.G samples for each prompt and yields the groups in
// prompt order. Every prompt and parameter is checked before any work; an
// error is yielded once, as the last item. Breaking out of the loop stops
// generation.
//
//	for g, err := range eng.Groups(ctx, prompts, p) {
//		if err != nil { return err }
//		... g.Samples[i].IDs, .LogProbs, .Text, .Offsets ...
//	}
func (e *Engine) Groups(ctx context.Context, prompts []Prompt, p Params) iter.Seq2[*Group, error] {
	return func(yield func(*Group, error) bool) {
		stopped := false
		err := e.run(ctx, prompts, p, func(g *Group) bool {
			if !yield(g, nil) {
				stopped = true
			}
			return !stopped
		})
		if err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// Generate returns every group of Groups, in prompt order.
func (e *Engine) Generate(ctx context.Context, prompts []Prompt, p Params) ([]*Group, error) {
	out := make([]*Group, 0, len(prompts))
	err := e.run(ctx, prompts, p, func(g *Group) bool { out = append(out, g); return true })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Greedy decodes one greedy response per prompt (evaluation): p's G,
// Temperature, TopP and TopK are ignored; MaxNewTokens, StopIDs and Stop
// apply.
func (e *Engine) Greedy(ctx context.Context, prompts []Prompt, p Params) ([]Sample, error) {
	p.G, p.Temperature, p.TopP, p.TopK = 1, 0, 0, 0
	out := make([]Sample, len(prompts))
	err := e.run(ctx, prompts, p, func(g *Group) bool { out[g.Index] = g.Samples[0]; return true })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkPrompts validates every prompt and returns the longest length.
func (e *Engine) checkPrompts(prompts []Prompt) (int, error) {
	longest := 0
	for i, pr := range prompts {
		if len(pr.IDs) == 0 {
			return 0, fmt.Errorf("prompt %d (id %q) is empty: a prompt needs at least one token", i, pr.ID)
		}
		if len(pr.IDs) > e.o.MaxLen {
			return 0, fmt.Errorf("prompt %d (id %q) has %d tokens, more than the context of %d (the model's MaxLen or Options.MaxLen)",
				i, pr.ID, len(pr.IDs), e.o.MaxLen)
		}
		for t, id := range pr.IDs {
			if id < 0 || int(id) >= e.vocab {
				return 0, fmt.Errorf("prompt %d (id %q), token %d: id %d outside the vocabulary [0, %d)", i, pr.ID, t, id, e.vocab)
			}
		}
		longest = max(longest, len(pr.IDs))
	}
	return longest, nil
}

// ensureCache makes the cache hold sequences of tmax tokens; it is
// rebuilt, between calls, only when a call needs longer ones.
func (e *Engine) ensureCache(tmax int) error {
	if e.cache != nil && e.cache.Tmax >= tmax {
		return nil
	}
	tmax = min(e.o.MaxLen, (tmax+63)&^63)
	if e.o.Pages > 0 && e.o.Pages < pagesPerSeq(tmax) {
		return fmt.Errorf("Options.Pages = %d cannot hold one sequence of %d tokens (%d pages of %d)", e.o.Pages, tmax, pagesPerSeq(tmax), model.PageSize)
	}
	if e.cache != nil {
		e.cache.Close()
		e.cache = nil
	}
	c, err := e.m.NewPagedKVCache(model.KVOptions{Seqs: e.o.Batch, MaxLen: tmax, Pages: e.o.Pages, MaxTokens: e.o.MaxTokens, NoSync: true})
	if err != nil {
		return err
	}
	e.cache = c
	return nil
}

// pagesPerSeq is the pages one sequence of n tokens may take: its own,
// plus one for a copy on write.
func pagesPerSeq(n int) int { return (n+model.PageSize-1)/model.PageSize + 1 }

// run is Groups with a callback; yield returning false stops it.
func (e *Engine) run(ctx context.Context, prompts []Prompt, p Params, yield func(*Group) bool) (err error) {
	if p.MaxTurns > 1 {
		return fmt.Errorf("rollout: max_turns %d: multi-turn rollouts run through Episodes", p.MaxTurns)
	}
	return e.runWith(ctx, prompts, p, nil, yield)
}

// runWith is run, multi-turn when mt is set.
func (e *Engine) runWith(ctx context.Context, prompts []Prompt, p Params, mt *multiTurn, yield func(*Group) bool) (err error) {
	t0 := time.Now()
	if err := p.check(e.vocab, e.tok != nil); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if p.G > e.o.Batch {
		return fmt.Errorf("rollout: G = %d samples per prompt exceed the engine's Batch of %d sequences", p.G, e.o.Batch)
	}
	longest, err := e.checkPrompts(prompts)
	if err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	if len(prompts) == 0 {
		return nil
	}
	if p.MaxNewTokens > 0 {
		if err := e.ensureCache(min(e.o.MaxLen, longest+mt.budget(&p))); err != nil {
			return fmt.Errorf("rollout: %w", err)
		}
	}
	if e.o.MergeLoRA && e.m.AdaptersOn() && !e.m.Merged() {
		if err := e.m.Merge(); err != nil {
			return fmt.Errorf("rollout: %w", err)
		}
		defer func() {
			if uerr := e.m.Unmerge(); uerr != nil && err == nil {
				err = fmt.Errorf("rollout: %w", uerr)
			}
		}()
	}
	r := runState{e: e, p: &p, kp: p.kernel(), prompts: prompts, groups: make([]*groupState, len(prompts)), ctx: ctx, mt: mt}
	defer r.closeEpisodes()
	defer r.releaseAll()
	for s := e.o.Batch - 1; s >= 0; s-- {
		r.free = append(r.free, s)
	}
	defer func() {
		e.stats.Elapsed += time.Since(t0)
	}()
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rollout: %w", err)
		}
		for r.next < len(prompts) && len(r.free) >= p.G && r.admissible() {
			if err := r.admit(r.next); err != nil {
				return fmt.Errorf("rollout: prompt %d (id %q): %w", r.next, prompts[r.next].ID, err)
			}
			r.next++
		}
		if !r.emit(yield) {
			return nil
		}
		if len(r.active) == 0 {
			if r.next < len(prompts) {
				continue
			}
			if r.emitted < len(prompts) {
				return errors.New("rollout: internal error: groups left unfinished")
			}
			return nil
		}
		if err := r.step(); err != nil {
			return fmt.Errorf("rollout: %w", err)
		}
	}
}

// runState is one call's scheduler state.
type runState struct {
	e       *Engine
	p       *Params
	kp      kernels.SampleParams
	prompts []Prompt
	groups  []*groupState // by prompt index; nil before admission and after emission
	active  []*seqState   // admitted sequences, admission order (the last is preempted first)
	spare   []*seqState   // the other buffer of active
	forkAt  []int         // per step row: the first draw slot of a prompt's G samples, or -1
	free    []int         // free cache sequences (a stack)
	next    int           // next prompt to admit
	emitted int           // groups yielded

	ctx     context.Context
	mt      *multiTurn // nil: single-turn
	pending []turnEnd  // multi-turn samples whose turn just ended
	open    []*episode // multi-turn episodes opened by this call

	done []*groupState // Serve: groups finished since the last delivery

	rows []model.KVRow
	seqs []*seqState // per row
	bufs [][]int32   // per row: tokens spanning prompt and response
}

// admissible says whether a new prompt may start: no admitted sequence
// waits to be recomputed after a preemption, and the free pages hold the
// prompt (the cache's, not a reservation: steps preempt when they run out).
func (r *runState) admissible() bool {
	c := r.e.cache
	if c == nil {
		return true
	}
	for _, sq := range r.active {
		if c.Len(sq.slot) == 0 && sq.s != nil {
			return false // preempted
		}
	}
	return c.FreePages() >= pagesPerSeq(len(r.prompts[r.next].IDs))
}

// releaseAll empties the cache sequences a failed or stopped call left.
func (r *runState) releaseAll() {
	for _, sq := range r.active {
		_ = r.e.cache.Reset(sq.slot) // in range by construction
	}
	for _, g := range r.groups {
		if g != nil {
			for _, s := range g.slots {
				_ = r.e.cache.Reset(s)
			}
		}
	}
}

// admit starts prompt i: G cache sequences reserved, the prompt queued for
// prefill on the first; its G first tokens are drawn when it is done.
func (r *runState) admit(i int) error {
	pr := r.prompts[i]
	id := pr.ID
	if id == "" {
		id = fmt.Sprint(i)
	}
	g := &groupState{Group: Group{Index: i, ID: id, PromptIDs: pr.IDs, Samples: make([]Sample, r.p.G)}, left: r.p.G, start: time.Now(),
		p: r.p, kp: &r.kp}
	r.groups[i] = g
	return r.admitGroup(i, g)
}

// admitGroup starts group g (prompt i of the call; Serve: 0).
func (r *runState) admitGroup(i int, g *groupState) error {
	e, p, pr := r.e, g.p, Prompt{ID: g.ID, IDs: g.PromptIDs}
	e.stats.Prompts++
	e.stats.Samples += p.G
	e.stats.PromptTokens += len(pr.IDs)
	for s := range g.Samples {
		g.Samples[s].Index = s
	}
	eps, err := r.startEpisodes(i, g)
	if err != nil {
		return err
	}
	if p.MaxNewTokens == 0 || len(pr.IDs) >= e.o.MaxLen {
		f := FinishLength
		if p.MaxNewTokens > 0 {
			f = FinishContext // prompt + response must fit the context
		}
		for s := range g.Samples {
			g.Samples[s].IDs, g.Samples[s].LogProbs = []int32{}, []float32{}
			r.finish(&seqState{g: g, s: &g.Samples[s], slot: -1, ep: eps[s]}, f)
		}
		return nil
	}
	g.slots = append([]int(nil), r.free[len(r.free)-p.G:]...)
	r.free = r.free[:len(r.free)-p.G]
	g.eps = eps
	for _, s := range g.slots {
		if err := e.cache.Reset(s); err != nil {
			return err
		}
	}
	r.active = append(r.active, &seqState{g: g, slot: g.slots[0]})
	return nil
}

// ended returns why sq's newest token ends it (its turn, multi-turn), or "".
func (r *runState) ended(sq *seqState) Finish {
	if sq.ep != nil {
		return sq.ep.ended(r, sq)
	}
	n := len(sq.s.IDs)
	switch {
	case r.e.stopped(sq.s.IDs, sq.g.p):
		return FinishStop
	case n >= sq.g.p.MaxNewTokens:
		return FinishLength
	case len(sq.g.PromptIDs)+n >= r.e.o.MaxLen: // prompt + response fill the context
		return FinishContext
	}
	return ""
}

// finish closes a sample: text, offsets, its cache sequence freed.
func (r *runState) finish(sq *seqState, f Finish) {
	s := sq.s
	s.Finish = f
	if sq.ep != nil {
		r.finishEpisode(sq)
	} else if tok := r.e.tok; tok != nil {
		s.Text, s.Offsets = tok.DecodeOffsets(s.IDs, true)
	}
	if sq.slot >= 0 {
		_ = r.e.cache.Reset(sq.slot) // in range by construction
		r.free = append(r.free, sq.slot)
	}
	g := sq.g
	g.NewTokens += len(s.IDs)
	if g.left--; g.left == 0 {
		g.Elapsed = time.Since(g.start)
		g.slots = nil
		if g.req != nil {
			r.done = append(r.done, g)
		}
	}
}

// plan fills r.rows for one step: every decoding sequence's token, then
// chunks of the pending tokens of the others, in admission order, within
// the token budget and the rows of a pass, skipping preempted.
func (r *runState) plan(skip map[*seqState]bool) {
	e := r.e
	budget := e.o.MaxTokens
	r.rows, r.seqs = r.rows[:0], r.seqs[:0]
	for pass := range 2 {
		for _, sq := range r.active {
			if skip[sq] || len(r.rows) == e.o.Batch || budget == 0 {
				continue
			}
			cached := e.cache.Len(sq.slot)
			pend := sq.total() - cached
			if (pass == 0) != (pend == 1 && sq.s != nil) {
				continue
			}
			n := min(pend, budget)
			if len(r.bufs) <= len(r.rows) {
				r.bufs = append(r.bufs, nil)
			}
			ids := sq.tokens(cached, cached+n, &r.bufs[len(r.rows)])
			r.rows = append(r.rows, model.KVRow{Seq: sq.slot, IDs: ids, Adapter: sq.g.adapter})
			r.seqs = append(r.seqs, sq)
			budget -= n
		}
	}
}

// step runs one pass: plan, preempt until the pages suffice, then draw
// a token for every sequence whose pending tokens are all in.
func (r *runState) step() error {
	e := r.e
	t0 := time.Now()
	var skip map[*seqState]bool
	for {
		r.plan(skip)
		if len(r.rows) == 0 {
			return errors.New("internal error: a step with nothing to run")
		}
		need := e.cache.PagesNeeded(r.rows)
		if need <= e.cache.FreePages() {
			break
		}
		// Preempt the latest admitted sequence that holds pages or wants
		// them: it is recomputed from its tokens when pages free up.
		var victim *seqState
		for i := len(r.active) - 1; i >= 0 && victim == nil; i-- {
			if sq := r.active[i]; !skip[sq] {
				victim = sq
			}
		}
		if victim == nil || len(skip) == len(r.active)-1 { // nothing else to preempt
			return fmt.Errorf("the KV cache's %d pages cannot hold one sequence's next %d tokens (%d pages needed, %d free): raise Options.Pages",
				e.cache.Pages, len(r.rows[0].IDs), need, e.cache.FreePages())
		}
		if skip == nil {
			skip = map[*seqState]bool{}
		}
		skip[victim] = true
		if e.cache.Len(victim.slot) > 0 {
			e.stats.Preemptions++
		}
		if err := e.cache.Reset(victim.slot); err != nil {
			return err
		}
	}
	R := len(r.rows)
	e.stats.MaxRows = max(e.stats.MaxRows, R)
	logits, err := e.cache.Step(r.rows)
	if err != nil {
		return err
	}
	be, V := e.be, e.vocab
	// Rows that draw: the decoding prefix of one sampling setting in one
	// call, then the others row by row (each row is sampled alone either
	// way), then the G first tokens of each prompt whose prefill is done,
	// after the R rows' slots; all come back with one fetch.
	D := 0
	prefill := 0
	n := R
	r.forkAt = r.forkAt[:0]
	for i, sq := range r.seqs {
		done := e.cache.Len(sq.slot) == sq.total()
		if len(r.rows[i].IDs) > 1 || sq.s == nil {
			prefill += len(r.rows[i].IDs)
		}
		at := -1
		if done && sq.s != nil {
			e.u[i] = Uniform(sq.g.p.Seed, sq.g.ID, sq.s.Index, sq.drawIndex())
			if D == i && sq.g.kp == r.seqs[0].g.kp {
				D++
			}
		} else if done {
			at = n
			n += len(sq.g.Samples)
		}
		r.forkAt = append(r.forkAt, at)
	}
	top := 0 // slots [0, top) hold this step's draws (and rows that drew none)
	if D > 0 {
		e.draws.draw(0, logits, e.u[:D], D, V, *r.seqs[0].g.kp) // the first D rows of [R, V]
		top = D
	}
	for i := D; i < R; i++ {
		sq := r.seqs[i]
		if e.cache.Len(sq.slot) != sq.total() {
			continue
		}
		row := be.View(logits, i*V, V)
		if sq.s != nil {
			e.draws.draw(i, row, e.u[i:i+1], 1, V, *sq.g.kp)
			top = max(top, i+1)
			continue
		}
		g := sq.g
		for s := range g.Samples {
			u := []float32{Uniform(g.p.Seed, g.ID, s, 0)}
			e.draws.draw(r.forkAt[i]+s, row, u, 1, V, *g.kp)
		}
		top = max(top, r.forkAt[i]+len(g.Samples))
	}
	if len(e.ids) < n {
		e.ids, e.lpHost = make([]int32, n), make([]float32, n)
	}
	if err := e.draws.fetch(e.ids[:top], e.lpHost[:top]); err != nil {
		return fmt.Errorf("decode step: %w", err)
	}
	// Apply the draws; a completed prompt draws its G first tokens and forks.
	keep := r.spare[:0] // a fork puts G samples where its prompt was
	drawn := map[*seqState]int{}
	for i, sq := range r.seqs {
		drawn[sq] = i
	}
	for _, sq := range r.active {
		i, ran := drawn[sq]
		switch {
		case !ran || e.cache.Len(sq.slot) != sq.total():
			keep = append(keep, sq)
		case sq.s == nil:
			at := r.forkAt[i]
			live, err := r.fork(sq, e.ids[at:at+len(sq.g.Samples)], e.lpHost[at:])
			if err != nil {
				return err
			}
			keep = append(keep, live...)
		default:
			sq.s.IDs = append(sq.s.IDs, e.ids[i])
			sq.s.LogProbs = append(sq.s.LogProbs, e.lpHost[i])
			e.stats.NewTokens++
			sq.g.token(sq.s.Index, e.ids[i], e.lpHost[i])
			if f := r.ended(sq); f != "" {
				if sq.ep != nil {
					r.pending = append(r.pending, turnEnd{sq, f})
				} else {
					r.finish(sq, f)
				}
				continue
			}
			keep = append(keep, sq)
		}
	}
	clear(r.active)
	r.active, r.spare = keep, r.active
	e.stats.DecodeSteps++
	if prefill > 0 {
		e.stats.Prefill += time.Since(t0)
	} else {
		e.stats.Decode += time.Since(t0)
	}
	return r.endTurns()
}

// emit yields the finished groups that come next in prompt order; false
// means the consumer stopped.
func (r *runState) emit(yield func(*Group) bool) bool {
	for r.emitted < len(r.groups) {
		g := r.groups[r.emitted]
		if g == nil || g.left > 0 {
			return true
		}
		r.groups[r.emitted] = nil
		r.emitted++
		out := g.Group
		if !yield(&out) {
			return false
		}
	}
	return true
}
