// Package format implements argrl's three output formats (docs/contracts.md §2):
//
//	tool_call    <tool_call>{"name": "f", "arguments": {"a": "v"}}</tool_call>, one per line; plain text for no call (paper 001 A.1)
//	pythonic     [f(a="v", b=2), g(c="w")]; [] for no call (paper 000 App. H)
//	reason_tool  <reason>...</reason><tool>[{"name": "f", "arguments": {...}}]</tool>; the rejection string in <tool> for no call (paper 002 §3.1.1)
//
// Each format renders gold calls into the assistant text used as the SFT
// target, and parses model text back into calls with the byte span of every
// argument value (the spans drive β token weighting, docs/contracts.md §5).
// Parsers never panic; each has a fuzz target. Both parsers (the JSON one
// here, data/internal/pylit for pythonic) lex with data/internal/scan.
package format

import (
	"fmt"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
)

// Span is a byte range [Start, End) of the raw text.
type Span struct{ Start, End int }

// ParsedCall is one call found in model text.
type ParsedCall struct {
	Name      string
	Arguments map[string]any  // JSON-decoded values: float64, string, bool, nil, []any, map[string]any
	ArgSpans  map[string]Span // span of each argument value; for strings, the content inside the quotes
	Span      Span            // the whole call
	// Exact holds the arguments as the text typed them, for scorers that
	// follow Python's types (the bfcl reward): every number is a
	// json.Number whose text tells an int from a float the way Python's
	// json and ast do ("10" is an int, "10.0" and "1e3" are floats; Python
	// integer literals are written in decimal), objects are *Object with
	// their keys in the order written, Python tuples are Tuple; lists are
	// []any and strings, booleans and null are as in Arguments.
	Exact *Object
}

// Object is a JSON object or Python dict with its keys in the order
// written (a repeated key keeps its first place and its last value).
type Object struct {
	Keys   []string
	Values map[string]any
}

// Tuple is a Python tuple (pythonic format).
type Tuple []any

// Parsed is the result of parsing one model response.
type Parsed struct {
	Calls  []ParsedCall
	Valid  bool // the text is well-formed in this format (paper 001's fmt term)
	NoCall bool // the text validly expresses "no call"
	// Reasoning is the <reason> content (reason_tool only), verbatim.
	Reasoning     string
	ReasoningSpan Span
	Err           string // why Valid is false, for logs
}

// Format renders and parses one output format.
type Format interface {
	Name() string
	// Parse never panics, on any input.
	Parse(text string) Parsed
	// Render writes the gold assistant text for calls. Arguments follow the
	// tool schema's property order, then sorted order for names the schema
	// does not declare; nested objects follow their own schema likewise.
	Render(calls []data.Call, tools []data.Tool) string
}

// ReasonRenderer is implemented by formats that carry a reasoning block
// (reason_tool): RenderWithReason is Render with that reasoning text.
type ReasonRenderer interface {
	RenderWithReason(reason string, calls []data.Call, tools []data.Tool) string
}

// DefaultRejectString is reason_tool's no-call text when Options leaves it
// empty.
const DefaultRejectString = "No suitable tool is available for this request."

// Options configures the formats.
type Options struct {
	// RejectString is what reason_tool writes inside <tool></tool> when no
	// tool applies, and what its parser accepts as "no call" (compared after
	// trimming surrounding whitespace). tool_call renders it as its
	// plain-text no-call answer (and accepts any plain text as no call).
	// Empty means DefaultRejectString.
	RejectString string
}

func rejectOrDefault(s string) string {
	if strings.TrimSpace(s) == "" {
		return DefaultRejectString
	}
	return strings.TrimSpace(s)
}

var registry = map[string]func(Options) Format{
	"tool_call":   func(o Options) Format { return ToolCall{RejectString: o.RejectString} },
	"pythonic":    func(Options) Format { return Pythonic{} },
	"reason_tool": func(o Options) Format { return newReasonTool(o) },
}

// Names lists the registered formats, sorted.
func Names() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the format registered under name.
func Get(name string, opts Options) (Format, error) {
	mk, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("format: unknown format %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return mk(opts), nil
}

// invalid builds a Parsed for malformed text.
func invalid(format string, args ...any) Parsed {
	return Parsed{Err: fmt.Sprintf(format, args...)}
}

// toolSchemas indexes the parameter schemas of tools by name; a tool whose
// schema does not parse orders its arguments alphabetically.
func toolSchemas(tools []data.Tool) map[string]*data.Schema {
	m := make(map[string]*data.Schema, len(tools))
	for _, t := range tools {
		if s, err := t.Schema(); err == nil {
			m[t.Name] = s
		}
	}
	return m
}

// orderKeys returns m's keys: the schema's property order first, then the
// remaining keys sorted.
func orderKeys[V any](m map[string]V, s *data.Schema) []string {
	keys := make([]string, 0, len(m))
	used := map[string]bool{}
	if s != nil {
		for _, p := range s.Properties {
			if _, ok := m[p.Name]; ok && !used[p.Name] {
				keys = append(keys, p.Name)
				used[p.Name] = true
			}
		}
	}
	var rest []string
	for k := range m {
		if !used[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// callFromNode turns a JSON object {"name": ..., "arguments": {...}} into a
// ParsedCall. "parameters" is accepted in place of "arguments"; a missing
// or null arguments object means no arguments.
func callFromNode(n *jnode) (ParsedCall, error) {
	if _, ok := n.v.(map[string]any); !ok {
		return ParsedCall{}, fmt.Errorf("a call must be a JSON object")
	}
	nameNode, ok := n.get("name")
	if !ok {
		return ParsedCall{}, fmt.Errorf("call without \"name\"")
	}
	name, ok := nameNode.v.(string)
	if !ok || name == "" {
		return ParsedCall{}, fmt.Errorf("\"name\" must be a non-empty string")
	}
	c := ParsedCall{Name: name, Arguments: map[string]any{}, ArgSpans: map[string]Span{}, Span: n.full,
		Exact: &Object{Values: map[string]any{}}}
	args, ok := n.get("arguments")
	if !ok {
		args, ok = n.get("parameters")
	}
	if !ok || args.v == nil {
		return c, nil
	}
	if _, isObj := args.v.(map[string]any); !isObj {
		return ParsedCall{}, fmt.Errorf("\"arguments\" must be a JSON object")
	}
	for i, k := range args.keys {
		c.Arguments[k] = args.vals[i].v
		c.ArgSpans[k] = args.vals[i].span
	}
	c.Exact = exactOf(args).(*Object)
	return c, nil
}

// callsFromJSON accepts a single call object or an array of call objects.
func callsFromJSON(n *jnode) ([]ParsedCall, error) {
	if _, isArr := n.v.([]any); isArr {
		out := make([]ParsedCall, 0, len(n.vals))
		for _, el := range n.vals {
			c, err := callFromNode(el)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	c, err := callFromNode(n)
	if err != nil {
		return nil, err
	}
	return []ParsedCall{c}, nil
}
