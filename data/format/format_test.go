package format

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
)

var currencyTool = data.Tool{Name: "get_conversion_cost", Parameters: json.RawMessage(`{"type": "object",
	"properties": {"amount": {"type": "number"}, "from_currency": {"type": "string"}, "to_currency": {"type": "string"},
	"opts": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}},
	"rows": {"type": "array", "items": {"type": "object", "properties": {"z": {}, "a": {}}}}},
	"required": ["amount", "to_currency"]}`)}

var searchTool = data.Tool{Name: "web.search", Parameters: json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}}}`)}

func allFormats(t *testing.T) []Format {
	t.Helper()
	var out []Format
	for _, n := range Names() {
		f, err := Get(n, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func TestGet(t *testing.T) {
	if got := Names(); !reflect.DeepEqual(got, []string{"pythonic", "reason_tool", "tool_call"}) {
		t.Fatalf("Names() = %v", got)
	}
	_, err := Get("xml", Options{})
	if err == nil || !strings.Contains(err.Error(), "pythonic, reason_tool, tool_call") {
		t.Fatalf("unknown format error should list valid names, got %v", err)
	}
}

func TestRenderGolden(t *testing.T) {
	calls := []data.Call{
		{Name: "get_conversion_cost", Arguments: map[string]any{"to_currency": "dollars", "amount": 15000.0, "from_currency": "euro"}},
		{Name: "get_conversion_cost", Arguments: map[string]any{"to_currency": "dólares", "amount": 200.0, "from_currency": "libras", "zz_extra": true, "aa_extra": nil}},
	}
	tools := []data.Tool{currencyTool}
	want := map[string]string{
		"tool_call": `<tool_call>{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}</tool_call>` + "\n" +
			`<tool_call>{"name": "get_conversion_cost", "arguments": {"amount": 200, "from_currency": "libras", "to_currency": "dólares", "aa_extra": null, "zz_extra": true}}</tool_call>`,
		"pythonic": `[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars"), ` +
			`get_conversion_cost(amount=200, from_currency="libras", to_currency="dólares", aa_extra=None, zz_extra=True)]`,
		"reason_tool": `<reason></reason><tool>[{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}}, ` +
			`{"name": "get_conversion_cost", "arguments": {"amount": 200, "from_currency": "libras", "to_currency": "dólares", "aa_extra": null, "zz_extra": true}}]</tool>`,
	}
	for _, f := range allFormats(t) {
		if got := f.Render(calls, tools); got != want[f.Name()] {
			t.Errorf("%s render:\n got %s\nwant %s", f.Name(), got, want[f.Name()])
		}
	}
	// Nested objects follow their own schema order, also inside arrays.
	nested := []data.Call{{Name: "get_conversion_cost", Arguments: map[string]any{
		"amount": 1.0, "to_currency": "x",
		"opts": map[string]any{"alpha": 1.0, "zeta": "z", "beta": "b"},
		"rows": []any{map[string]any{"a": 1.0, "z": 2.0}}}}}
	p := Pythonic{}.Render(nested, tools)
	if want := `[get_conversion_cost(amount=1, to_currency="x", opts={"zeta": "z", "alpha": 1, "beta": "b"}, rows=[{"z": 2, "a": 1}])]`; p != want {
		t.Errorf("nested order:\n got %s\nwant %s", p, want)
	}
}

func TestRenderNoCall(t *testing.T) {
	f, _ := Get("tool_call", Options{})
	if got := f.Render(nil, nil); got != DefaultRejectString {
		t.Errorf("tool_call no-call render = %q", got)
	}
	if p := f.Parse(f.Render(nil, nil)); !p.Valid || !p.NoCall {
		t.Errorf("tool_call no-call parse = %+v", p)
	}
	if got := (Pythonic{}).Render(nil, nil); got != "[]" {
		t.Errorf("pythonic no-call render = %q", got)
	}
	rt, _ := Get("reason_tool", Options{RejectString: "  NO_TOOL  "})
	if got := rt.Render(nil, nil); got != "<reason></reason><tool>NO_TOOL</tool>" {
		t.Errorf("reason_tool no-call render = %q", got)
	}
	if got := rt.(ReasonRenderer).RenderWithReason("Nothing fits.", nil, nil); got != "<reason>Nothing fits.</reason><tool>NO_TOOL</tool>" {
		t.Errorf("RenderWithReason = %q", got)
	}
}

