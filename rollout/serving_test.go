package rollout

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

// served is one request of a Serve test and what came back.
type served struct {
	q        *Request
	want     *Group
	got      *Group
	err      error
	streamed [][]int32 // OnToken's ids per sample
	admitted int       // the order in which requests were admitted
}

// TestServeMatchesGroups: requests with their own parameters and adapters
// (the base model, the model's own adapter, a loaded one) join a running
// Serve batch while others decode (each later request is sent when the
// first one draws its first tokens), under roomy and scarce pages (so
// sequences are preempted and recomputed). Every sample's tokens and
// log-probs are bit-identical to Generate's for the same prompt, parameters
// and adapter alone; OnToken streams exactly the final ids; every page is
// free at the end.
func TestServeMatchesGroups(t *testing.T) {
	if strings.HasSuffix(kernels.NewCPU().Name(), "openblas") {
		t.Skip("OpenBLAS rounds a row with its position in the matrix (package doc)")
	}
	m := openFixture(t, "qwen2-f32", model.Options{MaxLen: 96})
	loaded, err := m.LoadAdapter(filepath.Join(fixtures, "qwen2-f32", "adapter"))
	if err != nil {
		t.Fatal(err)
	}
	prompts := randomPrompts(4, 7, 2, 30, m.Config.VocabSize)
	adapters := []int{model.NoAdapter, model.OwnAdapter, loaded}
	params := []Params{
		{G: 1, Temperature: 0, MaxNewTokens: 20, StopIDs: stopIDs(m)},
		{G: 3, Temperature: 1, TopP: 0.9, MaxNewTokens: 24, Seed: 5},
		{G: 2, Temperature: 0.7, TopK: 20, MaxNewTokens: 16, Seed: 11, StopIDs: stopIDs(m)},
	}
	ctx := context.Background()
	var reqs []*served
	for i, pr := range prompts {
		q := &Request{Prompt: pr, Params: params[i%3], Adapter: adapters[(i/3+i)%3]}
		// The reference: Generate alone, with the adapter in the model's own
		// slots (a loaded adapter is the same file) or switched off.
		if err := m.SetAdapters(q.Adapter != model.NoAdapter); err != nil {
			t.Fatal(err)
		}
		g, err := newEngine(t, m, Options{Batch: q.Params.G}).Generate(ctx, []Prompt{pr}, q.Params)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, &served{q: q, want: g[0]})
	}
	if err := m.SetAdapters(true); err != nil {
		t.Fatal(err)
	}
	one := pagesPerSeq(m.MaxLen())
	for _, pages := range []int{0, one + 2} {
		e := newEngine(t, m, Options{Batch: 8, Pages: pages, MaxTokens: 24})
		in := make(chan *Request, len(reqs))
		maxRows, admitted, finished := 0, 0, 0
		joined := false // a request was admitted while another decoded
		for _, s := range reqs {
			s.got, s.err, s.streamed = nil, nil, make([][]int32, s.q.Params.G)
			s.q.OnAdmit = func() {
				s.admitted = admitted
				admitted++
				joined = joined || admitted > finished+1
			}
			s.q.OnToken = func(sample int, id int32, lp float32) { s.streamed[sample] = append(s.streamed[sample], id) }
			s.q.OnDone = func(g *Group, err error) {
				s.got, s.err = g, err
				if finished++; finished == len(reqs) {
					close(in)
				}
			}
		}
		first := reqs[0].q.OnToken
		sent := false
		reqs[0].q.OnToken = func(sample int, id int32, lp float32) {
			first(sample, id, lp)
			if !sent { // the others arrive while the first decodes
				sent = true
				for _, s := range reqs[1:] {
					in <- s.q
				}
			}
		}
		in <- reqs[0].q
		if err := e.Serve(ctx, in, func(si ServeInfo) { maxRows = max(maxRows, si.Rows) }); err != nil {
			t.Fatalf("pages %d: %v", pages, err)
		}
		for i, s := range reqs {
			if s.err != nil || s.got == nil {
				t.Fatalf("pages %d, request %d: %v", pages, i, s.err)
			}
			for k, smp := range s.got.Samples {
				w := s.want.Samples[k]
				if !slices.Equal(smp.IDs, w.IDs) || !slices.Equal(smp.LogProbs, w.LogProbs) || smp.Text != w.Text || smp.Finish != w.Finish {
					t.Errorf("pages %d, request %d (adapter %d), sample %d: served %v %v, alone %v %v", pages, i, s.q.Adapter, k, smp.IDs, smp.Finish, w.IDs, w.Finish)
				}
				if !slices.Equal(s.streamed[k], smp.IDs) {
					t.Errorf("pages %d, request %d, sample %d: OnToken gave %v, the group %v", pages, i, k, s.streamed[k], smp.IDs)
				}
			}
		}
		if !joined || maxRows < 4 {
			t.Errorf("pages %d: requests did not share the batch (joined %v, at most %d rows a step)", pages, joined, maxRows)
		}
		if free, total := e.KVPages(); free != total || e.CheckKVPages() != nil {
			t.Errorf("pages %d: %d of %d pages free after Serve (%v)", pages, free, total, e.CheckKVPages())
		}
		if pages > 0 && e.Stats().Preemptions == 0 {
			t.Errorf("pages %d: nothing was preempted; the scarce case did not happen", pages)
		}
		t.Logf("pages %d: %d rows at most, %d preemptions", pages, maxRows, e.Stats().Preemptions)
	}
}

