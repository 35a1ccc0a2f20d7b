package rollout

// Serve: the engine as a server's batch (train serve). Requests arrive on
// a channel while others run, each with its own parameters, adapter and
// context; a request joins the running batch at the next step (continuous
// batching, admitted first come first served as cache sequences and pages
// free up), hands out each token as it is drawn, and leaves the batch the
// moment it finishes or its context is cancelled, its pages back in the
// pool at once. A sample's tokens and log-probs are those of the same
// prompt, parameters and adapter in Groups (the package doc's determinism:
// a row is computed alone whatever runs beside it).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/argrl/argrl/model"
)

// Request is one prompt for Serve.
type Request struct {
	Ctx     context.Context // cancelled: the request leaves the batch; nil: never
	Prompt  Prompt          // its ID keys the sample streams, as in Groups
	Params  Params          // one turn (MaxTurns ≤ 1)
	Adapter int             // model.KVRow.Adapter: model.NoAdapter, model.OwnAdapter or a model.LoadAdapter number
	// The callbacks run on Serve's goroutine, between steps: they must not
	// block. OnAdmit (optional) when the request joins the batch; OnToken
	// (optional) for every token drawn, with its sample index and log-prob;
	// OnDone (required) once, with the finished group or the error that
	// ended the request (a refused request, its context's error, or
	// Serve's).
	OnAdmit func()
	OnToken func(sample int, id int32, logProb float32)
	OnDone  func(*Group, error)
}

// ServeInfo describes one engine step for a server's metrics (Rows 0:
// cancelled requests left the batch).
type ServeInfo struct {
	Rows       int // sequences in the step
	Waiting    int // requests not yet admitted
	FreePages  int // KV pages free after the step
	TotalPages int
}

// ErrRequest wraps the errors of a request Serve refuses before admitting
// it (bad parameters, prompt or adapter); the others end the request later.
var ErrRequest = errors.New("rollout: request refused")

