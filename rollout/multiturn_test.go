package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/env"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
)

// probeFormat reads one call from any text, so that the random fixture
// models make a call every turn: probe(n = bytes of the turn), its value
// span the turn's first byte.
type probeFormat struct{ format.Format }

func (probeFormat) Name() string { return "probe" }

func (probeFormat) Parse(text string) format.Parsed {
	c := format.ParsedCall{Name: "probe", Arguments: map[string]any{"n": float64(len(text))},
		ArgSpans: map[string]format.Span{"n": {Start: 0, End: min(1, len(text))}}}
	return format.Parsed{Valid: true, Calls: []format.ParsedCall{c}}
}

// echoEnv answers every call with a short tool message naming the turn,
// ends the episode after doneAfter turns (0: never), and fails on
// failTurn (0: never).
type echoEnv struct{ doneAfter, failTurn int }

func (echoEnv) Name() string { return "echo" }

func (e echoEnv) Open(_ context.Context, rec *data.Record, name string) (env.Session, error) {
	return &echoSession{e: e, name: name}, nil
}

type echoSession struct {
	e     echoEnv
	name  string
	turns int
}

func (s *echoSession) Exec(_ context.Context, calls []format.ParsedCall) ([]data.Message, bool, error) {
	s.turns++
	if s.turns == s.e.failTurn {
		return nil, false, errors.New("the echo server is down")
	}
	var out []data.Message
	for _, c := range calls {
		out = append(out, data.Message{Role: "tool", Name: c.Name, Content: fmt.Sprintf(`{"turn": %d, "n": %v}`, s.turns, c.Arguments["n"])})
	}
	return out, s.e.doneAfter > 0 && s.turns >= s.e.doneAfter, nil
}

