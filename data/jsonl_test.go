package data

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const goodLine = `{"id": "es-000123", "lang": "es",
 "tools": [{"name": "get_conversion_cost", "description": "cost",
            "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "from_currency": {"type": "string"}, "to_currency": {"type": "string", "enum": ["dollars", "USD"]}, "unit": {"type": "string"}},
                           "required": ["amount", "to_currency"]}}],
 "messages": [{"role": "user", "content": "¿Cuánto costará ...?"}],
 "calls": [{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}],
 "accept": [{"to_currency": ["dollars", "USD"], "unit": ["units", ""]}],
 "smv": [{"to_currency": {"spec": "a currency", "mod": "translate"}}],
 "reject_reason": "",
 "split": "train"}`

// oneLine compacts the multi-line example into one JSONL line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "") }

// edit replaces old by new in the good record (once, and it must occur).
func edit(t *testing.T, old, new string) string {
	t.Helper()
	l := oneLine(goodLine)
	if !strings.Contains(l, old) {
		t.Fatalf("test bug: %q not in the good line", old)
	}
	return strings.Replace(l, old, new, 1)
}

func writeTemp(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadGood(t *testing.T) {
	other := edit(t, `"id": "es-000123"`, `"id": "es-000124"`)
	p := writeTemp(t, oneLine(goodLine), "", other)
	recs, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID != "es-000123" || recs[1].ID != "es-000124" {
		t.Fatalf("got %d records: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Lang != "es" || r.Messages[0].Content != "¿Cuánto costará ...?" || r.Calls[0].Arguments["amount"] != 15000.0 ||
		r.SMV[0]["to_currency"].Mod != "translate" || r.Split != "train" {
		t.Errorf("decoded record wrong: %+v", r)
	}
	if !reflect.DeepEqual(r.Accept[0]["unit"], []any{"units", ""}) {
		t.Errorf("accept = %#v", r.Accept)
	}
}

// TestBadData checks that each kind of bad line fails with file, line and field.
func TestBadData(t *testing.T) {
	cases := []struct {
		name, line, field, msg string
	}{
		{"not JSON", `{"id": "x", "lang": `, "", "not valid JSON"},
		{"not an object", `[1, 2]`, "", "must be a JSON object"},
		{"missing tools", edit(t, `"tools": [{"name": "get_conversion_cost", "description": "cost",`, `"toolz": [{"name": "get_conversion_cost", "description": "cost",`), "toolz", "unknown field"},
		{"missing tools key", strings.Replace(edit(t, `"tools"`, `"tools_"`), `"tools_"`, `"reject_reason": "", "x_tools"`, 1), "x_tools", "unknown field"},
		{"unknown tool", edit(t, `"calls": [{"name": "get_conversion_cost"`, `"calls": [{"name": "get_cost"`), "calls[0].name", `unknown tool "get_cost"`},
		{"wrong type id", edit(t, `"id": "es-000123"`, `"id": 123`), "id", "must be a string, got number"},
		{"wrong type arguments", edit(t, `"arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}`, `"arguments": [15000]`), "calls[0].arguments", "must be an object, got array"},
		{"wrong type messages", edit(t, `"messages": [{"role": "user", "content": "¿Cuánto costará ...?"}]`, `"messages": {"role": "user"}`), "messages", "must be an array"},
		{"wrong type content", edit(t, `"content": "¿Cuánto costará ...?"`, `"content": 5`), "messages[0].content", "must be a string"},
		{"accept length", edit(t, `"accept": [{"to_currency": ["dollars", "USD"], "unit": ["units", ""]}]`, `"accept": [{}, {}]`), "accept", "2 entries for 1 calls"},
		{"smv length", edit(t, `"smv": [{"to_currency": {"spec": "a currency", "mod": "translate"}}]`, `"smv": []`), "smv", "0 entries for 1 calls"},
		{"accept not acceptable", edit(t, `"to_currency": ["dollars", "USD"], "unit"`, `"to_currency": ["USD"], "unit"`), "accept[0].to_currency", "not among the acceptable values"},
		{"accept omitted needs empty", edit(t, `"unit": ["units", ""]`, `"unit": ["units"]`), "accept[0].unit", `omits "unit"`},
		{"accept unknown param", edit(t, `"unit": ["units", ""]`, `"colour": [""]`), "accept[0].colour", "not a parameter"},
		{"missing required arg", edit(t, `"amount": 15000, "from_currency"`, `"from_currency"`), "calls[0].arguments.amount", "required"},
		{"undeclared arg", edit(t, `"amount": 15000,`, `"amount": 15000, "speed": 3,`), "calls[0].arguments.speed", "not a parameter"},
		{"missing arguments", edit(t, `, "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}`, ``), "calls[0].arguments", "missing"},
		{"missing calls", edit(t, `"calls": [{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}],`, `"split_": 1,`), "split_", "unknown field"},
		{"bad lang", edit(t, `"lang": "es"`, `"lang": "spanish"`), "lang", "ISO 639-1"},
		{"bad split", edit(t, `"split": "train"`, `"split": "dev"`), "split", "must be one of"},
		{"bad role", edit(t, `"role": "user"`, `"role": "human"`), "messages[0].role", "must be system, user"},
		{"last message assistant", edit(t, `"messages": [{"role": "user", "content": "¿Cuánto costará ...?"}]`, `"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]`), "messages[1].role", "last message"},
		{"bad tool name", edit(t, `"name": "get_conversion_cost", "description"`, `"name": "get(cost)", "description"`), "tools[0].name", "invalid tool name"},
		{"bad schema", edit(t, `"required": ["amount", "to_currency"]`, `"required": "amount"`), "tools[0].parameters", "required: must be an array"},
		{"schema not object type", edit(t, `"parameters": {"type": "object"`, `"parameters": {"type": "dict"`), "tools[0].parameters.type", "must be \"object\""},
		{"empty id", edit(t, `"id": "es-000123"`, `"id": ""`), "id", "empty"},
	}
	for _, c := range cases {
		other := oneLine(strings.Replace(goodLine, "es-000123", "first", 1))
		p := writeTemp(t, other, c.line)
		_, err := ReadFile(p)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: want *data.Error, got %v", c.name, err)
			continue
		}
		if e.File != p || e.Line != 2 || e.Field != c.field || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%s: got file=%q line=%d field=%q msg=%q; want line 2 field %q msg containing %q",
				c.name, e.File, e.Line, e.Field, e.Msg, c.field, c.msg)
		}
		if !strings.HasPrefix(err.Error(), p+":2: ") {
			t.Errorf("%s: message %q does not start with file:line", c.name, err)
		}
	}
	// The key named "tools" entirely missing.
	line := oneLine(goodLine)
	i := strings.Index(line, `"tools"`)
	j := strings.Index(line, `"messages"`)
	_, err := Read(strings.NewReader(line[:i]+line[j:]), "mem.jsonl")
	if err == nil || err.Error() != "mem.jsonl:1: tools: missing" {
		t.Errorf("missing tools: %v", err)
	}
	// Duplicate id names both lines.
	_, err = Read(strings.NewReader(oneLine(goodLine)+"\n\n"+oneLine(goodLine)+"\n"), "dup.jsonl")
	if err == nil || err.Error() != `dup.jsonl:3: id: duplicate id "es-000123" (first on line 1)` {
		t.Errorf("duplicate id: %v", err)
	}
}

func TestWriteRoundTripAtomic(t *testing.T) {
	recs, err := Read(strings.NewReader(oneLine(goodLine)), "mem")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "out.jsonl")
	if err := WriteFile(p, recs); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back[0].Calls, recs[0].Calls) || !reflect.DeepEqual(back[0].Accept, recs[0].Accept) ||
		string(back[0].Tools[0].Parameters) != string(recs[0].Tools[0].Parameters) {
		t.Errorf("round trip changed the record:\n%+v\n%+v", back[0], recs[0])
	}
	raw, _ := os.ReadFile(p)
	if !strings.Contains(string(raw), "¿Cuánto") || strings.Count(string(raw), "\n") != 1 {
		t.Errorf("written file should be one line with raw UTF-8: %s", raw)
	}
	// A bad record refuses the write and leaves the old file and no temp file.
	bad := append([]Record(nil), recs...)
	bad = append(bad, recs[0]) // duplicate id
	if err := WriteFile(p, bad); err == nil || !strings.Contains(err.Error(), "duplicate id") {
		t.Fatalf("duplicate ids should fail the write, got %v", err)
	}
	after, _ := os.ReadFile(p)
	if string(after) != string(raw) {
		t.Errorf("failed write changed the file")
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}