// TestServeCancel: a cancelled request leaves the batch at the next step:
// OnDone gets its context's error, and its pages are back in the pool at
// that moment (the engine's accounting); a refused request gets
// ErrRequest; the engine goes on serving.
func TestServeCancel(t *testing.T) {
	m := openFixture(t, "qwen2-f32", model.Options{MaxLen: 128})
	e := newEngine(t, m, Options{Batch: 4})
	in := make(chan *Request, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var held, freeAtEnd, total, tokens int
	var cancelErr, refused error
	var after *Group
	long := &Request{Ctx: ctx, Prompt: Prompt{ID: "long", IDs: []int32{5, 9, 14, 20, 33}},
		Params: Params{G: 2, Temperature: 1, MaxNewTokens: 100, Seed: 3}}
	long.OnToken = func(sample int, id int32, lp float32) {
		if tokens++; tokens == 10 {
			free, tot := e.KVPages()
			held = tot - free
			cancel()
		}
	}
	long.OnDone = func(g *Group, err error) {
		cancelErr = err
		freeAtEnd, total = e.KVPages()
		if e.CheckKVPages() != nil {
			t.Errorf("page accounting after the cancel: %v", e.CheckKVPages())
		}
		in <- &Request{Prompt: Prompt{ID: "bad", IDs: []int32{int32(m.Config.VocabSize)}}, Params: Params{G: 1, MaxNewTokens: 4},
			OnDone: func(_ *Group, err error) { refused = err }}
		in <- &Request{Prompt: Prompt{ID: "next", IDs: []int32{7, 8}}, Params: Params{G: 1, MaxNewTokens: 6, Seed: 1},
			OnDone: func(g *Group, err error) {
				if err != nil {
					t.Errorf("the request after the cancel: %v", err)
				}
				after = g
				close(in)
			}}
	}
	in <- long
	if err := e.Serve(context.Background(), in, nil); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cancelErr, context.Canceled) {
		t.Errorf("the cancelled request ended with %v", cancelErr)
	}
	if held == 0 || tokens > 12 {
		t.Errorf("%d pages held before the cancel, %d tokens drawn in all (want > 0 pages, the request gone within a step)", held, tokens)
	}
	if freeAtEnd != total {
		t.Errorf("after the cancel %d of %d pages are free; the request held %d", freeAtEnd, total, held)
	}
	if !errors.Is(refused, ErrRequest) {
		t.Errorf("an out-of-vocabulary prompt: %v, want ErrRequest", refused)
	}
	if after == nil || len(after.Samples[0].IDs) != 6 {
		t.Errorf("the request after the cancel: %+v", after)
	}
}
