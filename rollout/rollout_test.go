package rollout

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

const fixtures = "../testdata/models"

var fixtureNames = []string{"qwen2-f32", "qwen2-bf16-tied", "qwen3-f32-tied", "qwen3-bf16-sharded", "llama-f32", "llama-bf16-tied"}

// openFixture opens a fixture model with its PEFT adapter (adapters on).
func openFixture(t testing.TB, name string, o model.Options) *model.Model {
	t.Helper()
	dir := filepath.Join(fixtures, name)
	o.Adapter = filepath.Join(dir, "adapter")
	m, err := model.Open(dir, kernels.NewCPU(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func newEngine(t testing.TB, m *model.Model, o Options) *Engine {
	t.Helper()
	e, err := New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// randomPrompts returns n prompts of lengths in [lo, hi] with ids in [4, V).
func randomPrompts(seed uint64, n, lo, hi, V int) []Prompt {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]Prompt, n)
	for i := range out {
		ids := make([]int32, lo+r.IntN(hi-lo+1))
		for j := range ids {
			ids[j] = int32(4 + r.IntN(V-4))
		}
		out[i] = Prompt{ID: "p" + string(rune('A'+i%26)) + string(rune('a'+i/26)), IDs: ids}
	}
	return out
}

func stopIDs(m *model.Model) []int32 { return StopIDs(nil, m.Config) }

// TestConsistencyWithTrainingForward: every returned log-prob equals the
// training graph's log-prob of the same token (Model.LogProbs, what `train
// score` prints) within 1e-4, on every fixture, adapters on and off,
// sampled (T=0.8, top-p 0.9, top-k 50) and greedy.
func TestConsistencyWithTrainingForward(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			m := openFixture(t, name, model.Options{})
			e := newEngine(t, m, Options{Batch: 8})
			prompts := randomPrompts(3, 3, 1, 17, m.Config.VocabSize)
			var byState [2][]*Group
			for i, on := range []bool{true, false} {
				if err := m.SetAdapters(on); err != nil {
					t.Fatal(err)
				}
				p := Params{G: 3, Temperature: 0.8, TopP: 0.9, TopK: 50, MaxNewTokens: 12, StopIDs: stopIDs(m), Seed: 11}
				groups, err := e.Generate(context.Background(), prompts, p)
				if err != nil {
					t.Fatal(err)
				}
				greedy, err := e.Greedy(context.Background(), prompts, p)
				if err != nil {
					t.Fatal(err)
				}
				byState[i] = groups
				d, n := maxScoreDiff(t, m, on, groups)
				for j, s := range greedy {
					groups := []*Group{{PromptIDs: prompts[j].IDs, Samples: []Sample{s}}}
					dg, ng := maxScoreDiff(t, m, on, groups)
					d, n = math.Max(d, dg), n+ng
				}
				t.Logf("adapters=%v: %d tokens, max |Δ log-prob| vs training forward %.2e", on, n, d)
				if d > 1e-4 {
					t.Errorf("adapters=%v: max |Δ log-prob| %.2e > 1e-4", on, d)
				}
				if n < 30 {
					t.Errorf("only %d tokens compared", n)
				}
			}
			if sameGroups(byState[0], byState[1]) {
				t.Errorf("adapters on and off gave identical samples: the adapter is not applied")
			}
		})
	}
}

// maxScoreDiff scores prompt+response with the training forward and
// returns the largest difference on the response tokens, and their count.
func maxScoreDiff(t *testing.T, m *model.Model, adapters bool, groups []*Group) (float64, int) {
	t.Helper()
	var seqs [][]int32
	var want [][]float32
	var plen []int
	for _, g := range groups {
		for _, s := range g.Samples {
			if len(s.IDs) != len(s.LogProbs) {
				t.Fatalf("%d ids, %d log-probs", len(s.IDs), len(s.LogProbs))
			}
			seqs = append(seqs, append(slices.Clone(g.PromptIDs), s.IDs...))
			want = append(want, s.LogProbs)
			plen = append(plen, len(g.PromptIDs))
		}
	}
	got, err := m.LogProbs(seqs, adapters)
	if err != nil {
		t.Fatal(err)
	}
	d, n := 0.0, 0
	for i := range seqs {
		for j, lp := range want[i] {
			d = math.Max(d, math.Abs(float64(lp)-float64(got[i][plen[i]+j])))
			n++
		}
	}
	return d, n
}

