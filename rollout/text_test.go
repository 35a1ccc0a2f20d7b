package rollout

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/model/tokenizer/bpetrain"
)

// textFixture trains a 300-token byte-level BPE (ChatML added tokens) on
// synthetic benchmark records rendered with qwen2.5 + tool_call, so that
// its ids fit the fixtures' vocabulary of 320, and returns it with the
// records.
func textFixture(t *testing.T) (*tokenizer.Tokenizer, []data.Record, chat.Template, format.Format) {
	t.Helper()
	cfg := synth.DefaultConfig()
	cfg.Train, cfg.Val, cfg.Test, cfg.Base = 40, 4, 2, 4
	out, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Get("qwen2.5")
	if err != nil {
		t.Fatal(err)
	}
	f, err := format.Get("tool_call", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range out.Train {
		rr, err := tmpl.Render(r, f, true)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, rr.Text)
	}
	bpe, err := bpetrain.Train(texts, bpetrain.Config{VocabSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := bpe.WriteDir(dir, 4096); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok, out.Val, tmpl, f
}

// TestTextAndStopStrings: records → prompts through the chat template;
// text, offsets and stop strings on a fixture model with a real tokenizer.
func TestTextAndStopStrings(t *testing.T) {
	tok, recs, tmpl, f := textFixture(t)
	m := openFixture(t, "qwen2-f32", model.Options{MaxLen: 1024})
	prompts, err := RecordPrompts(recs, tmpl, f, tok)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range prompts {
		r, _ := tmpl.Render(recs[i], f, false)
		if p.ID != recs[i].ID || tok.Decode(p.IDs, false) != r.Prompt {
			t.Fatalf("prompt %d: id %q, text does not decode back to the rendered prompt", i, p.ID)
		}
	}
	e := newEngine(t, m, Options{Batch: 8, Tokenizer: tok})
	ctx := context.Background()
	p := Params{G: 2, Temperature: 1, MaxNewTokens: 40, StopIDs: StopIDs(tok, m.Config), Seed: 8}
	if !slices.Contains(p.StopIDs, mustID(t, tok, "<|im_end|>")) {
		t.Fatalf("StopIDs %v lack <|im_end|>", p.StopIDs)
	}
	free, err := e.Generate(ctx, prompts, p)
	if err != nil {
		t.Fatal(err)
	}
	// Text is decode(ids) without special tokens; offsets tile it.
	var stopAt *Sample
	var stopG, stopS int
	for gi, g := range free {
		for i := range g.Samples {
			s := &g.Samples[i]
			if s.Text != tok.Decode(s.IDs, true) {
				t.Errorf("%s/%d: text is not decode(ids)", g.ID, s.Index)
			}
			end := 0
			for k, o := range s.Offsets {
				if o[0] != end || o[1] < o[0] {
					t.Fatalf("%s/%d: offset %d = %v does not continue at %d", g.ID, s.Index, k, o, end)
				}
				end = o[1]
			}
			if end != len(s.Text) {
				t.Errorf("%s/%d: offsets end at %d, text has %d bytes", g.ID, s.Index, end, len(s.Text))
			}
			if stopAt == nil && len(s.IDs) >= 20 && s.Finish == FinishLength {
				stopAt, stopG, stopS = s, gi, i
			}
		}
	}
	if stopAt == nil {
		t.Fatal("no sample of 20+ tokens to cut with a stop string")
	}
	// A stop string taken from the middle of a sample's text ends each
	// sample right after the token completing its first occurrence; the
	// ids before are the same (same seed, same streams); samples without
	// it are unchanged.
	stop := stopAt.Text[stopAt.Offsets[9][0]:stopAt.Offsets[11][1]]
	p2 := p
	p2.Stop = []string{"\x00never", stop}
	cut, err := e.Generate(ctx, prompts, p2)
	if err != nil {
		t.Fatal(err)
	}
	nCut := 0
	for gi, g := range cut {
		for i, s := range g.Samples {
			orig := free[gi].Samples[i]
			if len(s.IDs) > len(orig.IDs) || !slices.Equal(s.IDs, orig.IDs[:len(s.IDs)]) {
				t.Fatalf("%s/%d: ids with a stop string are not a prefix of the ids without", g.ID, i)
			}
			k := strings.Index(orig.Text, stop)
			if k < 0 {
				if !sameSample(s, orig) {
					t.Errorf("%s/%d: no stop string in the text, but the sample changed", g.ID, i)
				}
				continue
			}
			nCut++
			n := 0 // the first token whose text reaches the match's end
			for orig.Offsets[n][1] < k+len(stop) {
				n++
			}
			if s.Finish != FinishStop || len(s.IDs) != n+1 || !strings.Contains(s.Text, stop) {
				t.Errorf("%s/%d: stop %q at byte %d: got %d tokens (finish %q, text %q), want %d", g.ID, i, stop, k, len(s.IDs), s.Finish, s.Text, n+1)
			}
		}
	}
	t.Logf("stop string %q cut %d of %d samples", stop, nCut, 2*len(cut))
	if got := cut[stopG].Samples[stopS]; got.Finish != FinishStop || len(got.IDs) > 12 {
		t.Errorf("the sample the stop string came from: %d tokens, finish %q; want ≤ 12, stop", len(got.IDs), got.Finish)
	}
}

// sameSample: same tokens, text and finish; log-probs within 1e-5 (equal
// with the gonum build; OpenBLAS rounds a row with its neighbours, see the
// package doc).
func sameSample(a, b Sample) bool {
	if !slices.Equal(a.IDs, b.IDs) || a.Text != b.Text || a.Finish != b.Finish {
		return false
	}
	for i := range a.LogProbs {
		if math.Abs(float64(a.LogProbs[i]-b.LogProbs[i])) > 1e-5 {
			return false
		}
	}
	return true
}

func mustID(t *testing.T, tok *tokenizer.Tokenizer, s string) int32 {
	t.Helper()
	id, ok := tok.TokenID(s)
	if !ok {
		t.Fatalf("token %q not in the vocabulary", s)
	}
	return id
}
