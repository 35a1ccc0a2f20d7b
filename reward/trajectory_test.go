package reward

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/data/synth"
	"github.com/argrl/argrl/env"
)

// cancelRecord is a three-call dialogue on the simulated APIs: list the
// day's events, cancel the first (its title comes from the list's result),
// tell Ana; then answer.
func cancelRecord(t *testing.T) (data.Record, string) {
	t.Helper()
	var tools []data.Tool
	for _, a := range synth.APIs() {
		switch a.Name {
		case "list_events", "cancel_event", "send_message":
			tools = append(tools, data.Tool{Name: a.Name, Description: a.Desc, Parameters: a.Parameters()})
		}
	}
	sim, err := synth.NewSim(77, "es")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Events []struct{ Title string } `json:"events"`
	}
	if err := json.Unmarshal([]byte(sim.Call("list_events", map[string]any{"date": "2025-05-02"})), &res); err != nil || len(res.Events) == 0 {
		t.Fatalf("list_events: %v %+v", err, res)
	}
	title := res.Events[0].Title
	turns := []data.Turn{
		{Calls: []data.Call{{Name: "list_events", Arguments: map[string]any{"date": "2025-05-02"}}}},
		{Calls: []data.Call{{Name: "cancel_event", Arguments: map[string]any{"title": title, "date": "2025-05-02"}}}},
		{Calls: []data.Call{{Name: "send_message", Arguments: map[string]any{"contact": "Ana", "text": "cancelado"}}}},
		{Calls: []data.Call{}},
	}
	rec := data.Record{ID: "mt-cancel", Lang: "es", Tools: tools,
		Messages: []data.Message{{Role: "user", Content: "Cancela mi primer evento del 2025-05-02 y avisa a Ana."}},
		Calls:    turns[0].Calls, Turns: turns, Env: &data.EnvSpec{Name: "synth", Seed: 77}}
	if err := rec.Validate(); err != nil {
		t.Fatal(err)
	}
	return rec, title
}

// play runs texts as an episode's turns on the synth environment and
// returns the trajectory (the state the calls leave).
func play(t *testing.T, rec *data.Record, texts ...string) Trajectory {
	t.Helper()
	ep, err := env.Start(context.Background(), env.Synth{}, rec, "test")
	if err != nil {
		t.Fatal(err)
	}
	f := format.ToolCall{}
	for _, tx := range texts {
		p := f.Parse(tx)
		if len(p.Calls) == 0 {
			break
		}
		if _, err := ep.Step(context.Background(), p.Calls); err != nil {
			t.Fatal(err)
		}
	}
	return Trajectory{Turns: texts, State: ep.State()}
}