func sameGroups(a, b []*Group) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || len(a[i].Samples) != len(b[i].Samples) {
			return false
		}
		for j := range a[i].Samples {
			x, y := a[i].Samples[j], b[i].Samples[j]
			if !slices.Equal(x.IDs, y.IDs) || !slices.Equal(x.LogProbs, y.LogProbs) || x.Finish != y.Finish || x.Text != y.Text {
				return false
			}
		}
	}
	return true
}

// TestDeterminism: the same seed gives bit-identical ids and log-probs
// across runs and engines; a prompt gives the same samples decoded alone
// or among 16, in any order, through continuous batching (4 slots for 16
// prompts × 2 samples) and with padded steps (DecodeRows); another seed
// gives other samples. With -tags openblas (see the package doc) the
// composition checks become: log-probs within 1e-5 on every common prefix,
// and the share of bit-identical samples is logged.
func TestDeterminism(t *testing.T) {
	m := openFixture(t, "qwen2-f32", model.Options{})
	prompts := randomPrompts(5, 16, 1, 24, m.Config.VocabSize)
	p := Params{G: 2, Temperature: 1, TopP: 0.95, MaxNewTokens: 20, StopIDs: stopIDs(m), Seed: 42}
	ctx := context.Background()
	// Exact everywhere but OpenBLAS, whose sgemm rounds a row with its
	// position in the matrix (package doc).
	exact := !strings.HasSuffix(kernels.NewCPU().Name(), "openblas")
	same := func(what string, got, want []*Group) {
		t.Helper()
		if exact {
			if !sameGroups(got, want) {
				t.Errorf("%s: samples differ", what)
			}
			return
		}
		n, ident, toks, d := compareLoose(got, want)
		t.Logf("%s: of %d samples %d bit-identical, %d with identical tokens; max |Δ log-prob| on common prefixes %.1e", what, n, ident, toks, d)
		if d > 1e-5 {
			t.Errorf("%s: log-probs differ by %.1e on a common prefix", what, d)
		}
	}
	for _, batch := range []int{64, 4} {
		e := newEngine(t, m, Options{Batch: batch})
		all, err := e.Generate(ctx, prompts, p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := newEngine(t, m, Options{Batch: batch}).Generate(ctx, prompts, p)
		if err != nil {
			t.Fatal(err)
		}
		if !sameGroups(all, again) {
			t.Errorf("batch %d: two runs of the same call differ", batch)
		}
		var alone []*Group
		for i := range prompts {
			g, err := e.Generate(ctx, prompts[i:i+1], p)
			if err != nil {
				t.Fatal(err)
			}
			g[0].Index = i
			alone = append(alone, g[0])
		}
		same(fmt.Sprintf("batch %d: each prompt alone vs among 16", batch), alone, all)
		rev := slices.Clone(prompts)
		slices.Reverse(rev)
		got, err := e.Generate(ctx, rev, p)
		if err != nil {
			t.Fatal(err)
		}
		slices.Reverse(got)
		for i := range got {
			got[i].Index = i
		}
		same(fmt.Sprintf("batch %d: reversed order", batch), got, all)
		padded, err := newEngine(t, m, Options{Batch: batch, DecodeRows: batch}).Generate(ctx, prompts, p)
		if err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("batch %d: steps padded to %d rows", batch, batch), padded, all)
		if batch == 4 && e.Stats().DecodeSteps < 4*19 {
			t.Errorf("4 slots ran only %d decode steps for 16 prompts × 2 samples × ~20 tokens: no continuous batching?", e.Stats().DecodeSteps)
		}
	}
	// Different seeds, different samples; samples of a group differ too.
	e := newEngine(t, m, Options{})
	all, err := e.Generate(ctx, prompts, p)
	if err != nil {
		t.Fatal(err)
	}
	p2 := p
	p2.Seed = 43
	other, err := e.Generate(ctx, prompts, p2)
	if err != nil {
		t.Fatal(err)
	}
	if sameGroups(other, all) {
		t.Errorf("seeds 42 and 43 gave the same samples")
	}
	distinct := 0
	for _, g := range all {
		if !slices.Equal(g.Samples[0].IDs, g.Samples[1].IDs) {
			distinct++
		}
	}
	if distinct < 8 {
		t.Errorf("only %d of 16 groups have two distinct samples", distinct)
	}
}

