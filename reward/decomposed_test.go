package reward

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/argrl/argrl/data"
)

func mustRecord(t *testing.T, line string) data.Record {
	t.Helper()
	var r data.Record
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

const flightTools = `[{"name": "book_flight", "parameters": {"type": "object", "properties": {
	"origin": {"type": "string"}, "destination": {"type": "string"}, "passengers": {"type": "integer"},
	"class": {"type": "string", "enum": ["economy", "business"]}}, "required": ["origin", "destination"]}},
  {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}]`

// TestDecomposedA4 checks paper 001 A.4's rules one by one, with the
// binary reward and the paper-001 metrics of the same outcomes.
func TestDecomposedA4(t *testing.T) {
	one := mustRecord(t, `{"id": "one", "lang": "en", "tools": `+flightTools+`,
	  "messages": [{"role": "user", "content": "Book Madrid to Paris for two"}],
	  "calls": [{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": 2}}]}`)
	two := mustRecord(t, `{"id": "two", "lang": "en", "tools": `+flightTools+`,
	  "messages": [{"role": "user", "content": "Book Madrid to Paris and Rome to Oslo"}],
	  "calls": [{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris"}},
	            {"name": "book_flight", "arguments": {"origin": "Rome", "destination": "Oslo"}}]}`)
	none := mustRecord(t, `{"id": "none", "lang": "en", "tools": `+flightTools+`,
	  "messages": [{"role": "user", "content": "Tell me a joke"}], "calls": []}`)
	zero := mustRecord(t, `{"id": "zero", "lang": "en", "tools": `+flightTools+`,
	  "messages": [{"role": "user", "content": "What time is it?"}],
	  "calls": [{"name": "get_time", "arguments": {}}]}`)
	tc := func(calls ...string) string {
		s := ""
		for i, c := range calls {
			if i > 0 {
				s += "\n"
			}
			s += "<tool_call>" + c + "</tool_call>"
		}
		return s
	}
	exact := `{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": 2}}`
	cases := []struct {
		name         string
		rec          *data.Record
		text         string
		want, binary float64
		nameFrac     float64
		argFrac      float64
	}{
		{"exact", &one, tc(exact), 1, 1, 1, 1},
		{"partial argument credit: 2 of 3 gold args", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "London", "passengers": 2}}`),
			0.2 + 0.3 + 0.5*2.0/3, 0, 1, 2.0 / 3},
		{"partial argument credit: gold arg missing", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris"}}`),
			0.2 + 0.3 + 0.5*2.0/3, 0, 1, 2.0 / 3},
		{"extra argument: ×(1−0.25)", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": 2, "class": "economy"}}`),
			0.2 + 0.3 + 0.5*0.75, 0, 1, 0.75},
		{"two extra arguments: ×(1−0.5)", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": 2, "class": "economy", "seat": "12A"}}`),
			0.2 + 0.3 + 0.5*0.5, 0, 1, 0.5},
		{"five extra arguments: penalty floors at 0", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": 2, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5}}`),
			0.2 + 0.3, 0, 1, 0},
		{"extra call: −0.1", &one, tc(exact, `{"name": "book_flight", "arguments": {"origin": "Oslo", "destination": "Rome"}}`),
			1 - 0.1, 0, 1, 1},
		{"three extra calls: −0.3", &one, tc(exact, exact, `{"name": "get_time", "arguments": {}}`, `{"name": "get_time", "arguments": {}}`),
			1 - 0.3, 0, 1, 1},
		{"numeric string equals number", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": "2"}}`), 1, 1, 1, 1},
		{"numeric string with decimals", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris", "passengers": "2.0"}}`), 1, 1, 1, 1},
		{"case-insensitive, trimmed", &one,
			tc(`{"name": "book_flight", "arguments": {"origin": "MADRID", "destination": " paris ", "passengers": 2}}`), 1, 1, 1, 1},
		{"wrong function: fmt only", &one, tc(`{"name": "get_time", "arguments": {}}`), 0.2, 0, 0, 0},
		{"two gold calls, one predicted", &two,
			tc(`{"name": "book_flight", "arguments": {"origin": "Rome", "destination": "Oslo"}}`), 0.2 + 0.3*0.5 + 0.5, 0, 0.5, 1},
		{"two gold calls, swapped order", &two,
			tc(`{"name": "book_flight", "arguments": {"origin": "Rome", "destination": "Oslo"}}`,
				`{"name": "book_flight", "arguments": {"origin": "Madrid", "destination": "Paris"}}`), 1, 1, 1, 1},
		{"no-call gold, no call", &none, "Sorry, I can only book flights.", 1, 1, 1, 1},
		{"no-call gold, a call", &none, tc(exact), 0, 0, 0, 0},
		{"zero-argument gold, none predicted", &zero, tc(`{"name": "get_time", "arguments": {}}`), 1, 1, 1, 1},
		{"zero-argument gold, arguments predicted: 0.5", &zero, tc(`{"name": "get_time", "arguments": {"tz": "UTC"}}`),
			0.2 + 0.3 + 0.5*0.5, 0, 1, 0.5},
		{"fmt = 0: unclosed block", &one, `<tool_call>{"name": "book_flight", "arguments": {"origin": "Madrid"}}`, 0, 0, 0, 0},
		{"fmt = 0: bad JSON", &one, `<tool_call>{"name": "book_flight", "arguments": {"origin": }}</tool_call>`, 0, 0, 0, 0},
	}
	dec := getReward(t, "decomposed", nil)
	bin := getReward(t, "binary", nil)
	for _, c := range cases {
		res, err := dec.Score(context.Background(), c.rec, c.text)
		if err != nil {
			t.Fatal(err)
		}
		if !near(res.Reward, c.want) {
			t.Errorf("%s: decomposed = %v, want %v (parts %v)", c.name, res.Reward, c.want, res.Parts)
		}
		o := res.Outcome
		if !near(o.NameFrac, c.nameFrac) || !near(o.ArgFrac, c.argFrac) {
			t.Errorf("%s: name_frac %v arg_frac %v, want %v %v", c.name, o.NameFrac, o.ArgFrac, c.nameFrac, c.argFrac)
		}
		b, err := bin.Score(context.Background(), c.rec, c.text)
		if err != nil {
			t.Fatal(err)
		}
		if b.Reward != c.binary {
			t.Errorf("%s: binary = %v, want %v", c.name, b.Reward, c.binary)
		}
		if (b.Reward == 1) != o.Exact {
			t.Errorf("%s: binary %v disagrees with exact match %v", c.name, b.Reward, o.Exact)
		}
	}
}

