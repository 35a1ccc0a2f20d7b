package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

// TestScheduleIndependence: on the CPU, every sample's tokens and
// log-probs are bit-identical whether its prompt runs alone or among
// others under random schedules: random arrival orders, Batch (2 to 16
// sequences at once), token budgets (chunked prefill from 3 tokens a
// step) and page counts (down to one sequence's worth, so sequences are
// preempted and recomputed, some several times). Only the exact-order
// CPU build (not -tags openblas, see the package doc) makes this promise.
func TestScheduleIndependence(t *testing.T) {
	if strings.HasSuffix(kernels.NewCPU().Name(), "openblas") {
		t.Skip("OpenBLAS rounds a row with its position in the matrix (package doc)")
	}
	m := openFixture(t, "qwen2-f32", model.Options{})
	prompts := randomPrompts(9, 10, 1, 40, m.Config.VocabSize)
	p := Params{G: 3, Temperature: 1, TopP: 0.9, MaxNewTokens: 24, StopIDs: stopIDs(m), Seed: 5}
	ctx := context.Background()
	ref := make([]*Group, len(prompts))
	for i := range prompts {
		g, err := newEngine(t, m, Options{Batch: p.G}).Generate(ctx, prompts[i:i+1], p)
		if err != nil {
			t.Fatal(err)
		}
		ref[i] = g[0]
	}
	tmax := 40 + p.MaxNewTokens
	one := pagesPerSeq(min(m.MaxLen(), (tmax+63)&^63))
	r := rand.New(rand.NewPCG(33, 1))
	preempted, chunked := 0, 0
	for sched := range 8 {
		batch := p.G + r.IntN(14)
		o := Options{Batch: batch, MaxTokens: max(3, r.IntN(2*batch+1)), Pages: one + r.IntN(batch*one)}
		if sched == 0 {
			o.Pages = one // a single sequence's worth: preemption all the time
		}
		order := r.Perm(len(prompts))
		call := make([]Prompt, len(prompts))
		for i, j := range order {
			call[i] = prompts[j]
		}
		e := newEngine(t, m, o)
		got, err := e.Generate(ctx, call, p)
		if err != nil {
			t.Fatalf("schedule %d %+v: %v", sched, o, err)
		}
		st := e.Stats()
		preempted += st.Preemptions
		if o.MaxTokens < 40 {
			chunked++
		}
		what := fmt.Sprintf("schedule %d (Batch %d, MaxTokens %d, Pages %d, %d preemptions)", sched, o.Batch, o.MaxTokens, o.Pages, st.Preemptions)
		for i, j := range order {
			a, b := got[i], ref[j]
			if a.ID != b.ID {
				t.Fatalf("%s: group %d is %q, want %q", what, i, a.ID, b.ID)
			}
			for s := range a.Samples {
				x, y := a.Samples[s], b.Samples[s]
				if !slices.Equal(x.IDs, y.IDs) || !slices.Equal(x.LogProbs, y.LogProbs) || x.Finish != y.Finish {
					t.Errorf("%s: prompt %q sample %d differs from the prompt alone:\n got %v %v %s\nwant %v %v %s",
						what, a.ID, s, x.IDs, x.LogProbs, x.Finish, y.IDs, y.LogProbs, y.Finish)
				}
			}
		}
	}
	t.Logf("%d preemptions, %d schedules with chunked prefill", preempted, chunked)
	if preempted == 0 || chunked == 0 {
		t.Errorf("the schedules preempted %d sequences and chunked %d; the test needs both", preempted, chunked)
	}
}

// TestEpisodesScheduleIndependence: multi-turn episodes (the environment's
// answers fed back in chunks, the pages kept across turns) are
// bit-identical alone and under schedules with small token budgets and
// few pages (preemptions across turns).
func TestEpisodesScheduleIndependence(t *testing.T) {
	if strings.HasSuffix(kernels.NewCPU().Name(), "openblas") {
		t.Skip("OpenBLAS rounds a row with its position in the matrix (package doc)")
	}
	fx := newMTFixture(t)
	ctx := context.Background()
	conv := Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: probeFormat{fx.f}}
	p := fx.params(3)
	var alone []Sample
	for i := range fx.recs {
		g, err := fx.e.Episodes(ctx, fx.recs[i:i+1], p, conv)
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, g[0].Samples...)
	}
	preempted := 0
	for _, o := range []Options{{Batch: 4, MaxTokens: 5, Pages: 66}, {Batch: 6, MaxTokens: 40, Pages: 70}, {Batch: 2, MaxTokens: 2, Pages: 200}} {
		o.Tokenizer = fx.tok
		e := newEngine(t, fx.m, o)
		gs, err := e.Episodes(ctx, fx.recs, p, conv)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		preempted += e.Stats().Preemptions
		k := 0
		for _, g := range gs {
			for _, s := range g.Samples {
				if !sameEpisode(s, alone[k]) {
					t.Errorf("Batch %d, MaxTokens %d, Pages %d: %s/%d differs from its record alone", o.Batch, o.MaxTokens, o.Pages, g.ID, s.Index)
				}
				k++
			}
		}
	}
	t.Logf("%d preemptions", preempted)
	if preempted == 0 {
		t.Error("no schedule preempted a sequence")
	}
}
