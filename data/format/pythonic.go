package format

import (
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/internal/pylit"
)

// Pythonic is paper 000's format (App. H): a Python list of calls with
// keyword arguments, [f(a="v", b=2), g(c="w")], and [] for no call.
//
// Values are Python literals: strings in ' or " (also triple-quoted, r/u
// prefixes), numbers, True/False/None (true/false/null too), lists, tuples
// and dicts. Whitespace (newlines included) may appear between tokens, a
// trailing comma is allowed, and the list may be wrapped in a Markdown code
// fence (```python ... ```). Anything else around the list, positional
// arguments, or unquoted names as values make the text invalid.
type Pythonic struct{}

var _ Format = Pythonic{}

// Name returns "pythonic".
func (Pythonic) Name() string { return "pythonic" }

// Render writes [f(a="v", b=2), g(c="w")], strings double-quoted, or [].
func (Pythonic) Render(calls []data.Call, tools []data.Tool) string {
	schemas := toolSchemas(tools)
	var b strings.Builder
	b.WriteByte('[')
	for i, c := range calls {
		if i > 0 {
			b.WriteString(", ")
		}
		writeCallPython(&b, c, schemas[c.Name])
	}
	b.WriteByte(']')
	return b.String()
}

// Parse parses a call list. See Pythonic for what is accepted.
func (Pythonic) Parse(text string) Parsed {
	start, end := unfence(text)
	calls, err := pylit.ParseList(text, start, end)
	if err != nil {
		return invalid("pythonic: %v", err)
	}
	out := Parsed{Valid: true, NoCall: len(calls) == 0}
	for _, c := range calls {
		pc := ParsedCall{Name: c.Name, Arguments: make(map[string]any, len(c.Args)),
			ArgSpans: make(map[string]Span, len(c.Args)), Span: Span(c.Span),
			Exact: &Object{Values: make(map[string]any, len(c.Args))}}
		for _, a := range c.Args {
			pc.Arguments[a.Name] = a.Value
			pc.ArgSpans[a.Name] = Span(a.ValueSpan)
			pc.Exact.Keys = append(pc.Exact.Keys, a.Name)
			pc.Exact.Values[a.Name] = exactPy(a.Exact)
		}
		out.Calls = append(out.Calls, pc)
	}
	return out
}

// exactPy turns pylit's exact values into Exact's types.
func exactPy(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = exactPy(e)
		}
		return out
	case pylit.Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = exactPy(e)
		}
		return out
	case *pylit.Dict:
		o := &Object{Keys: x.Keys, Values: make(map[string]any, len(x.Keys))}
		for _, k := range x.Keys {
			o.Values[k] = exactPy(x.Vals[k])
		}
		return o
	}
	return v
}

// unfence returns the byte range inside a surrounding Markdown code fence
// (```lang\n ... ```), or the whole text when there is none.
func unfence(text string) (int, int) {
	t := strings.TrimSpace(text)
	lead := strings.Index(text, t)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return 0, len(text)
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 || nl > len(t)-3 {
		return 0, len(text)
	}
	return lead + nl + 1, lead + len(t) - 3
}