// TestAcceptMembership covers BFCL-style accept lists: any listed value
// matches, and "" lets an argument be omitted.
func TestAcceptMembership(t *testing.T) {
	rec := mustRecord(t, `{"id": "acc", "lang": "en", "tools": `+flightTools+`,
	  "messages": [{"role": "user", "content": "Book NYC to Paris"}],
	  "calls": [{"name": "book_flight", "arguments": {"origin": "New York", "destination": "Paris"}}],
	  "accept": [{"origin": ["New York", "NYC", "New York City"], "destination": ["Paris"], "class": ["", "economy"]}]}`)
	dec := getReward(t, "decomposed", nil)
	for _, c := range []struct {
		args string
		want float64
		fcm  bool
	}{
		{`{"origin": "NYC", "destination": "Paris"}`, 1, true},
		{`{"origin": "new york city", "destination": "Paris", "class": "economy"}`, 1, true},
		{`{"origin": "NYC", "destination": "Paris", "class": "business"}`, 0.2 + 0.3 + 0.5*2.0/3, false},
		{`{"origin": "Boston", "destination": "Paris"}`, 0.2 + 0.3 + 0.5*2.0/3, false},
	} {
		res, err := dec.Score(context.Background(), &rec, `<tool_call>{"name": "book_flight", "arguments": `+c.args+`}</tool_call>`)
		if err != nil {
			t.Fatal(err)
		}
		if !near(res.Reward, c.want) || res.Metrics.FCM != c.fcm {
			t.Errorf("%s: decomposed %v FCM %v, want %v %v", c.args, res.Reward, res.Metrics.FCM, c.want, c.fcm)
		}
	}
}
