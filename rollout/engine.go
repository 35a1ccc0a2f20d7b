package rollout

// The scheduler: admission (prefill once, draw G first tokens, fork),
// ragged decode steps, slot recycling, in-order emission. See rollout.go.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/argrl/argrl/kernels"
)

// seqState is one running sample.
type seqState struct {
	g    *groupState
	s    *Sample
	slot int
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

// groupState is a group being generated.
type groupState struct {
	Group
	left  int // samples still running
	start time.Time
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

// ensureCache makes the cache hold at least tmax positions per slot; it
// only grows, between calls.
func (e *Engine) ensureCache(tmax int) error {
	if e.cache != nil && e.cache.Tmax >= tmax {
		return nil
	}
	tmax = min(e.o.MaxLen, (tmax+63)&^63)
	if e.cache != nil {
		e.cache.Close()
		e.cache = nil
	}
	c, err := e.m.NewKVCache(e.o.Batch, tmax, e.o.Batch)
	if err != nil {
		return err
	}
	e.cache = c
	return nil
}

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
		return fmt.Errorf("rollout: G = %d samples per prompt exceed the engine's Batch of %d slots", p.G, e.o.Batch)
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
	e.maxStopText = 0
	for _, s := range p.Stop {
		e.maxStopText = max(e.maxStopText, len(s))
	}
	r := runState{e: e, p: &p, kp: p.kernel(), prompts: prompts, groups: make([]*groupState, len(prompts)), ctx: ctx, mt: mt}
	defer r.closeEpisodes()
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
		for r.next < len(prompts) && len(r.free) >= p.G {
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
	active  []*seqState   // running samples, admission order
	free    []int         // free slots (a stack)
	next    int           // next prompt to admit
	emitted int           // groups yielded

	ctx     context.Context
	mt      *multiTurn // nil: single-turn
	pending []turnEnd  // multi-turn samples whose turn just ended
	open    []*episode // multi-turn episodes opened by this call
}

// admit starts prompt i: one prefill, G first tokens from its logits, a
// fork of the prefilled slot into the other live samples' slots.
func (r *runState) admit(i int) error {
	e, p, pr := r.e, r.p, r.prompts[i]
	t0 := time.Now()
	id := pr.ID
	if id == "" {
		id = fmt.Sprint(i)
	}
	g := &groupState{Group: Group{Index: i, ID: id, PromptIDs: pr.IDs, Samples: make([]Sample, p.G)}, left: p.G, start: t0}
	r.groups[i] = g
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
	slots := append([]int(nil), r.free[len(r.free)-p.G:]...)
	r.free = r.free[:len(r.free)-p.G]
	for _, s := range slots {
		if err := e.cache.Reset(s); err != nil {
			return err
		}
	}
	logits, err := e.cache.Prefill(slots[0], pr.IDs)
	if err != nil {
		return err
	}
	be, V := e.be, e.vocab
	for s := range p.G {
		e.u[s] = Uniform(p.Seed, id, s, 0)
		be.Sample(e.ids[s:s+1], logits, e.u[s:s+1], 1, V, r.kp)
		be.LogProbs(e.lpView[1], e.lseView[1], nil, logits, e.ids[s:s+1], 1, V)
		be.CopyOut(e.lpHost[s:s+1], e.lpView[1])
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("first token: %w", err)
	}
	capN := min(p.MaxNewTokens, e.o.MaxLen-len(pr.IDs))
	var live []*seqState
	var forks []int
	for s := range p.G {
		smp := &g.Samples[s]
		smp.IDs = append(make([]int32, 0, capN), e.ids[s])
		smp.LogProbs = append(make([]float32, 0, capN), e.lpHost[s])
		sq := &seqState{g: g, s: smp, slot: slots[s], ep: eps[s]}
		if f := r.ended(sq); f != "" {
			if sq.ep == nil {
				r.finish(sq, f)
				continue
			}
			r.pending = append(r.pending, turnEnd{sq, f}) // its turn ended, its episode goes on
		} else {
			live = append(live, sq)
		}
		if s > 0 {
			forks = append(forks, slots[s])
		}
	}
	if len(forks) > 0 {
		if err := e.cache.Fork(slots[0], forks); err != nil {
			return err
		}
	}
	r.active = append(r.active, live...)
	e.stats.NewTokens += p.G
	e.stats.Prefill += time.Since(t0)
	return r.endTurns()
}

// ended returns why sq's newest token ends it (its turn, multi-turn), or "".
func (r *runState) ended(sq *seqState) Finish {
	if sq.ep != nil {
		return sq.ep.ended(r, sq)
	}
	n := len(sq.s.IDs)
	switch {
	case r.e.stopped(sq.s.IDs, r.p):
		return FinishStop
	case n >= r.p.MaxNewTokens:
		return FinishLength
	case len(sq.g.PromptIDs)+n >= r.e.o.MaxLen: // prompt + response fill the context
		return FinishContext
	}
	return ""
}

// finish closes a sample: text, offsets, its slot back to the free list.
func (r *runState) finish(sq *seqState, f Finish) {
	s := sq.s
	s.Finish = f
	if sq.ep != nil {
		r.finishEpisode(sq)
	} else if tok := r.e.tok; tok != nil {
		s.Text, s.Offsets = tok.DecodeOffsets(s.IDs, true)
	}
	if sq.slot >= 0 {
		r.free = append(r.free, sq.slot)
	}
	g := sq.g
	g.NewTokens += len(s.IDs)
	if g.left--; g.left == 0 {
		g.Elapsed = time.Since(g.start)
	}
}

// step feeds every active sample its newest token and draws the next.
func (r *runState) step() error {
	e, p := r.e, r.p
	t0 := time.Now()
	B := len(r.active)
	for b, sq := range r.active {
		n := len(sq.s.IDs)
		e.slots[b], e.toks[b] = sq.slot, sq.s.IDs[n-1]
		e.u[b] = Uniform(p.Seed, sq.g.ID, sq.s.Index, sq.drawIndex())
	}
	W := B // step width: real rows, then dummy rows on free slots
	for _, s := range r.free {
		if W >= e.o.DecodeRows {
			break
		}
		if err := e.cache.Reset(s); err != nil {
			return err
		}
		e.slots[W], e.toks[W] = s, 0
		W++
	}
	logits, err := e.cache.Decode(e.slots[:W], e.toks[:W])
	if err != nil {
		return err
	}
	be := e.be
	be.Sample(e.ids[:B], logits, e.u[:B], B, e.vocab, r.kp) // the first B rows of [W, V]
	be.LogProbs(e.lpView[B], e.lseView[B], nil, logits, e.ids[:B], B, e.vocab)
	be.CopyOut(e.lpHost[:B], e.lpView[B])
	if err := be.Sync(); err != nil {
		return fmt.Errorf("decode step: %w", err)
	}
	keep := r.active[:0]
	for b, sq := range r.active {
		sq.s.IDs = append(sq.s.IDs, e.ids[b])
		sq.s.LogProbs = append(sq.s.LogProbs, e.lpHost[b])
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
	clear(r.active[len(keep):])
	r.active = keep
	e.stats.NewTokens += B
	e.stats.DecodeSteps++
	e.stats.Decode += time.Since(t0)
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
