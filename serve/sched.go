package serve

// The scheduler: one goroutine owns the model and runs the rollout
// engine's Serve loop (continuous batching across requests). Every prompt
// of a request becomes a rollout.Request with the request's parameters and
// adapter; it joins the running batch at the next engine step, streams
// its tokens to the handler as they are drawn, and leaves the batch the
// moment it ends or its client goes away (its KV pages back in the pool at
// once). A sample depends only on (seed, id, index) and its own logits,
// not on the batch around it (rollout's package doc), so concurrent
// traffic changes no answer.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/rollout"
)

// job is one HTTP request's work: its prompts, all with the same
// parameters and adapter.
type job struct {
	ctx     context.Context
	adapter int // model.KVRow.Adapter
	params  rollout.Params
	prompts []rollout.Prompt
	seeded  bool         // the request gave a seed (else the server draws one, and prompt ids)
	topLP   int          // top_logprobs wanted (0: none)
	stream  *tokenStream // nil: no streaming
}

type jobResult struct {
	groups []*rollout.Group
	top    [][][][]topEntry // [prompt][sample][token][rank] when topLP > 0
	err    error
}

// topEntry is one alternative token and its log-prob.
type topEntry struct {
	ID      int32
	LogProb float32
}

// streamToken is one drawn token, for a streamed response.
type streamToken struct {
	prompt, sample int
	id             int32
	logProb        float32
}

// tokenStream carries the tokens the engine draws to the handler that
// streams them: the engine appends without blocking, the handler takes.
type tokenStream struct {
	mu   sync.Mutex
	toks []streamToken
	wake chan struct{} // buffered 1: something was appended
}

func newTokenStream() *tokenStream { return &tokenStream{wake: make(chan struct{}, 1)} }

func (t *tokenStream) put(tk streamToken) {
	t.mu.Lock()
	t.toks = append(t.toks, tk)
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// take returns the tokens appended since the last take.
func (t *tokenStream) take() []streamToken {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.toks
	t.toks = nil
	return out
}

// scheduler feeds the engine's Serve loop.
type scheduler struct {
	m       *model.Model
	eng     *rollout.Engine
	metrics *metrics
	stopIDs []int32

	in     chan *rollout.Request
	mu     sync.RWMutex // senders hold it read-locked; close write-locks it
	closed bool
	exited chan struct{} // Serve returned
	err    error         // Serve's error, once exited
	seeds  atomic.Uint64 // unseeded requests' seeds
	serial atomic.Uint64 // unseeded prompt ids
	top    *model.KVCache
}

func newScheduler(m *model.Model, eng *rollout.Engine, stopIDs []int32, mt *metrics, seed uint64) *scheduler {
	s := &scheduler{m: m, eng: eng, metrics: mt, stopIDs: stopIDs, in: make(chan *rollout.Request, 256), exited: make(chan struct{})}
	s.seeds.Store(seed)
	go func() {
		defer close(s.exited)
		s.err = eng.Serve(context.Background(), s.in, func(si rollout.ServeInfo) {
			if si.Rows > 0 {
				mt.batch.observe(float64(si.Rows))
			}
			mt.pagesFree.Store(int64(si.FreePages))
			mt.pagesTotal.Store(int64(si.TotalPages))
		})
		if s.top != nil {
			s.top.Close()
		}
	}()
	return s
}

// errClosed answers requests that arrive while the server shuts down.
var errClosed = errors.New("the server is shutting down")

// do runs j's prompts in the engine's batch and waits for all of them (or
// the request's context, or the engine's end).
func (s *scheduler) do(j *job) jobResult {
	ctx, cancel := context.WithCancel(j.ctx)
	defer cancel()
	p := j.params
	seeded := j.seeded
	if !seeded {
		p.Seed = mix(s.seeds.Add(1))
	}
	n := len(j.prompts)
	groups := make([]*rollout.Group, n)
	done := make(chan jobResult, 1)
	// Engine goroutine only, from here on:
	left, admitted, failed := n, false, false
	s.metrics.queueDepth.Add(1)
	end := func(err error) {
		if admitted {
			s.metrics.running.Add(-1)
		} else {
			s.metrics.queueDepth.Add(-1)
		}
		done <- jobResult{groups: groups, err: err}
	}
	reqs := make([]*rollout.Request, n)
	for i, pr := range j.prompts {
		if !seeded {
			pr.ID = fmt.Sprintf("req-%d", s.serial.Add(1))
		}
		q := &rollout.Request{Ctx: ctx, Prompt: pr, Params: p, Adapter: j.adapter}
		q.OnAdmit = func() {
			if !admitted {
				admitted = true
				s.metrics.queueDepth.Add(-1)
				s.metrics.running.Add(1)
			}
		}
		if st := j.stream; st != nil {
			q.OnToken = func(sample int, id int32, lp float32) {
				st.put(streamToken{prompt: i, sample: sample, id: id, logProb: lp})
			}
		}
		q.OnDone = func(g *rollout.Group, err error) {
			if failed {
				return
			}
			if err != nil {
				failed = true
				cancel() // the other prompts of the request leave too
				end(err)
				return
			}
			g.Index = i
			groups[i] = g
			if left--; left > 0 {
				return
			}
			res := jobResult{groups: groups}
			if j.topLP > 0 {
				res.top, res.err = s.topLogprobs(groups, j.topLP, j.adapter)
			}
			if admitted {
				s.metrics.running.Add(-1)
			} else {
				s.metrics.queueDepth.Add(-1)
			}
			done <- res
		}
		reqs[i] = q
	}
	if sent, err := s.send(ctx, reqs); sent == 0 {
		s.metrics.queueDepth.Add(-1)
		return jobResult{err: err}
	} else if err != nil {
		cancel() // the prompts sent end through OnDone
	}
	select {
	case r := <-done:
		if r.err != nil && j.ctx.Err() != nil {
			s.metrics.cancelled.Add(1)
		}
		return r
	case <-s.exited:
		return jobResult{err: fmt.Errorf("the engine stopped: %v", s.err)}
	}
}

// send queues the requests for the engine and says how many went in
// before an error.
func (s *scheduler) send(ctx context.Context, reqs []*rollout.Request) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, errClosed
	}
	for k, q := range reqs {
		select {
		case s.in <- q:
		case <-s.exited:
			return k, fmt.Errorf("the engine stopped: %v", s.err)
		case <-ctx.Done():
			return k, ctx.Err()
		}
	}
	return len(reqs), nil
}