// Serve runs the requests that arrive on in until in is closed and every
// request finished (nil), or ctx ends (ctx's error), or a step fails (the
// error); requests still running then get that error. onStep, when set, is
// called after every step. The engine's cache holds Options.Pages pages
// (0: Batch sequences of min(MaxLen, 512) tokens, and at least one at
// MaxLen); when they run out the latest admitted sequence is preempted and
// recomputed later, with identical results.
func (e *Engine) Serve(ctx context.Context, in <-chan *Request, onStep func(ServeInfo)) (err error) {
	if err := e.serveCache(); err != nil {
		return fmt.Errorf("rollout: Serve: %w", err)
	}
	r := runState{e: e, ctx: ctx}
	for s := e.o.Batch - 1; s >= 0; s-- {
		r.free = append(r.free, s)
	}
	var waiting []*Request
	live := map[*groupState]bool{}
	defer func() { // whatever is left ends with the error
		end := err
		if end == nil {
			end = errors.New("rollout: Serve stopped")
		}
		r.releaseAll()
		for g := range live {
			g.req.OnDone(nil, end)
		}
		for _, q := range waiting {
			q.OnDone(nil, end)
		}
	}()
	t0 := time.Now()
	defer func() { e.stats.Elapsed += time.Since(t0) }()
	open := true
	arrive := func(q *Request) {
		if qerr := e.checkRequest(q); qerr != nil {
			q.OnDone(nil, fmt.Errorf("%w: %w", ErrRequest, qerr))
			return
		}
		waiting = append(waiting, q)
	}
	for {
		// Arrivals: wait for one when there is nothing to run.
		if len(live) == 0 && len(waiting) == 0 {
			if !open {
				return nil
			}
			select {
			case q, ok := <-in:
				if !ok {
					open = false
					continue
				}
				arrive(q)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	take:
		for open {
			select {
			case q, ok := <-in:
				if !ok {
					open = false
					break take
				}
				arrive(q)
			default:
				break take
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Cancelled requests leave now, their pages freed.
		kept := waiting[:0]
		for _, q := range waiting {
			if q.Ctx != nil && q.Ctx.Err() != nil {
				q.OnDone(nil, q.Ctx.Err())
				continue
			}
			kept = append(kept, q)
		}
		clear(waiting[len(kept):])
		waiting = kept
		dropped := false
		for g := range live {
			if c := g.req.Ctx; c != nil && c.Err() != nil {
				r.drop(g)
				delete(live, g)
				dropped = true
				g.req.OnDone(nil, c.Err())
			}
		}
		if dropped && onStep != nil { // the pages came back: a step of no rows
			onStep(ServeInfo{Waiting: len(waiting), FreePages: e.cache.FreePages(), TotalPages: e.cache.Pages})
		}
		// Admission, first come first served.
		for len(waiting) > 0 && len(r.free) >= waiting[0].Params.G && r.roomFor(len(waiting[0].Prompt.IDs)) {
			q := waiting[0]
			waiting[0] = nil
			waiting = waiting[1:]
			g := e.newServed(q)
			live[g] = true
			if q.OnAdmit != nil {
				q.OnAdmit()
			}
			if err := r.admitGroup(0, g); err != nil {
				return fmt.Errorf("rollout: Serve: %w", err)
			}
		}
		if len(r.active) > 0 {
			if err := r.step(); err != nil {
				return fmt.Errorf("rollout: Serve: %w", err)
			}
			if onStep != nil {
				onStep(ServeInfo{Rows: len(r.rows), Waiting: len(waiting), FreePages: e.cache.FreePages(), TotalPages: e.cache.Pages})
			}
		} else if len(waiting) > 0 && len(r.done) == 0 {
			return errors.New("rollout: Serve: internal error: an idle engine cannot admit the next request")
		}
		for _, g := range r.done {
			delete(live, g)
			out := g.Group
			g.req.OnDone(&out, nil)
		}
		clear(r.done)
		r.done = r.done[:0]
	}
}

// PrepareServe allocates Serve's KV cache now, so that a server can
// refuse to start when it cannot (Serve calls it too).
func (e *Engine) PrepareServe() error {
	if err := e.serveCache(); err != nil {
		return fmt.Errorf("rollout: Serve: %w", err)
	}
	return nil
}

// serveCache sizes the cache for Serve (see Serve).
func (e *Engine) serveCache() error {
	pages := e.o.Pages
	if pages == 0 {
		pages = max(e.o.Batch*pagesPerSeq(min(e.o.MaxLen, 512)), pagesPerSeq(e.o.MaxLen))
	}
	if pages < pagesPerSeq(e.o.MaxLen) {
		return fmt.Errorf("Options.Pages = %d cannot hold one sequence of %d tokens (%d pages of %d)", pages, e.o.MaxLen, pagesPerSeq(e.o.MaxLen), model.PageSize)
	}
	if e.cache != nil && e.cache.Tmax >= e.o.MaxLen && e.cache.Pages == pages {
		return nil
	}
	if e.cache != nil {
		e.cache.Close()
		e.cache = nil
	}
	c, err := e.m.NewPagedKVCache(model.KVOptions{Seqs: e.o.Batch, MaxLen: e.o.MaxLen, Pages: pages, MaxTokens: e.o.MaxTokens, NoSync: true})
	if err != nil {
		return err
	}
	e.cache = c
	return nil
}

// checkRequest validates a request before it waits.
func (e *Engine) checkRequest(q *Request) error {
	p := &q.Params
	if q.OnDone == nil {
		return errors.New("a request needs OnDone")
	}
	if err := p.check(e.vocab, e.tok != nil); err != nil {
		return err
	}
	switch {
	case p.MaxTurns > 1:
		return fmt.Errorf("max_turns %d: Serve runs one turn", p.MaxTurns)
	case p.G > e.o.Batch:
		return fmt.Errorf("G = %d samples exceed the engine's Batch of %d sequences", p.G, e.o.Batch)
	case q.Adapter < model.NoAdapter || q.Adapter > e.m.LoadedAdapters():
		return fmt.Errorf("adapter %d: the model has %d loaded adapters", q.Adapter, e.m.LoadedAdapters())
	case q.Adapter == model.OwnAdapter && e.m.Merged():
		return errors.New("the model's adapters are merged")
	}
	if _, err := e.checkPrompts([]Prompt{q.Prompt}); err != nil {
		return err
	}
	return nil
}

// newServed is the group state of an admitted request.
func (e *Engine) newServed(q *Request) *groupState {
	p := q.Params
	kp := p.kernel()
	id := q.Prompt.ID
	if id == "" {
		id = "0"
	}
	return &groupState{Group: Group{ID: id, PromptIDs: q.Prompt.IDs, Samples: make([]Sample, p.G)}, left: p.G, start: time.Now(),
		p: &p, kp: &kp, adapter: q.Adapter, req: q}
}

// roomFor says whether a prompt of n tokens may be admitted now: no
// preempted sequence waits and the free pages hold it (as admissible).
func (r *runState) roomFor(n int) bool {
	for _, sq := range r.active {
		if r.e.cache.Len(sq.slot) == 0 && sq.s != nil {
			return false // preempted
		}
	}
	return r.e.cache.FreePages() >= pagesPerSeq(n)
}

// drop takes group g out of the batch: its sequences' cache entries are
// emptied (their pages back in the pool) and its slots freed.
func (r *runState) drop(g *groupState) {
	keep := r.active[:0]
	prefork := false
	for _, sq := range r.active {
		if sq.g != g {
			keep = append(keep, sq)
			continue
		}
		prefork = prefork || sq.s == nil
		_ = r.e.cache.Reset(sq.slot) // in range by construction
		r.free = append(r.free, sq.slot)
	}
	clear(r.active[len(keep):])
	r.active = keep
	if prefork { // the other G−1 slots were reserved, not yet used
		for _, s := range g.slots[1:] {
			_ = r.e.cache.Reset(s)
			r.free = append(r.free, s)
		}
	}
	g.slots = nil
}

// token hands a drawn token to the request's OnToken (Serve).
func (g *groupState) token(sample int, id int32, lp float32) {
	if g.req != nil && g.req.OnToken != nil {
		g.req.OnToken(sample, id, lp)
	}
}

// KVPages reports the KV cache's free and total pages (0, 0 before the
// first call). Not safe while a call or Serve runs, except from its
// callbacks.
func (e *Engine) KVPages() (free, total int) {
	if e.cache == nil {
		return 0, 0
	}
	return e.cache.FreePages(), e.cache.Pages
}

// CheckKVPages verifies the cache's page accounting (model.KVCache.CheckPages).
func (e *Engine) CheckKVPages() error {
	if e.cache == nil {
		return nil
	}
	return e.cache.CheckPages()
}
