package env

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
)

func dialogues(t *testing.T, n int) []data.Record {
	t.Helper()
	cfg := synth.DefaultConfig()
	cfg.Train, cfg.Val, cfg.Test = n, 0, 0
	d, err := synth.GenerateDialogues(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d.Train
}

func start(t *testing.T, e Env, rec *data.Record, name string) *Episode {
	t.Helper()
	ep, err := Start(context.Background(), e, rec, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// goldCalls returns every gold call of rec's turns, in order.
func goldCalls(rec *data.Record) []data.Call {
	var out []data.Call
	for _, tu := range rec.Turns {
		out = append(out, tu.Calls...)
	}
	return out
}

// TestSynthDeterministic: a result is a pure function of the seed, the
// API and its arguments: the same in two episodes, whatever was called
// before, in reverse order, with arguments spelled differently (spaces
// around strings, enum values in another case, 3 vs 3.0); another seed
// gives other results.
func TestSynthDeterministic(t *testing.T) {
	ctx := context.Background()
	for _, rec := range dialogues(t, 12) {
		calls := goldCalls(&rec)
		a, b := start(t, Synth{}, &rec, "a"), start(t, Synth{}, &rec, "b")
		var first []string
		for _, c := range calls {
			st, err := a.Step(ctx, Calls([]data.Call{c}))
			if err != nil || st.Done || len(st.Messages) != 1 {
				t.Fatalf("%s: %v %+v", rec.ID, err, st)
			}
			m := st.Messages[0]
			if m.Role != "tool" || m.Name != c.Name || strings.Contains(m.Content, "error") {
				t.Fatalf("%s: gold call %s answered %+v", rec.ID, c.Name, m)
			}
			first = append(first, m.Content)
		}
		for i := len(calls) - 1; i >= 0; i-- { // reverse order, in one step
			st, err := b.Step(ctx, Calls(calls))
			if err != nil {
				t.Fatal(err)
			}
			if st.Messages[i].Content != first[i] {
				t.Errorf("%s: call %d answered %s, then %s", rec.ID, i, first[i], st.Messages[i].Content)
			}
		}
		// Spelling variants of the same arguments.
		c := calls[0]
		v := data.Call{Name: c.Name, Arguments: map[string]any{}}
		for k, x := range c.Arguments {
			switch y := x.(type) {
			case string:
				x = "  " + y + " "
				if c.Name == "find_restaurants" && k == "cuisine" {
					x = strings.ToUpper(y)
				}
			case int:
				x = float64(y)
			}
			v.Arguments[k] = x
		}
		if st, _ := start(t, Synth{}, &rec, "c").Step(ctx, Calls([]data.Call{v})); st.Messages[0].Content != first[0] {
			t.Errorf("%s: %v answered %s, %v answered %s", rec.ID, c.Arguments, first[0], v.Arguments, st.Messages[0].Content)
		}
		other := rec
		other.Env = &data.EnvSpec{Name: "synth", Seed: rec.Env.Seed + 1}
		if st, _ := start(t, Synth{}, &other, "d").Step(ctx, Calls(calls[:1])); st.Messages[0].Content == first[0] {
			t.Errorf("%s: seeds %d and %d answer %s alike", rec.ID, rec.Env.Seed, rec.Env.Seed+1, first[0])
		}
	}
}

// TestSynthStateIsolated: two episodes of one record keep their own
// state; the state lists the world-changing calls in a canonical order,
// and refused calls change nothing.
func TestSynthStateIsolated(t *testing.T) {
	ctx := context.Background()
	var rec data.Record
	for _, r := range dialogues(t, 30) {
		if len(r.Turns) >= 4 { // at least two world-changing calls
			rec = r
			break
		}
	}
	if rec.ID == "" {
		t.Fatal("no dialogue of 3+ calls")
	}
	calls := goldCalls(&rec)
	a, b := start(t, Synth{}, &rec, "a"), start(t, Synth{}, &rec, "b")
	if _, err := a.Step(ctx, Calls(calls)); err != nil {
		t.Fatal(err)
	}
	if got := string(b.State()); got != "[]" {
		t.Errorf("untouched episode state %s", got)
	}
	rev := append([]data.Call(nil), calls...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if _, err := b.Step(ctx, Calls(rev)); err != nil {
		t.Fatal(err)
	}
	if string(a.State()) != string(b.State()) {
		t.Errorf("same calls in another order, other states:\n%s\n%s", a.State(), b.State())
	}
	var effects []data.Call
	if err := json.Unmarshal(a.State(), &effects); err != nil || len(effects) < 2 {
		t.Fatalf("state %s: %v", a.State(), err)
	}
	gold, err := Replay(ctx, Synth{}, &rec)
	if err != nil || string(gold) != string(a.State()) {
		t.Errorf("Replay: %s, %v; want %s", gold, err, a.State())
	}
	// Refused calls: not offered, unknown argument, wrong type, enum.
	c := start(t, Synth{}, &rec, "c")
	bad := []format.ParsedCall{
		{Name: "lock_door", Arguments: map[string]any{"door": "front"}},
		{Name: calls[1].Name, Arguments: map[string]any{"colour": "red"}},
	}
	if rec.Tools[0].Name != "lock_door" {
		st, err := c.Step(ctx, bad)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.Messages[0].Content, "not among the tools offered") || !strings.Contains(st.Messages[1].Content, `unknown argument \"colour\"`) {
			t.Errorf("refusals: %+v", st.Messages)
		}
	}
	if got := string(c.State()); got != "[]" {
		t.Errorf("refused calls changed the state: %s", got)
	}
}

// TestSimRefusals: type and enum checks of the simulated APIs.
func TestSimRefusals(t *testing.T) {
	sim, err := synth.NewSim(1, "es")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"find_restaurants", map[string]any{"city": "Madrid", "cuisine": "martian"}, `is not one of`},
		{"find_restaurants", map[string]any{"city": 3, "cuisine": "thai"}, "want a string"},
		{"reserve_table", map[string]any{"restaurant": "X", "date": "2025-01-01", "time": "20:00", "party_size": 2.5}, "want an integer"},
		{"reserve_table", map[string]any{"restaurant": "X", "date": "2025-01-01", "time": "20:00"}, `missing required argument \"party_size\"`},
		{"no_such_api", map[string]any{}, "unknown function"},
	} {
		if got := sim.Call(c.name, c.args); !strings.Contains(got, c.want) || !strings.HasPrefix(got, `{"error":`) {
			t.Errorf("%s %v: %s, want an error with %q", c.name, c.args, got, c.want)
		}
	}
	if len(sim.Effects()) != 0 {
		t.Errorf("refused calls recorded effects: %v", sim.Effects())
	}
	if _, err := synth.NewSim(1, "xx"); err == nil {
		t.Error("unknown language accepted")
	}
}

// TestEpisodeUserTurns: a turn without calls asks the record's next user
// message, and ends the episode when none is left; a step after the end is
// an error.
func TestEpisodeUserTurns(t *testing.T) {
	ctx := context.Background()
	rec := dialogues(t, 1)[0]
	rec.Turns = append(rec.Turns, data.Turn{User: "¿Algo más?", Calls: []data.Call{}}, data.Turn{User: "Gracias.", Calls: []data.Call{}})
	ep := start(t, Synth{}, &rec, "u")
	for _, want := range []string{"¿Algo más?", "Gracias."} {
		st, err := ep.Step(ctx, nil)
		if err != nil || st.Done || len(st.Messages) != 1 || st.Messages[0].Role != "user" || st.Messages[0].Content != want {
			t.Fatalf("no-call step: %+v, %v; want the user message %q", st, err, want)
		}
	}
	st, err := ep.Step(ctx, nil)
	if err != nil || !st.Done || st.Messages != nil || !ep.Done() {
		t.Fatalf("last no-call step: %+v, %v; want done", st, err)
	}
	if _, err := ep.Step(ctx, Calls(rec.Calls)); err == nil {
		t.Error("a step after the end was accepted")
	}
	other := rec
	other.Env = &data.EnvSpec{Name: "bfcl"}
	if _, err := Start(ctx, Synth{}, &other, "x"); err == nil || !strings.Contains(err.Error(), "not synth") {
		t.Errorf("a bfcl record on synth: %v", err)
	}
	if _, err := New(Config{Name: "gym"}); err == nil {
		t.Error("unknown environment accepted")
	}
}

// TestBFCLMath: the bfcl environment answers MathAPI calls as BFCL's
// class does and refuses classes it does not simulate.
func TestBFCLMath(t *testing.T) {
	ctx := context.Background()
	rec := data.Record{ID: "m", Lang: "en", Tools: []data.Tool{{Name: "add"}, {Name: "mean"}, {Name: "divide"}, {Name: "round_number"}, {Name: "logarithm"}},
		Env: &data.EnvSpec{Name: "bfcl", Config: json.RawMessage(`{"involved_classes":["MathAPI"],"initial_config":{"MathAPI":{}}}`)}}
	ep := start(t, BFCL{}, &rec, "m")
	st, err := ep.Step(ctx, []format.ParsedCall{
		{Name: "add", Arguments: map[string]any{"a": 3.0, "b": 4.5}},
		{Name: "mean", Arguments: map[string]any{"numbers": []any{1.0, 2.0, 6.0}}},
		{Name: "divide", Arguments: map[string]any{"a": 1.0, "b": 0.0}},
		{Name: "round_number", Arguments: map[string]any{"number": 2.5}},
		{Name: "logarithm", Arguments: map[string]any{"value": 1000.0, "base": 10.0, "precision": 3.0}},
		{Name: "power", Arguments: map[string]any{"base": 2.0, "exponent": 3.0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"result":7.5}`, `{"result":3}`, `{"error":"Cannot divide by zero"}`, `{"result":2}`, `{"result":3}`, "not among the tools offered"}
	for i, w := range want {
		if !strings.Contains(st.Messages[i].Content, w) {
			t.Errorf("call %d: %s, want %s", i, st.Messages[i].Content, w)
		}
	}
	if string(ep.State()) != `{"MathAPI":{}}` {
		t.Errorf("state %s", ep.State())
	}
	rec.Env.Config = json.RawMessage(`{"involved_classes":["MathAPI","TradingBot"]}`)
	if _, err := Start(ctx, BFCL{}, &rec, "t"); err == nil || !strings.Contains(err.Error(), "TradingBot is not simulated") {
		t.Errorf("TradingBot: %v", err)
	}
}