// compareLoose counts samples, bit-identical samples and samples with the
// same tokens, and returns the largest log-prob difference over the common
// token prefix of each pair.
func compareLoose(a, b []*Group) (n, identical, sameTokens int, maxDiff float64) {
	for i := range a {
		for j := range a[i].Samples {
			x, y := a[i].Samples[j], b[i].Samples[j]
			n++
			if slices.Equal(x.IDs, y.IDs) {
				sameTokens++
				if slices.Equal(x.LogProbs, y.LogProbs) {
					identical++
				}
			}
			for k := 0; k < min(len(x.IDs), len(y.IDs)); k++ {
				maxDiff = math.Max(maxDiff, math.Abs(float64(x.LogProbs[k]-y.LogProbs[k])))
				if x.IDs[k] != y.IDs[k] {
					break
				}
			}
		}
	}
	return n, identical, sameTokens, maxDiff
}

// TestEdgeCases: bad inputs give errors naming the prompt, limits give
// the right finish reasons, nothing panics.
func TestEdgeCases(t *testing.T) {
	m := openFixture(t, "llama-f32", model.Options{})
	e := newEngine(t, m, Options{Batch: 4})
	ctx := context.Background()
	V, L := m.Config.VocabSize, m.MaxLen()
	ok := Params{G: 2, Temperature: 0.6, TopP: 0.95, MaxNewTokens: 5, Seed: 1}
	long := make([]int32, L+1)
	for i := range long {
		long[i] = int32(5 + i%100)
	}
	bad := []struct {
		name    string
		prompts []Prompt
		p       Params
		want    string
	}{
		{"empty prompt", []Prompt{{ID: "a", IDs: []int32{5}}, {ID: "e"}}, ok, `prompt 1 (id "e") is empty`},
		{"longer than the context", []Prompt{{ID: "l", IDs: long}}, ok, "more than the context of 128"},
		{"id outside vocabulary", []Prompt{{ID: "v", IDs: []int32{5, int32(V)}}}, ok, "outside the vocabulary"},
		{"negative id", []Prompt{{ID: "n", IDs: []int32{-1}}}, ok, "outside the vocabulary"},
		{"G > Batch", []Prompt{{ID: "g", IDs: []int32{5}}}, Params{G: 5, MaxNewTokens: 1}, "exceed the engine's Batch"},
		{"G = 0", []Prompt{{ID: "g", IDs: []int32{5}}}, Params{MaxNewTokens: 1}, "want ≥ 1"},
		{"negative temperature", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, Temperature: -1}, "temperature"},
		{"NaN temperature", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, Temperature: float32(math.NaN())}, "temperature"},
		{"top_p > 1", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, TopP: 1.5}, "top_p"},
		{"negative top_k", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, TopK: -2}, "top_k"},
		{"negative max_new_tokens", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, MaxNewTokens: -1}, "max_new_tokens"},
		{"stop strings without tokenizer", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, MaxNewTokens: 3, Stop: []string{"x"}}, "need a tokenizer"},
		{"stop id outside vocabulary", []Prompt{{ID: "t", IDs: []int32{5}}}, Params{G: 1, MaxNewTokens: 3, StopIDs: []int32{int32(V)}}, "stop id"},
	}
	for _, c := range bad {
		_, err := e.Generate(ctx, c.prompts, c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// max_new_tokens = 0: empty responses, no work.
	gs, err := e.Generate(ctx, []Prompt{{ID: "z", IDs: []int32{5, 6}}}, Params{G: 3 - 1, MaxNewTokens: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || len(gs[0].Samples) != 2 || len(gs[0].Samples[0].IDs) != 0 || gs[0].Samples[1].Finish != FinishLength {
		t.Errorf("max_new_tokens 0: got %+v", gs)
	}
	// A prompt filling the whole context: nothing fits after it.
	full := Prompt{ID: "full", IDs: long[:L]}
	// A long prompt near the end: it stops at the context, not at max_new_tokens.
	near := Prompt{ID: "near", IDs: long[:L-3]}
	gs, err = e.Generate(ctx, []Prompt{full, near, {ID: "short", IDs: []int32{9}}}, Params{G: 2, Temperature: 1, MaxNewTokens: 10, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		n int
		f Finish
	}{{0, FinishContext}, {3, FinishContext}, {10, FinishLength}} {
		for _, s := range gs[i].Samples {
			if len(s.IDs) != want.n || s.Finish != want.f {
				t.Errorf("prompt %s sample %d: %d tokens, finish %q; want %d, %q", gs[i].ID, s.Index, len(s.IDs), s.Finish, want.n, want.f)
			}
		}
	}
	d, _ := maxScoreDiff(t, m, true, gs)
	if d > 1e-4 {
		t.Errorf("context-length prompts: max |Δ log-prob| %.2e", d)
	}
	// A cancelled context stops with its error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Generate(cctx, []Prompt{{ID: "c", IDs: []int32{5}}}, ok); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled context: %v", err)
	}
	// Breaking out of the iterator stops generation cleanly.
	n := 0
	for g, err := range e.Groups(ctx, randomPrompts(1, 6, 1, 5, V), ok) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 2 || g == nil {
			break
		}
	}
	if n != 2 {
		t.Errorf("iterator yielded %d groups before the break", n)
	}
	if _, err := e.Generate(ctx, nil, ok); err != nil {
		t.Errorf("no prompts: %v", err)
	}
}

// TestLongPromptChunkedPrefill: a prompt longer than one prefill chunk
// (128 rows) on a model opened with MaxLen 320, adapters on, greedy and
// sampled, still agrees with the training forward.
func TestLongPromptChunkedPrefill(t *testing.T) {
	m := openFixture(t, "qwen3-f32-tied", model.Options{MaxLen: 320})
	e := newEngine(t, m, Options{Batch: 4})
	prompts := randomPrompts(9, 2, 250, 300, m.Config.VocabSize)
	gs, err := e.Generate(context.Background(), prompts, Params{G: 2, Temperature: 0.7, TopP: 0.9, MaxNewTokens: 8, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	d, n := maxScoreDiff(t, m, true, gs)
	t.Logf("%d tokens after prompts of %d and %d tokens: max |Δ log-prob| %.2e", n, len(prompts[0].IDs), len(prompts[1].IDs), d)
	if d > 1e-4 || n != 32 {
		t.Errorf("max |Δ log-prob| %.2e over %d tokens (want ≤ 1e-4 over 32)", d, n)
	}
}

// TestMergedLoRA: merged adapters give the unmerged log-probs within 1e-4
// and leave the model unmerged with its adapters working.
func TestMergedLoRA(t *testing.T) {
	m := openFixture(t, "qwen2-f32", model.Options{})
	prompts := randomPrompts(4, 4, 3, 12, m.Config.VocabSize)
	p := Params{G: 2, Temperature: 0, MaxNewTokens: 10, Seed: 1}
	ctx := context.Background()
	plain, err := newEngine(t, m, Options{}).Generate(ctx, prompts, p)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := newEngine(t, m, Options{MergeLoRA: true}).Generate(ctx, prompts, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Merged() {
		t.Fatal("the engine left the adapters merged")
	}
	d, _ := maxScoreDiff(t, m, true, merged)
	var dl float64
	for i := range plain {
		for j := range plain[i].Samples {
			a, b := plain[i].Samples[j], merged[i].Samples[j]
			if !slices.Equal(a.IDs, b.IDs) {
				t.Errorf("greedy ids differ merged vs unmerged (prompt %d)", i)
				continue
			}
			for k := range a.LogProbs {
				dl = math.Max(dl, math.Abs(float64(a.LogProbs[k]-b.LogProbs[k])))
			}
		}
	}
	t.Logf("merged vs training forward %.2e, merged vs unmerged %.2e", d, dl)
	if d > 1e-4 || dl > 1e-4 {
		t.Errorf("merged LoRA: vs training forward %.2e, vs unmerged %.2e (tol 1e-4)", d, dl)
	}
}

// TestFiveHundredTwelveConcurrent: `train generate --n 128 --batch 512` on
// 4 prompts runs their 512 samples in the same steps (issue 33's
// acceptance): the engine's own statistics say a step held 512 sequences,
// and every sample got its tokens.
func TestFiveHundredTwelveConcurrent(t *testing.T) {
	m := openFixture(t, "qwen2-f32", model.Options{})
	e := newEngine(t, m, Options{Batch: 512})
	prompts := randomPrompts(33, 4, 5, 12, m.Config.VocabSize)
	gs, err := e.Generate(context.Background(), prompts, Params{G: 128, Temperature: 1, MaxNewTokens: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range gs {
		for _, s := range g.Samples {
			if len(s.IDs) != 3 || len(s.LogProbs) != 3 {
				t.Fatalf("prompt %s sample %d: %d tokens, %d log-probs; want 3 of each", g.ID, s.Index, len(s.IDs), len(s.LogProbs))
			}
			n++
		}
	}
	st := e.Stats()
	t.Logf("%d samples, %d steps, at most %d sequences in one step, %d preemptions", n, st.DecodeSteps, st.MaxRows, st.Preemptions)
	if n != 512 || st.MaxRows != 512 {
		t.Errorf("%d samples, at most %d sequences in one step; want 512 and 512", n, st.MaxRows)
	}
}