// trickyCalls exercise escaping, unicode, numbers and nesting.
var trickyCalls = []data.Call{
	{Name: "get_conversion_cost", Arguments: map[string]any{"amount": 15000.0, "from_currency": "euro", "to_currency": "dólares"}},
	{Name: "web.search", Arguments: map[string]any{"query": `say "hi" \ it's </tool_call></tool> <b>`}},
	{Name: "get_conversion_cost", Arguments: map[string]any{
		"amount": -0.000125, "to_currency": "line1\nline2\ttab\x01",
		"big": 1e25, "neg": -3.0, "flag": false, "none": nil, "list": []any{"a", 2.5, true, []any{}},
		"opts": map[string]any{"zeta": "ζ", "alpha": 7.0}, "empty": ""}},
	{Name: "web.search", Arguments: map[string]any{}},
}

func TestRoundTripAndSpans(t *testing.T) {
	tools := []data.Tool{currencyTool, searchTool}
	for _, f := range allFormats(t) {
		text := f.Render(trickyCalls, tools)
		p := f.Parse(text)
		if !p.Valid || p.NoCall {
			t.Fatalf("%s: render/parse not valid: %+v\n%s", f.Name(), p, text)
		}
		if len(p.Calls) != len(trickyCalls) {
			t.Fatalf("%s: %d calls, want %d", f.Name(), len(p.Calls), len(trickyCalls))
		}
		for i, c := range p.Calls {
			g := trickyCalls[i]
			if c.Name != g.Name {
				t.Errorf("%s call %d name %q, want %q", f.Name(), i, c.Name, g.Name)
			}
			if !reflect.DeepEqual(c.Arguments, g.Arguments) {
				t.Errorf("%s call %d arguments\n got %#v\nwant %#v", f.Name(), i, c.Arguments, g.Arguments)
			}
			if len(c.ArgSpans) != len(g.Arguments) {
				t.Errorf("%s call %d: %d spans for %d arguments", f.Name(), i, len(c.ArgSpans), len(g.Arguments))
			}
			whole := text[c.Span.Start:c.Span.End]
			if !strings.Contains(whole, c.Name) {
				t.Errorf("%s call %d span %q does not hold the call", f.Name(), i, whole)
			}
			for k, v := range g.Arguments {
				sp := c.ArgSpans[k]
				if sp.Start < c.Span.Start || sp.End > c.Span.End || sp.Start > sp.End {
					t.Fatalf("%s call %d arg %s: span %v outside call %v", f.Name(), i, k, sp, c.Span)
				}
				checkSpan(t, f, text, sp, v)
			}
		}
	}
}

// checkSpan checks that text[sp] is the rendered value: for strings the
// content between quotes (equal to the value when nothing was escaped), for
// others the literal that parses back to v.
func checkSpan(t *testing.T, f Format, text string, sp Span, v any) {
	t.Helper()
	got := text[sp.Start:sp.End]
	if s, ok := v.(string); ok {
		if !strings.ContainsAny(s, "\"\\\n\t\r\x01/") && got != s {
			t.Errorf("%s: text[span] = %q, want %q", f.Name(), got, s)
		}
		if sp.Start == 0 || text[sp.Start-1] != '"' || sp.End >= len(text) || text[sp.End] != '"' {
			t.Errorf("%s: string span %v of %q is not between quotes", f.Name(), sp, s)
		}
		return
	}
	// Re-parse the literal alone and compare.
	var back any
	if f.Name() == "pythonic" {
		p := f.Parse("[f(x=" + got + ")]")
		if !p.Valid {
			t.Fatalf("%s: literal %q does not parse: %s", f.Name(), got, p.Err)
		}
		back = p.Calls[0].Arguments["x"]
	} else if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("%s: literal %q is not JSON: %v", f.Name(), got, err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("%s: text[span] = %q decodes to %#v, want %#v", f.Name(), got, back, v)
	}
}