// close lets the engine finish the requests it holds, then stops it;
// requests that arrive after get errClosed.
func (s *scheduler) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.in)
	}
	s.mu.Unlock()
	<-s.exited
}

// topLogprobs recomputes each sampled position's distribution with a
// one-sequence cache (the prompt, then one token at a time, with the
// request's adapter) and keeps its k most likely tokens. It runs on the
// engine's goroutine, between steps.
func (s *scheduler) topLogprobs(groups []*rollout.Group, k, adapter int) ([][][][]topEntry, error) {
	be := s.m.Backend()
	V := s.m.Config.VocabSize
	logits := make([]float32, V)
	out := make([][][][]topEntry, len(groups))
	const chunk = 128
	for gi, g := range groups {
		out[gi] = make([][][]topEntry, len(g.Samples))
		for si, smp := range g.Samples {
			if len(smp.IDs) == 0 {
				continue
			}
			need := len(g.PromptIDs) + len(smp.IDs)
			if s.top == nil || s.top.Tmax < need {
				if s.top != nil {
					s.top.Close()
				}
				c, err := s.m.NewPagedKVCache(model.KVOptions{Seqs: 1, MaxLen: min(s.m.MaxLen(), (need+63)&^63), MaxTokens: chunk})
				if err != nil {
					return nil, fmt.Errorf("top_logprobs: %w", err)
				}
				s.top = c
			}
			if err := s.top.Reset(0); err != nil {
				return nil, fmt.Errorf("top_logprobs: %w", err)
			}
			feed := g.PromptIDs
			rows := make([][]topEntry, len(smp.IDs))
			for t := range smp.IDs {
				var buf kernels.Buffer
				for off := 0; off < len(feed); off += chunk {
					var err error
					buf, err = s.top.Step([]model.KVRow{{Seq: 0, IDs: feed[off:min(off+chunk, len(feed))], Adapter: adapter}})
					if err != nil {
						return nil, fmt.Errorf("top_logprobs: %w", err)
					}
				}
				be.CopyOut(logits, buf)
				rows[t] = topK(logits, k)
				feed = smp.IDs[t : t+1]
			}
			out[gi][si] = rows
		}
	}
	return out, nil
}

// topK returns the k largest log_softmax(logits) entries, most likely
// first (lowest id on ties), in float64 then rounded to float32.
func topK(logits []float32, k int) []topEntry {
	mx := float64(logits[0])
	for _, v := range logits {
		mx = max(mx, float64(v))
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	idx := make([]int32, 0, k+1)
	for i, v := range logits {
		if len(idx) == k && v <= logits[idx[k-1]] {
			continue
		}
		at, _ := slices.BinarySearchFunc(idx, int32(i), func(a, b int32) int {
			switch {
			case logits[a] > logits[b]:
				return -1
			case logits[a] < logits[b]:
				return 1
			}
			return int(a - b)
		})
		idx = slices.Insert(idx, at, int32(i))
		if len(idx) > k {
			idx = idx[:k]
		}
	}
	out := make([]topEntry, len(idx))
	for i, id := range idx {
		out[i] = topEntry{ID: id, LogProb: float32(float64(logits[id]) - lse)}
	}
	return out
}

// mix is splitmix64's finalizer: successive request seeds.
func mix(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
