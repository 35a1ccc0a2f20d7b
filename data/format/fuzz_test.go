package format

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/argrl/argrl/data"
)

// Fuzz targets: run each with
//
//	go test ./data/format -run '^$' -fuzz '^FuzzToolCall$' -fuzztime 60s
//
// (likewise FuzzPythonic, FuzzReasonTool). Seed corpora live in
// testdata/fuzz/<target>/. Beyond "never panics", each target checks that
// spans lie inside the text, that an unescaped string value equals its span,
// and that re-rendering the parsed calls parses back to the same calls.

func FuzzToolCall(f *testing.F) {
	f.Add(`<tool_call>{"name": "f", "arguments": {"a": "x", "b": [1, {"c": null}]}}</tool_call>`)
	f.Add("plain text")
	fuzzFormat(f, ToolCall{})
}

func FuzzPythonic(f *testing.F) {
	f.Add(`[f(a="x", b=[1, {'c': None}], c=True), g()]`)
	f.Add("[]")
	fuzzFormat(f, Pythonic{})
}

func FuzzReasonTool(f *testing.F) {
	f.Add(`<reason>r</reason><tool>[{"name": "f", "arguments": {"a": "x"}}]</tool>`)
	f.Add("<reason></reason><tool>" + DefaultRejectString + "</tool>")
	fuzzFormat(f, newReasonTool(Options{}))
}

func fuzzFormat(f *testing.F, fm Format) {
	f.Fuzz(func(t *testing.T, text string) {
		p := fm.Parse(text)
		if !p.Valid {
			if p.Err == "" || len(p.Calls) != 0 || p.NoCall {
				t.Fatalf("invalid parse must carry only Err: %+v", p)
			}
			return
		}
		in := func(s Span) bool { return 0 <= s.Start && s.Start <= s.End && s.End <= len(text) }
		if !in(p.ReasoningSpan) || text[p.ReasoningSpan.Start:p.ReasoningSpan.End] != p.Reasoning {
			t.Fatalf("reasoning span %v does not match %q", p.ReasoningSpan, p.Reasoning)
		}
		calls := make([]data.Call, 0, len(p.Calls))
		for _, c := range p.Calls {
			if !in(c.Span) {
				t.Fatalf("call span %v out of range (len %d)", c.Span, len(text))
			}
			if len(c.ArgSpans) != len(c.Arguments) {
				t.Fatalf("%d spans for %d arguments", len(c.ArgSpans), len(c.Arguments))
			}
			for k, v := range c.Arguments {
				sp, ok := c.ArgSpans[k]
				if !ok || !in(sp) || sp.Start < c.Span.Start || sp.End > c.Span.End {
					t.Fatalf("argument %q span %v bad (call %v)", k, sp, c.Span)
				}
				raw := text[sp.Start:sp.End]
				if s, isStr := v.(string); isStr && !strings.Contains(raw, `\`) && utf8.ValidString(raw) && raw != s {
					t.Fatalf("argument %q: text[span] = %q but value %q", k, raw, s)
				}
			}
			if c.Exact == nil || len(c.Exact.Keys) != len(c.Arguments) || !reflect.DeepEqual(plainExact(c.Exact), c.Arguments) {
				t.Fatalf("Exact %#v does not hold the arguments %#v", c.Exact, c.Arguments)
			}
			calls = append(calls, data.Call{Name: c.Name, Arguments: c.Arguments})
		}
		if len(calls) == 0 {
			return
		}
		again := fm.Parse(fm.Render(calls, nil))
		if !again.Valid || len(again.Calls) != len(calls) {
			t.Fatalf("re-rendered calls do not parse: %+v\nrendered: %s", again, fm.Render(calls, nil))
		}
		for i, c := range again.Calls {
			if c.Name != calls[i].Name || !reflect.DeepEqual(c.Arguments, calls[i].Arguments) {
				t.Fatalf("round trip changed call %d:\n got %q %#v\nwant %q %#v", i, c.Name, c.Arguments, calls[i].Name, calls[i].Arguments)
			}
		}
	})
}