func TestToolCallParse(t *testing.T) {
	f := ToolCall{}
	cases := []struct {
		text          string
		valid, nocall bool
		names         []string
	}{
		{"The capital of France is Paris.", true, true, nil},
		{"", true, true, nil},
		{"<think>need the weather</think>\n<tool_call>\n  {\"name\": \"w\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\nDone.", true, false, []string{"w"}},
		{"<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"b\", \"parameters\": {\"x\": 1}}</tool_call>", true, false, []string{"a", "b"}},
		{"<tool_call>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\"}]</tool_call>", true, false, []string{"a", "b"}},
		{"<tool_call>{\"name\": \"a\", \"arguments\": {}}", false, false, nil}, // not closed
		{"text</tool_call>", false, false, nil},                                                     // stray close
		{"<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": 1,}}</tool_call>", false, false, nil}, // trailing comma
		{"<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>", false, false, nil},
		{"<tool_call>{\"arguments\": {}}</tool_call>", false, false, nil},
		{"<tool_call>{'name': 'a'}</tool_call>", false, false, nil},
	}
	for _, c := range cases {
		p := f.Parse(c.text)
		if p.Valid != c.valid || p.NoCall != c.nocall {
			t.Errorf("Parse(%q): valid=%v nocall=%v err=%q, want valid=%v nocall=%v", c.text, p.Valid, p.NoCall, p.Err, c.valid, c.nocall)
			continue
		}
		if !p.Valid && p.Err == "" {
			t.Errorf("Parse(%q): invalid without Err", c.text)
		}
		var names []string
		for _, pc := range p.Calls {
			names = append(names, pc.Name)
		}
		if !reflect.DeepEqual(names, c.names) {
			t.Errorf("Parse(%q) names %v, want %v", c.text, names, c.names)
		}
	}
	text := "<tool_call>\n{\"name\": \"w\", \"arguments\": {\"city\": \"São Paulo\", \"days\": 3}}\n</tool_call>"
	p := f.Parse(text)
	if sp := p.Calls[0].ArgSpans["city"]; text[sp.Start:sp.End] != "São Paulo" {
		t.Errorf("city span = %q", text[sp.Start:sp.End])
	}
	if sp := p.Calls[0].ArgSpans["days"]; text[sp.Start:sp.End] != "3" {
		t.Errorf("days span = %q", text[sp.Start:sp.End])
	}
}

func TestPythonicParse(t *testing.T) {
	f := Pythonic{}
	text := "[get(a='x y', b=True, c=None, d=[1, 2,], e={'k': \"v\", 3: (1, 2)}, g=-3.5e2, h=0x10, i=1_000, j=\"\"\"tri\"ple\"\"\", k=r'\\d+', l=u'é', m=null,\n  n=false),\n get2()]"
	p := f.Parse(text)
	if !p.Valid || len(p.Calls) != 2 {
		t.Fatalf("Parse: %+v", p)
	}
	want := map[string]any{"a": "x y", "b": true, "c": nil, "d": []any{1.0, 2.0},
		"e": map[string]any{"k": "v", "3": []any{1.0, 2.0}}, "g": -350.0, "h": 16.0, "i": 1000.0,
		"j": `tri"ple`, "k": `\d+`, "l": "é", "m": nil, "n": false}
	if !reflect.DeepEqual(p.Calls[0].Arguments, want) {
		t.Errorf("arguments\n got %#v\nwant %#v", p.Calls[0].Arguments, want)
	}
	spans := map[string]string{"a": "x y", "g": "-3.5e2", "j": `tri"ple`, "k": `\d+`, "d": "[1, 2,]"}
	for k, w := range spans {
		sp := p.Calls[0].ArgSpans[k]
		if got := text[sp.Start:sp.End]; got != w {
			t.Errorf("span %s = %q, want %q", k, got, w)
		}
	}
	if got := text[p.Calls[1].Span.Start:p.Calls[1].Span.End]; got != "get2()" {
		t.Errorf("call span = %q", got)
	}
	for _, ok := range []string{"[]", "  [ ]\n", "```python\n[f(a=1)]\n```", "[Get Stock Price(symbol='AAPL')]", "[math.factorial(number=5)]"} {
		if p := f.Parse(ok); !p.Valid {
			t.Errorf("Parse(%q) invalid: %s", ok, p.Err)
		}
	}
	if p := f.Parse("[]"); !p.NoCall {
		t.Errorf("[] must be NoCall")
	}
	for _, bad := range []string{"", "I cannot help.", "[f(1)]", "[f(a=x)]", "text [f(a=1)]", "[f(a=1)] text", "[f(a=1)", "[f(a='x)]", "f(a=1)", "[f(a=1e999)]", "[f(a=1 2)]", "[f(a={[1]: 2})]", "[f(a=1, a=2)]"} {
		if p := f.Parse(bad); p.Valid || p.Err == "" {
			t.Errorf("Parse(%q) should be invalid with a reason, got %+v", bad, p)
		}
	}
}

