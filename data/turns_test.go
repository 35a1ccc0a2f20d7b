package data

import (
	"errors"
	"strings"
	"testing"
)

// multiLine is a two-step record: a search, then a booking that takes the
// search's result, then the final answer.
const multiLine = `{"id": "mt-1", "lang": "es",
 "tools": [{"name": "find", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
           {"name": "book", "parameters": {"type": "object", "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}, "required": ["id"]}}],
 "messages": [{"role": "user", "content": "Busca y reserva"}],
 "calls": [{"name": "find", "arguments": {"city": "Madrid"}}],
 "turns": [{"calls": [{"name": "find", "arguments": {"city": "Madrid"}}]},
           {"calls": [{"name": "book", "arguments": {"id": "r-17", "n": 2}}]},
           {"user": "Gracias. ¿Y otra?", "calls": []}],
 "env": {"name": "synth", "seed": 18446744073709551615, "config": {"k": [1, 2]}}}`

func multi(t *testing.T, old, new string) string {
	t.Helper()
	l := oneLine(multiLine)
	if old == "" {
		return l
	}
	if !strings.Contains(l, old) {
		t.Fatalf("test bug: %q not in the multi-turn line", old)
	}
	return strings.Replace(l, old, new, 1)
}

// emptyTurns is the multi-turn line with "turns": [].
func emptyTurns(t *testing.T) string {
	l := multi(t, "", "")
	i, j := strings.Index(l, `"turns"`), strings.Index(l, `"env"`)
	return l[:i] + `"turns": [], ` + l[j:]
}

func TestTurnsRoundTrip(t *testing.T) {
	recs, err := Read(strings.NewReader(multi(t, "", "")), "mem")
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if len(r.Turns) != 3 || r.Turns[1].Calls[0].Arguments["id"] != "r-17" || r.Turns[2].User != "Gracias. ¿Y otra?" ||
		len(r.Turns[2].Calls) != 0 || r.Turns[2].Calls == nil {
		t.Fatalf("turns decoded wrong: %+v", r.Turns)
	}
	if r.Env == nil || r.Env.Name != "synth" || r.Env.Seed != 1<<64-1 || string(r.Env.Config) != `{"k":[1,2]}` {
		t.Fatalf("env decoded wrong: %+v", r.Env)
	}
	if got := r.UserTurns(); len(got) != 1 || got[0] != "Gracias. ¿Y otra?" {
		t.Errorf("UserTurns = %q", got)
	}
	b, err := MarshalRecord(&r)
	if err != nil {
		t.Fatal(err)
	}
	want := `"turns":[{"calls":[{"name":"find","arguments":{"city":"Madrid"}}]},{"calls":[{"name":"book","arguments":{"id":"r-17","n":2}}]},{"user":"Gracias. ¿Y otra?","calls":[]}],"env":{"name":"synth","seed":18446744073709551615,"config":{"k":[1,2]}}}`
	if !strings.HasSuffix(string(b), want) {
		t.Errorf("marshalled:\n%s\nwant it to end with\n%s", b, want)
	}
	back, err := DecodeRecord(b)
	if err != nil || back.Validate() != nil || len(back.Turns) != 3 || back.Env.Seed != r.Env.Seed {
		t.Errorf("round trip: %v %+v", err, back)
	}
	// A single-turn record writes neither key (backward compatible bytes).
	single, _ := Read(strings.NewReader(oneLine(goodLine)), "mem")
	sb, _ := MarshalRecord(&single[0])
	if strings.Contains(string(sb), "turns") || strings.Contains(string(sb), `"env"`) {
		t.Errorf("single-turn record grew keys: %s", sb)
	}
}

// TestTurnsBadData: every malformed multi-turn line names file, line and field.
func TestTurnsBadData(t *testing.T) {
	cases := []struct{ name, line, field, msg string }{
		{"turns not array", multi(t, `"turns": [{"calls"`, `"turns": {"x": [{"calls"`) + "}", "turns", "must be an array"},
		{"turn unknown key", multi(t, `{"user": "Gracias.`, `{"usr": "Gracias.`), "turns[2].usr", "unknown field"},
		{"turn without calls", multi(t, `, "calls": []}]`, `}]`), "turns[2].calls", "missing"},
		{"turn call unknown tool", multi(t, `[{"name": "book", "arguments": {"id"`, `[{"name": "bok", "arguments": {"id"`), "turns[1].calls[0].name", `unknown tool "bok"`},
		{"turn call missing required", multi(t, `{"id": "r-17", "n": 2}`, `{"n": 2}`), "turns[1].calls[0].arguments.id", "required"},
		{"turn call wrong type", multi(t, `{"id": "r-17", "n": 2}`, `[2]`), "turns[1].calls[0].arguments", "must be an object"},
		{"user in first turn", multi(t, `"turns": [{"calls"`, `"turns": [{"user": "x", "calls"`), "turns[0].user", "belongs in messages"},
		{"calls differ from turn 0", multi(t, `"calls": [{"name": "find", "arguments": {"city": "Madrid"}}], "turns"`, `"calls": [{"name": "find", "arguments": {"city": "Sevilla"}}], "turns"`), "calls", "must equal turns[0].calls"},
		{"empty turns", emptyTurns(t), "turns", "empty"},
		{"env not object", multi(t, `"env": {"name": "synth", "seed": 18446744073709551615, "config": {"k": [1, 2]}}`, `"env": "synth"`), "env", "must be an object"},
		{"env without name", multi(t, `"name": "synth", `, ``), "env.name", "missing"},
		{"env blank name", multi(t, `"name": "synth", `, `"name": " ", `), "env.name", "non-empty"},
		{"env negative seed", multi(t, `"seed": 18446744073709551615`, `"seed": -1`), "env.seed", "integer"},
		{"env fractional seed", multi(t, `"seed": 18446744073709551615`, `"seed": 1.5`), "env.seed", "integer"},
		{"env seed string", multi(t, `"seed": 18446744073709551615`, `"seed": "7"`), "env.seed", "must be a number"},
		{"env config array", multi(t, `"config": {"k": [1, 2]}`, `"config": [1]`), "env.config", "must be an object"},
		{"env unknown key", multi(t, `"config": {"k": [1, 2]}`, `"cfg": {}`), "env.cfg", "unknown field"},
	}
	for _, c := range cases {
		p := writeTemp(t, oneLine(goodLine), c.line)
		_, err := ReadFile(p)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: want *data.Error, got %v", c.name, err)
			continue
		}
		if e.File != p || e.Line != 2 || e.Field != c.field || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s: got line=%d field=%q msg=%q; want line 2, field %q, msg containing %q", c.name, e.Line, e.Field, e.Msg, c.field, c.msg)
		}
		if !strings.HasPrefix(err.Error(), p+":2: "+c.field+": ") {
			t.Errorf("%s: message %q does not start with file:line: field", c.name, err)
		}
	}
}