func trajReward(t *testing.T, turn string, c TrajectoryConfig) *TrajectoryReward {
	t.Helper()
	r, err := Get(turn, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrajectory(r, env.Synth{}, c)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestTrajectoryReward: hand-computed rewards of whole episodes, per-turn
// reward binary (and decomposed), R = turn_weight·mean + state_weight·S.
func TestTrajectoryReward(t *testing.T) {
	rec, title := cancelRecord(t)
	f := format.ToolCall{}
	call := func(name string, args map[string]any) string {
		return f.Render([]data.Call{{Name: name, Arguments: args}}, rec.Tools)
	}
	t0 := call("list_events", map[string]any{"date": "2025-05-02"})
	t1 := call("cancel_event", map[string]any{"title": title, "date": "2025-05-02"})
	t1bad := call("cancel_event", map[string]any{"title": "otra cosa", "date": "2025-05-02"})
	t2 := call("send_message", map[string]any{"contact": "Ana", "text": "cancelado"})
	done := "Hecho."
	ctx := context.Background()
	bin := trajReward(t, "binary", DefaultTrajectoryConfig())
	cases := []struct {
		name   string
		r      *TrajectoryReward
		texts  []string
		turns  []float64
		state  float64
		reward float64
	}{
		// Every turn right, the same final state: 1 + 1.
		{"gold", bin, []string{t0, t1, t2, done}, []float64{1, 1, 1, 1}, 1, 2},
		// Answers instead of the message: turn 2 fails, the unreached final
		// turn is an empty answer (no call: passes); state {cancel} of
		// {cancel, send}: 1/2. 3/4 + 1/2.
		{"stops early", bin, []string{t0, t1, done}, []float64{1, 1, 0, 1}, 0.5, 1.25},
		// The cancelled title is not the one the list returned: turn 1
		// fails and the state holds another cancellation. 3/4 + 1/2.
		{"wrong title", bin, []string{t0, t1bad, t2, done}, []float64{1, 0, 1, 1}, 0.5, 1.25},
		// The message twice: the extra call turn fails against the final
		// no-call turn, the answer past the gold passes; state 2 of 3.
		{"extra turn", bin, []string{t0, t1, t2, t2, done}, []float64{1, 1, 1, 0, 1}, 2.0 / 3, 0.8 + 2.0/3},
		// Nothing done: list ≠ answer, three unreached turns; state 0 of 2.
		{"no call", bin, []string{done}, []float64{0, 0, 0, 1}, 0, 0.25},
		// Weights 2 and 0.5 on "stops early": 2·3/4 + 0.5·1/2.
		{"weights", trajReward(t, "binary", TrajectoryConfig{TurnWeight: 2, StateWeight: 0.5}), []string{t0, t1, done}, []float64{1, 1, 0, 1}, 0.5, 1.75},
		// decomposed: the wrong title is 0.2 + 0.3 + 0.5·(1/2) = 0.75; the
		// no-call turns are 1. (1 + 0.75 + 1 + 1)/4 + 1/2.
		{"decomposed wrong title", trajReward(t, "decomposed", DefaultTrajectoryConfig()), []string{t0, t1bad, t2, done}, []float64{1, 0.75, 1, 1}, 0.5, 0.9375 + 0.5},
	}
	for _, c := range cases {
		tr := play(t, &rec, c.texts...)
		res, err := c.r.Score(ctx, &rec, tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Turns) != len(c.turns) {
			t.Fatalf("%s: %d turn results, want %d", c.name, len(res.Turns), len(c.turns))
		}
		for i, w := range c.turns {
			if math.Abs(res.Turns[i].Reward-w) > 1e-9 {
				t.Errorf("%s: turn %d reward %v, want %v (gate %s)", c.name, i, res.Turns[i].Reward, w, res.Turns[i].Gate)
			}
		}
		if !res.HasState || math.Abs(res.State-c.state) > 1e-9 || math.Abs(res.Reward-c.reward) > 1e-9 {
			t.Errorf("%s: state %v (has %v), reward %v; want %v, %v", c.name, res.State, res.HasState, res.Reward, c.state, c.reward)
		}
	}
	// Without a state the term is left out.
	res, err := bin.Score(ctx, &rec, Trajectory{Turns: []string{t0, t1, done}})
	if err != nil || res.HasState || math.Abs(res.Reward-0.75) > 1e-9 {
		t.Errorf("no state: %+v, %v", res, err)
	}
	// Spans come back shifted by each turn's start.
	res, err = bin.Score(ctx, &rec, Trajectory{Turns: []string{t0, t1}, Starts: []int{0, 1000}})
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(t1, title)
	found := false
	for _, sp := range res.Spans {
		found = found || sp == [2]int{1000 + at, 1000 + at + len(title)}
	}
	if !found || len(res.Spans) != 3 {
		t.Errorf("spans %v, want 3 with the title at %d", res.Spans, 1000+at)
	}
	if _, err := bin.Score(ctx, &rec, Trajectory{Turns: []string{t0}, Starts: []int{0, 1}}); err == nil {
		t.Error("starts of the wrong length accepted")
	}
	if _, err := NewTrajectory(nil, nil, DefaultTrajectoryConfig()); err == nil {
		t.Error("no per-turn reward accepted")
	}
	if _, err := NewTrajectory(bin.turn, nil, TrajectoryConfig{}); err == nil {
		t.Error("zero weights accepted")
	}
}

// TestTrajectorySingleTurn: a record without turns has one gold turn: a
// one-turn trajectory scores what the per-turn reward gives, here paper
// 000 Table 1's RM-3 of the English values, 2.125.
func TestTrajectorySingleTurn(t *testing.T) {
	rec := table1Record(t)
	rm3 := getReward(t, "rm3", func(c *Config) { c.Format = "pythonic" })
	tr, err := NewTrajectory(rm3, nil, DefaultTrajectoryConfig())
	if err != nil {
		t.Fatal(err)
	}
	text := `[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dollars")]`
	got, err := tr.Score(context.Background(), &rec, Trajectory{Turns: []string{text}, State: json.RawMessage(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	if !near(got.Reward, 2.125) || got.HasState || len(got.Turns) != 1 || tr.Name() != "trajectory:rm3" {
		t.Errorf("single turn: %v (state %v, %d turns), want 2.125", got.Reward, got.HasState, len(got.Turns))
	}
}

// TestTurnRecord: turn i's record carries turn i's gold, the user messages
// asked up to it, and accept only for turn 0.
func TestTurnRecord(t *testing.T) {
	rec, _ := cancelRecord(t)
	rec.Accept = []map[string][]any{{"date": []any{"2025-05-02"}}}
	rec.Turns = append(rec.Turns, data.Turn{User: "¿Y el sábado?", Calls: rec.Turns[0].Calls})
	r0, r4, r9 := TurnRecord(&rec, 0), TurnRecord(&rec, 4), TurnRecord(&rec, 9)
	if r0.Accept == nil || r0.Calls[0].Name != "list_events" || len(r0.Messages) != 1 || r0.Turns != nil {
		t.Errorf("turn 0: %+v", r0)
	}
	if r4.Accept != nil || r4.Calls[0].Name != "list_events" || len(r4.Messages) != 2 || r4.Messages[1].Content != "¿Y el sábado?" {
		t.Errorf("turn 4: %+v", r4)
	}
	if len(r9.Calls) != 0 || r9.Calls == nil || len(r9.Messages) != 2 {
		t.Errorf("past the gold: %+v", r9)
	}
	if len(rec.Messages) != 1 {
		t.Error("TurnRecord changed the record")
	}
}

// TestStateScore: lists match one-to-one after normalization; other
// values score equality.
func TestStateScore(t *testing.T) {
	for _, c := range []struct {
		gold, got string
		want      float64
	}{
		{`[]`, `[]`, 1},
		{`[{"name":"a","arguments":{"x":"Madrid"}}]`, `[{"name":"a","arguments":{"x":" madrid"}}]`, 1},
		{`[1, 2, 3]`, `[3, 1]`, 2.0 / 3},
		{`[1, 1]`, `[1]`, 0.5},
		{`[1]`, `[1, 1, 1, 1]`, 0.25},
		{`{"MathAPI":{}}`, `{"MathAPI":{}}`, 1},
		{`{"a":1}`, `{"a":"1"}`, 1},
		{`{"a":1}`, `{"a":2}`, 0},
		{`[1]`, `{"a":1}`, 0},
	} {
		got, err := StateScore(json.RawMessage(c.gold), json.RawMessage(c.got))
		if err != nil || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("StateScore(%s, %s) = %v, %v; want %v", c.gold, c.got, got, err, c.want)
		}
	}
	if _, err := StateScore(json.RawMessage(`[`), json.RawMessage(`[]`)); err == nil {
		t.Error("bad JSON accepted")
	}
}