func TestReasonToolParse(t *testing.T) {
	f, _ := Get("reason_tool", Options{})
	text := "<reason>User wants dollars.</reason>\n<tool>[{\"name\": \"c\", \"arguments\": {\"to\": \"dollars\"}}]</tool>\n"
	p := f.Parse(text)
	if !p.Valid || p.NoCall || len(p.Calls) != 1 || p.Reasoning != "User wants dollars." {
		t.Fatalf("Parse: %+v", p)
	}
	if got := text[p.ReasoningSpan.Start:p.ReasoningSpan.End]; got != "User wants dollars." {
		t.Errorf("reasoning span = %q", got)
	}
	if sp := p.Calls[0].ArgSpans["to"]; text[sp.Start:sp.End] != "dollars" {
		t.Errorf("to span = %q", text[sp.Start:sp.End])
	}
	if p := f.Parse("<reason>no tool fits</reason><tool> " + DefaultRejectString + " </tool>"); !p.Valid || !p.NoCall {
		t.Errorf("rejection: %+v", p)
	}
	if p := f.Parse("<reason>x</reason><tool>[]</tool>"); !p.Valid || p.NoCall || len(p.Calls) != 0 {
		t.Errorf("[] should be valid with no calls but not the rejection: %+v", p)
	}
	if p := f.Parse(`<reason>x</reason><tool>{"name": "c", "arguments": {}}</tool>`); !p.Valid || len(p.Calls) != 1 {
		t.Errorf("single object: %+v", p)
	}
	for _, bad := range []string{
		"",
		"<tool>[]</tool>",
		"<reason>x</reason>",
		"Sure. <reason>x</reason><tool>[]</tool>",
		"<reason>x</reason><tool>[]</tool> extra",
		"<reason>x</reason>between<tool>[]</tool>",
		"<reason>x</reason><tool>[]</tool><tool>[]</tool>",
		"<reason>x <tool>[]</tool></reason><tool>[]</tool>",
		"<reason>x</reason><tool>Sorry, none.</tool>",
		"<reason>x</reason><tool>[{\"name\": 1}]</tool>",
		"<reason>x<tool>[]</tool>",
	} {
		if p := f.Parse(bad); p.Valid || p.Err == "" {
			t.Errorf("Parse(%q) should be invalid with a reason, got %+v", bad, p)
		}
	}
	custom, _ := Get("reason_tool", Options{RejectString: "REJECT"})
	if p := custom.Parse("<reason>r</reason><tool>REJECT</tool>"); !p.NoCall {
		t.Errorf("custom rejection not recognised: %+v", p)
	}
	if p := custom.Parse("<reason>r</reason><tool>" + DefaultRejectString + "</tool>"); p.Valid {
		t.Errorf("default rejection must not count under a custom one: %+v", p)
	}
}