func (s *echoSession) State() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"turns":%d}`, s.turns))
}
func (s *echoSession) Close() error { return nil }

// pyBlank is what Python's str.strip() removes (the Llama-3 template's trim).
func pyBlank(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

type mtFixture struct {
	tok  *tokenizer.Tokenizer
	recs []data.Record
	tmpl chat.Template
	f    format.Format
	m    *model.Model
	e    *Engine
}

func newMTFixture(t *testing.T) *mtFixture {
	t.Helper()
	tok, recs, tmpl, f := textFixture(t)
	m := openFixture(t, "qwen2-f32", model.Options{MaxLen: 1024})
	return &mtFixture{tok: tok, recs: recs, tmpl: tmpl, f: f, m: m, e: newEngine(t, m, Options{Batch: 8, Tokenizer: tok})}
}

func (fx *mtFixture) params(turns int) Params {
	return Params{G: 2, Temperature: 1, MaxNewTokens: 16, StopIDs: StopIDs(fx.tok, fx.m.Config), Seed: 9, MaxTurns: turns}
}

// checkTrajectory checks one multi-turn sample: the shapes, the turns
// tiling the ids, the mask exactly on the sampled ids, zero log-probs
// elsewhere, texts and offsets, and the template's rendering of the same
// conversation (the ids decoded, specials kept, are that text; the ids
// are that text tokenized around the sampled turns, whose ids are kept).
//
// It returns false, without comparing with the template, for a Llama-3
// trajectory whose turn has surrounding blanks: that template trims an
// assistant turn's content, while the trajectory keeps what was sampled.
func checkTrajectory(t *testing.T, fx *mtFixture, tmpl chat.Template, f format.Format, rec data.Record, promptIDs []int32, s Sample) bool {
	t.Helper()
	tok := fx.tok
	n := len(s.IDs)
	if len(s.LogProbs) != n || len(s.Mask) != n || len(s.Offsets) != n || len(s.Turns) == 0 {
		t.Fatalf("%s/%d: %d ids, %d log-probs, %d mask, %d offsets, %d turns", rec.ID, s.Index, n, len(s.LogProbs), len(s.Mask), len(s.Offsets), len(s.Turns))
	}
	sampled, at := 0, 0
	conv := slices.Clone(rec.Messages)
	eot, _ := tok.TokenID("<|im_end|>")
	want, trimmed := "", false
	for k, tu := range s.Turns {
		if tu.Start != at || tu.End <= tu.Start || tu.EnvEnd < tu.End {
			t.Fatalf("%s/%d turn %d: [%d, %d) env to %d, after %d", rec.ID, s.Index, k, tu.Start, tu.End, tu.EnvEnd, at)
		}
		at = tu.EnvEnd
		sampled += tu.End - tu.Start
		if tu.Text != tok.Decode(s.IDs[tu.Start:tu.End], true) || s.Text[tu.TextStart:tu.TextStart+len(tu.Text)] != tu.Text {
			t.Errorf("%s/%d turn %d: text %q is not its ids' text at %d", rec.ID, s.Index, k, tu.Text, tu.TextStart)
		}
		if s.Offsets[tu.Start][0] != tu.TextStart {
			t.Errorf("%s/%d turn %d: first offset %v, text at %d", rec.ID, s.Index, k, s.Offsets[tu.Start], tu.TextStart)
		}
		// Qwen3 writes an empty think block after the assistant header of
		// the turn to generate but not in earlier turns: the model saw it,
		// so it is part of what the trajectory keeps of the turn.
		content := tok.Decode(s.IDs[tu.Start:tu.End], false)
		if tmpl.Name() == "llama3" && strings.TrimFunc(content, pyBlank) != content {
			trimmed = true
		}
		if tmpl.Name() == "qwen3" {
			content = "<think>\n\n</think>\n\n" + content
		}
		if s.IDs[tu.End-1] == eot {
			content = strings.TrimSuffix(content, "<|im_end|>")
		}
		if tu.EnvEnd == tu.End { // the last turn: nothing appended after it
			r, err := tmpl.Render(data.Record{ID: rec.ID, Tools: rec.Tools, Messages: conv}, f, false)
			if err != nil {
				t.Fatal(err)
			}
			want = r.Prompt + tok.Decode(s.IDs[tu.Start:tu.End], false)
			continue
		}
		env := s.IDs[tu.End:tu.EnvEnd]
		if back, _ := tok.Encode(tok.Decode(env, false), false); !slices.Equal(back, env) {
			t.Errorf("%s/%d turn %d: the appended ids are not a tokenization of their text", rec.ID, s.Index, k)
		}
		conv = append(append(conv, data.Message{Role: "assistant", Content: content}), tu.Env...)
	}
	if at != n {
		t.Fatalf("%s/%d: turns end at %d of %d ids", rec.ID, s.Index, at, n)
	}
	masked := 0
	for i, m := range s.Mask {
		if m {
			masked++
		} else if s.LogProbs[i] != 0 {
			t.Errorf("%s/%d: id %d is not sampled but has log-prob %v", rec.ID, s.Index, i, s.LogProbs[i])
		}
	}
	for _, tu := range s.Turns {
		for i := tu.Start; i < tu.End; i++ {
			if !s.Mask[i] {
				t.Errorf("%s/%d: sampled id %d masked out", rec.ID, s.Index, i)
			}
		}
	}
	if masked != sampled {
		t.Errorf("%s/%d: mask covers %d ids, the turns sampled %d", rec.ID, s.Index, masked, sampled)
	}
	if trimmed {
		return false
	}
	if got := tok.Decode(append(slices.Clone(promptIDs), s.IDs...), false); got != want {
		t.Errorf("%s/%d: the trajectory is not the template's rendering of its conversation:\n got %q\nwant %q", rec.ID, s.Index, got, want)
		return true
	}
	// The same in ids: the rendering cut at the turns, the prompt and the
	// pieces between turns tokenized, each turn's sampled ids in between.
	first, err := tmpl.Render(data.Record{ID: rec.ID, Tools: rec.Tools, Messages: rec.Messages}, f, false)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tok.Encode(first.Prompt, false)
	pos := len(first.Prompt)
	for _, tu := range s.Turns {
		turn := s.IDs[tu.Start:tu.End]
		ids = append(ids, turn...)
		pos += len(tok.Decode(turn, false))
		glueLen := len(tok.Decode(s.IDs[tu.End:tu.EnvEnd], false))
		glue, _ := tok.Encode(want[pos:pos+glueLen], false)
		ids = append(ids, glue...)
		pos += glueLen
	}
	if full := append(slices.Clone(promptIDs), s.IDs...); pos != len(want) || !slices.Equal(ids, full) {
		t.Errorf("%s/%d: the trajectory's ids are not the template's rendering tokenized around the sampled turns", rec.ID, s.Index)
	}
	return true
}

// TestEpisodesTokenInTokenOut: multi-turn rollouts continue the
// conversation with the environment's answers; the ids are the ones
// sampled and the ones the template added, so the training forward over
// them gives back every sampled token's log-prob (π_old) within 1e-4;
// the mask covers exactly the sampled ids; the trajectory decodes to the
// Qwen template's rendering of the same conversation.
func TestEpisodesTokenInTokenOut(t *testing.T) {
	fx := newMTFixture(t)
	f := probeFormat{fx.f}
	groups, err := fx.e.Episodes(context.Background(), fx.recs, fx.params(3), Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: f})
	if err != nil {
		t.Fatal(err)
	}
	var seqs [][]int32
	var samples []Sample
	var plen []int
	turns := 0
	for i, g := range groups {
		if g.ID != fx.recs[i].ID || len(g.Samples) != 2 {
			t.Fatalf("group %d: id %q, %d samples", i, g.ID, len(g.Samples))
		}
		for _, s := range g.Samples {
			checkTrajectory(t, fx, fx.tmpl, f, fx.recs[i], g.PromptIDs, s)
			turns += len(s.Turns)
			if len(s.Turns) == 3 && (s.Finish != FinishTurns || s.Turns[2].Env == nil || string(s.State) != `{"turns":3}`) {
				t.Errorf("%s/%d: 3 turns, finish %q, last answer %v, state %s", g.ID, s.Index, s.Finish, s.Turns[2].Env, s.State)
			}
			seqs = append(seqs, append(slices.Clone(g.PromptIDs), s.IDs...))
			samples = append(samples, s)
			plen = append(plen, len(g.PromptIDs))
		}
	}
	if turns < 3*len(samples)-2 {
		t.Errorf("%d turns over %d samples: episodes did not continue", turns, len(samples))
	}
	got, err := fx.m.LogProbs(seqs, true)
	if err != nil {
		t.Fatal(err)
	}
	d, cnt := 0.0, 0
	for i, s := range samples {
		for j, lp := range s.LogProbs {
			if s.Mask[j] {
				d = math.Max(d, math.Abs(float64(lp)-float64(got[i][plen[i]+j])))
				cnt++
			}
		}
	}
	t.Logf("%d sampled tokens over %d episodes: max |Δ log-prob| vs training forward %.2e", cnt, len(samples), d)
	if d > 1e-4 || cnt < 100 {
		t.Errorf("max |Δ log-prob| %.2e over %d tokens", d, cnt)
	}
	// β spans: every turn's argument span, in Sample.Text.
	s := samples[0]
	spans := s.ArgSpans()
	if len(spans) != len(s.Turns) || spans[1][0] != s.Turns[1].TextStart {
		t.Errorf("ArgSpans %v for turns at %v", spans, []int{s.Turns[0].TextStart, s.Turns[1].TextStart})
	}
}

// TestEpisodesFirstTurnIsSingleTurn: with one turn, an episode's ids and
// log-probs are the single-turn sample's; the stream of later turns
// continues the same draws (the first turn is unchanged by MaxTurns).
func TestEpisodesFirstTurnIsSingleTurn(t *testing.T) {
	fx := newMTFixture(t)
	ctx := context.Background()
	f := probeFormat{fx.f}
	prompts, err := RecordPrompts(fx.recs, fx.tmpl, f, fx.tok)
	if err != nil {
		t.Fatal(err)
	}
	p := fx.params(1)
	single, err := fx.e.Generate(ctx, prompts, Params{G: p.G, Temperature: p.Temperature, MaxNewTokens: p.MaxNewTokens, StopIDs: p.StopIDs, Seed: p.Seed})
	if err != nil {
		t.Fatal(err)
	}
	conv := Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: f}
	one, err := fx.e.Episodes(ctx, fx.recs, p, conv)
	if err != nil {
		t.Fatal(err)
	}
	three, err := fx.e.Episodes(ctx, fx.recs, fx.params(3), conv)
	if err != nil {
		t.Fatal(err)
	}
	for i := range single {
		for j, s := range single[i].Samples {
			a, b := one[i].Samples[j], three[i].Samples[j]
			if !slices.Equal(a.IDs, s.IDs) || !slices.Equal(a.LogProbs, s.LogProbs) || a.Text != s.Text || a.Finish != FinishTurns {
				t.Errorf("prompt %d sample %d: the one-turn episode differs from the single-turn sample (finish %q)", i, j, a.Finish)
			}
			if e := b.Turns[0].End; !slices.Equal(b.IDs[:e], s.IDs) || !slices.Equal(b.LogProbs[:e], s.LogProbs) {
				t.Errorf("prompt %d sample %d: the first of three turns differs from the single-turn sample", i, j)
			}
		}
	}
}

// TestEpisodesDeterminism: the same call gives the same episodes, each
// record alone or among the others and with fewer slots; another seed
// gives others.
func TestEpisodesDeterminism(t *testing.T) {
	fx := newMTFixture(t)
	ctx := context.Background()
	conv := Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: probeFormat{fx.f}}
	p := fx.params(3)
	all, err := fx.e.Episodes(ctx, fx.recs, p, conv)
	if err != nil {
		t.Fatal(err)
	}
	small := newEngine(t, fx.m, Options{Batch: 2, Tokenizer: fx.tok})
	again, err := small.Episodes(ctx, fx.recs, p, conv)
	if err != nil {
		t.Fatal(err)
	}
	for i := range fx.recs {
		alone, err := fx.e.Episodes(ctx, fx.recs[i:i+1], p, conv)
		if err != nil {
			t.Fatal(err)
		}
		for j := range all[i].Samples {
			a, b, c := all[i].Samples[j], alone[0].Samples[j], again[i].Samples[j]
			if !sameEpisode(a, b) || !sameEpisode(a, c) {
				t.Errorf("%s/%d: the episode depends on the call's composition", fx.recs[i].ID, j)
			}
		}
	}
	p.Seed++
	other, err := fx.e.Episodes(ctx, fx.recs, p, conv)
	if err != nil {
		t.Fatal(err)
	}
	if sameEpisode(other[0].Samples[0], all[0].Samples[0]) && sameEpisode(other[1].Samples[0], all[1].Samples[0]) {
		t.Error("seeds 9 and 10 gave the same episodes")
	}
}

func sameEpisode(a, b Sample) bool {
	if !sameSample(a, b) || !slices.Equal(a.Mask, b.Mask) || len(a.Turns) != len(b.Turns) || string(a.State) != string(b.State) {
		return false
	}
	for k := range a.Turns {
		x, y := a.Turns[k], b.Turns[k]
		if x.Start != y.Start || x.End != y.End || x.EnvEnd != y.EnvEnd || x.Text != y.Text {
			return false
		}
	}
	return true
}

// TestEpisodesUserTurnsAndTemplates: records with scripted user turns get
// them after an answer without calls (the fixture model never writes a
// tool call), rendered as the Qwen2.5, Qwen3 and Llama-3 templates write
// them; the synth environment ends an episode whose answer has no calls.
func TestEpisodesUserTurnsAndTemplates(t *testing.T) {
	fx := newMTFixture(t)
	ctx := context.Background()
	recs := slices.Clone(fx.recs)
	for i := range recs {
		recs[i].Turns = []data.Turn{{Calls: recs[i].Calls}, {User: "¿Y mañana?", Calls: []data.Call{}}, {User: "Gracias.", Calls: []data.Call{}}}
	}
	m := openFixture(t, "qwen2-f32", model.Options{MaxLen: 2048}) // Llama-3's tool list is long
	for _, name := range []string{"qwen2.5", "qwen3", "llama3"} {
		tmpl, err := chat.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		e := newEngine(t, m, Options{Batch: 8, Tokenizer: fx.tok})
		groups, err := e.Episodes(ctx, recs, fx.params(4), Conversation{Env: env.Synth{}, Template: tmpl, Format: fx.f})
		if err != nil {
			t.Fatal(err)
		}
		users, compared := 0, 0
		for i, g := range groups {
			for _, s := range g.Samples {
				if checkTrajectory(t, fx, tmpl, fx.f, recs[i], g.PromptIDs, s) {
					compared++
				}
				for _, tu := range s.Turns {
					if len(tu.Parsed.Calls) > 0 {
						t.Fatalf("the fixture model wrote a call: %q", tu.Text)
					}
					if tu.Env != nil {
						if len(tu.Env) != 1 || tu.Env[0].Role != "user" {
							t.Errorf("%s: answer %+v, want one user message", name, tu.Env)
						}
						users++
					}
				}
				if len(s.Turns) == 3 && (s.Finish != FinishDone || string(s.State) != "[]") {
					t.Errorf("%s: %d turns, finish %q, state %s", name, len(s.Turns), s.Finish, s.State)
				}
			}
		}
		if users < len(recs) || compared < len(recs)/2 {
			t.Errorf("%s: %d user turns asked over %d episodes; %d compared with the template", name, users, 2*len(recs), compared)
		}
		t.Logf("%s: %d user turns over %d episodes, %d compared with the template", name, users, 2*len(recs), compared)
	}
}

// TestEpisodesLimitsAndErrors: the environment budget, the turn cap, an
// environment that fails, and the calls that cannot run.
func TestEpisodesLimitsAndErrors(t *testing.T) {
	fx := newMTFixture(t)
	ctx := context.Background()
	f := probeFormat{fx.f}
	// An environment answer longer than MaxEnvTokens ends the episode.
	gs, err := fx.e.Episodes(ctx, fx.recs[:1], fx.params(3), Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: f, MaxEnvTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range gs[0].Samples {
		if len(s.Turns) != 1 || s.Finish != FinishContext || s.Turns[0].Env == nil || s.Turns[0].EnvEnd != s.Turns[0].End {
			t.Errorf("MaxEnvTokens 3: %d turns, finish %q", len(s.Turns), s.Finish)
		}
	}
	// The environment ends the episode after two turns.
	gs, err = fx.e.Episodes(ctx, fx.recs[:1], fx.params(5), Conversation{Env: echoEnv{doneAfter: 2}, Template: fx.tmpl, Format: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range gs[0].Samples {
		if len(s.Turns) != 2 || s.Finish != FinishDone || s.Turns[1].Env != nil {
			t.Errorf("done after 2: %d turns, finish %q", len(s.Turns), s.Finish)
		}
	}
	// A failing environment fails the call, naming the record.
	_, err = fx.e.Episodes(ctx, fx.recs[:2], fx.params(3), Conversation{Env: echoEnv{failTurn: 2}, Template: fx.tmpl, Format: f})
	if err == nil || !strings.Contains(err.Error(), "the echo server is down") || !strings.Contains(err.Error(), fx.recs[0].ID) {
		t.Errorf("failing environment: %v", err)
	}
	// The engine stays usable after the failure.
	if _, err := fx.e.Episodes(ctx, fx.recs[:1], fx.params(2), Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: f}); err != nil {
		t.Errorf("after a failure: %v", err)
	}
	bad := []struct {
		name string
		run  func() error
		want string
	}{
		{"no tokenizer", func() error {
			_, err := newEngine(t, fx.m, Options{}).Episodes(ctx, fx.recs, fx.params(2), Conversation{Env: echoEnv{}, Template: fx.tmpl, Format: f})
			return err
		}, "needs a tokenizer"},
		{"no environment", func() error {
			_, err := fx.e.Episodes(ctx, fx.recs, fx.params(2), Conversation{Template: fx.tmpl, Format: f})
			return err
		}, "an environment"},
		{"negative max_turns", func() error {
			p := fx.params(2)
			p.MaxTurns = -1
			_, err := fx.e.Generate(ctx, []Prompt{{ID: "x", IDs: []int32{5}}}, p)
			return err
		}, "max_turns -1"},
		{"Generate with max_turns", func() error {
			_, err := fx.e.Generate(ctx, []Prompt{{ID: "x", IDs: []int32{5}}}, fx.params(2))
			return err
		}, "run through Episodes"},
	}
	for _, c := range bad {
		if err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestGlue: the ids appended after a turn are the template's text between
// the turn's content and the next turn's: after a sampled end-of-turn
// token the template's marker is not repeated; after a turn cut short it
// is added.
func TestGlue(t *testing.T) {
	fx := newMTFixture(t)
	rec := fx.recs[0]
	p := fx.params(3)
	r := &runState{e: fx.e, p: &p, mt: &multiTurn{c: Conversation{Template: fx.tmpl, Format: fx.f}, recs: []data.Record{rec}}}
	eot := mustID(t, fx.tok, "<|im_end|>")
	text, _ := fx.tok.Encode("<tool_call>\n{\"name\": \"f\"}\n</tool_call>", false)
	answer := []data.Message{{Role: "tool", Name: "f", Content: `{"ok": true}`}}
	const after = "\n<|im_start|>user\n<tool_response>\n{\"ok\": true}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
	for _, c := range []struct {
		name string
		ids  []int32
		want string
	}{
		{"ended by <|im_end|>", append(slices.Clone(text), eot), after},
		{"cut short", text, "<|im_end|>" + after},
	} {
		sq := &seqState{s: &Sample{IDs: c.ids}, ep: &episode{rec: &rec, conv: slices.Clone(rec.Messages)}}
		glue, err := r.glue(sq, answer)
		if err != nil {
			t.Fatal(err)
		}
		if got := fx.tok.Decode(glue, false); got != c.want {
			t.Errorf("%s: glue %q, want %q", c.name, got, c.want)
		}
		if back, _ := fx.tok.Encode(c.want, false); !slices.Equal(back, glue) {
			t.Errorf("%s: glue ids are not the tokenized text", c.name)
		}
	}
}
