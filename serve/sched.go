package serve

// The scheduler: one goroutine owns the model and the rollout engine. It
// collects the requests waiting and runs them as engine calls: every
// request with the same adapter and the same sampling parameters joins one
// call (the engine's Params are per call), whose continuous batching then
// decodes all their sequences together. A client that disconnects cancels
// its call at once (its KV slots are freed); the other requests of the call
// are put back at the front of the queue and rerun, which gives the same
// tokens because a sample depends only on (seed, id, index) and the logits,
// not on the batch around it (rollout's package doc).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/rollout"
)

// callKey groups requests that can share an engine call.
type callKey struct {
	adapter     string
	temperature float32
	topP        float32
	topK        int
	maxNew      int
	stops       string // NUL-joined
	n           int
	ignoreEOS   bool
	seeded      bool
	seed        uint64 // when seeded
}

// job is one request's work: its prompts, answered by the engine as groups.
type job struct {
	ctx     context.Context
	key     callKey
	params  rollout.Params
	prompts []rollout.Prompt
	topLP   int // top_logprobs wanted (0: none)
	queued  time.Time
	done    chan jobResult // buffered 1
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

// scheduler runs jobs on the engine, one call at a time.
type scheduler struct {
	m        *model.Model
	eng      *rollout.Engine
	adapters map[string]string // name → directory
	current  string            // adapter loaded ("" before the first switch)
	metrics  *metrics
	stopIDs  []int32

	submit chan *job
	quit   chan struct{}
	wg     sync.WaitGroup
	seeds  uint64 // for unseeded calls
	serial uint64 // unseeded prompt ids
	top    *model.KVCache
}

func newScheduler(m *model.Model, eng *rollout.Engine, adapters map[string]string, first string, stopIDs []int32, mt *metrics, seed uint64) *scheduler {
	s := &scheduler{m: m, eng: eng, adapters: adapters, current: first, metrics: mt, stopIDs: stopIDs,
		submit: make(chan *job), quit: make(chan struct{}), seeds: seed}
	s.wg.Add(1)
	go s.loop()
	return s
}

// errClosed answers requests that arrive while the server shuts down.
var errClosed = errors.New("the server is shutting down")

// do queues j and waits for its result (or its context).
func (s *scheduler) do(j *job) jobResult {
	j.done = make(chan jobResult, 1)
	j.queued = time.Now()
	s.metrics.queueDepth.Add(1) // until a call takes it (run) or it is dropped
	select {
	case s.submit <- j:
	case <-s.quit:
		s.metrics.queueDepth.Add(-1)
		return jobResult{err: errClosed}
	case <-j.ctx.Done():
		s.metrics.queueDepth.Add(-1)
		return jobResult{err: j.ctx.Err()}
	}
	select {
	case r := <-j.done:
		return r
	case <-j.ctx.Done():
		// The scheduler sees the cancellation too and drops the job; its
		// result, if it was already sent, is discarded (buffered channel).
		return jobResult{err: j.ctx.Err()}
	}
}

// close stops the loop after the call in progress; queued jobs get errClosed.
func (s *scheduler) close() {
	close(s.quit)
	s.wg.Wait()
}

func (s *scheduler) loop() {
	defer s.wg.Done()
	var queue []*job
	for {
		if len(queue) == 0 {
			select {
			case j := <-s.submit:
				queue = append(queue, j)
			case <-s.quit:
				return
			}
		}
		// Take everything waiting now.
	drain:
		for {
			select {
			case j := <-s.submit:
				queue = append(queue, j)
			case <-s.quit:
				for _, j := range queue {
					j.done <- jobResult{err: errClosed}
					s.metrics.queueDepth.Add(-1)
				}
				return
			default:
				break drain
			}
		}
		live := queue[:0]
		for _, j := range queue {
			if j.ctx.Err() != nil {
				j.done <- jobResult{err: j.ctx.Err()}
				s.metrics.queueDepth.Add(-1)
				continue
			}
			live = append(live, j)
		}
		queue = live
		if len(queue) == 0 {
			continue
		}
		key := queue[0].key
		var call, rest []*job
		for _, j := range queue {
			if j.key == key {
				call = append(call, j)
			} else {
				rest = append(rest, j)
			}
		}
		again := s.run(call)
		queue = append(again, rest...)
	}
}

// run makes one engine call for jobs (same key) and answers them; it
// returns the jobs to run again after a disconnect cancelled the call.
func (s *scheduler) run(jobs []*job) (again []*job) {
	s.metrics.queueDepth.Add(-int64(len(jobs)))
	defer func() { s.metrics.queueDepth.Add(int64(len(again))) }()
	key := jobs[0].key
	if err := s.useAdapter(key.adapter); err != nil {
		for _, j := range jobs {
			j.done <- jobResult{err: err}
		}
		return nil
	}
	p := jobs[0].params
	if !key.seeded {
		s.seeds++
		p.Seed = mix(s.seeds)
	}
	var prompts []rollout.Prompt
	owner := []int{} // prompt index → job
	first := make([]int, len(jobs))
	for ji, j := range jobs {
		first[ji] = len(prompts)
		for _, pr := range j.prompts {
			if !key.seeded {
				s.serial++
				pr.ID = fmt.Sprintf("req-%d", s.serial)
			}
			prompts = append(prompts, pr)
			owner = append(owner, ji)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stops := make([]func() bool, len(jobs))
	for i, j := range jobs {
		stops[i] = context.AfterFunc(j.ctx, cancel)
	}
	defer func() {
		for _, st := range stops {
			st()
		}
	}()
	seqs := len(prompts) * p.G
	s.metrics.batch.observe(float64(seqs))
	s.metrics.running.Add(int64(len(jobs)))
	defer s.metrics.running.Add(-int64(len(jobs)))

	results := make([][]*rollout.Group, len(jobs))
	left := make([]int, len(jobs))
	for ji, j := range jobs {
		results[ji] = make([]*rollout.Group, len(j.prompts))
		left[ji] = len(j.prompts)
	}
	delivered := make([]bool, len(jobs))
	for g, err := range s.eng.Groups(ctx, prompts, p) {
		if err != nil {
			if ctx.Err() != nil {
				// A client went away: answer it, rerun the others.
				for ji, j := range jobs {
					if delivered[ji] {
						continue
					}
					if j.ctx.Err() != nil {
						j.done <- jobResult{err: j.ctx.Err()}
						s.metrics.cancelled.Add(1)
					} else {
						again = append(again, j)
					}
				}
				return again
			}
			for ji, j := range jobs {
				if !delivered[ji] {
					j.done <- jobResult{err: err}
				}
			}
			return nil
		}
		ji := owner[g.Index]
		results[ji][g.Index-first[ji]] = g
		left[ji]--
		if left[ji] == 0 {
			res := jobResult{groups: results[ji]}
			if jobs[ji].topLP > 0 {
				res.top, res.err = s.topLogprobs(results[ji], jobs[ji].topLP)
			}
			jobs[ji].done <- res
			delivered[ji] = true
		}
	}
	return nil
}

// useAdapter loads the named adapter into the model's LoRA slots ("" is
// the base model: adapters off).
func (s *scheduler) useAdapter(name string) error {
	if name == "" {
		return s.m.SetAdapters(false)
	}
	if s.current != name {
		if err := s.m.ImportAdapter(s.adapters[name]); err != nil {
			return fmt.Errorf("loading adapter %s: %w", name, err)
		}
		s.current = name
	}
	return s.m.SetAdapters(true)
}

// topLogprobs recomputes each sampled position's distribution with a
// one-slot cache (prefill the prompt, then one token at a time) and keeps
// its k most likely tokens.
func (s *scheduler) topLogprobs(groups []*rollout.Group, k int) ([][][][]topEntry, error) {
	be := s.m.Backend()
	V := s.m.Config.VocabSize
	logits := make([]float32, V)
	out := make([][][][]topEntry, len(groups))
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
				c, err := s.m.NewKVCache(1, min(s.m.MaxLen(), (need+63)&^63), 1)
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
				buf, err := s.top.Prefill(0, feed)
				if err != nil {
					return nil, fmt.Errorf("top_logprobs: %w", err)
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

// mix is splitmix64's finalizer: successive call seeds.
func mix(z uint64) uint64 {
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
