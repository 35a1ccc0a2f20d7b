package format

import (
	"strings"

	"github.com/argrl/argrl/data"
)

const (
	rOpen  = "<reason>"
	rClose = "</reason>"
	tOpen  = "<tool>"
	tClose = "</tool>"
)

// ReasonTool is R2IF's format (paper 002 §3.1.1):
//
//	<reason>why and how</reason><tool>[{"name": "f", "arguments": {...}}]</tool>
//
// and, when no tool applies, the configured rejection string inside <tool>.
// Following the paper's format-validity rule, the text must hold exactly one
// <reason> block followed by exactly one <tool> block and nothing else but
// whitespace. The <tool> content is a JSON array of calls (a single call
// object is accepted too) or the rejection string. "[]" is valid with no
// calls but is not the rejection: NoCall stays false, since the paper only
// credits the predefined rejection string.
type ReasonTool struct {
	reject string
}

var (
	_ Format         = (*ReasonTool)(nil)
	_ ReasonRenderer = (*ReasonTool)(nil)
)

func newReasonTool(o Options) *ReasonTool {
	return &ReasonTool{reject: rejectOrDefault(o.RejectString)}
}

// Name returns "reason_tool".
func (*ReasonTool) Name() string { return "reason_tool" }

// RejectString is the no-call text this instance writes and accepts.
func (f *ReasonTool) RejectString() string { return f.reject }

// Render writes the calls with an empty reasoning block; the datasets carry
// no reasoning (use RenderWithReason when one is available).
func (f *ReasonTool) Render(calls []data.Call, tools []data.Tool) string {
	return f.RenderWithReason("", calls, tools)
}

// RenderWithReason writes <reason>reason</reason><tool>[...]</tool>, or the
// rejection string in <tool> when calls is empty.
func (f *ReasonTool) RenderWithReason(reason string, calls []data.Call, tools []data.Tool) string {
	schemas := toolSchemas(tools)
	var b strings.Builder
	b.WriteString(rOpen)
	b.WriteString(reason)
	b.WriteString(rClose)
	b.WriteString(tOpen)
	if len(calls) == 0 {
		b.WriteString(f.reject)
	} else {
		b.WriteByte('[')
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			writeCallJSON(&b, c, schemas[c.Name])
		}
		b.WriteByte(']')
	}
	b.WriteString(tClose)
	return b.String()
}

// Parse checks the block structure and parses the <tool> content.
func (f *ReasonTool) Parse(text string) Parsed {
	lead := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	end := len(strings.TrimRight(text, " \t\r\n"))
	if lead >= end || !strings.HasPrefix(text[lead:], rOpen) {
		return invalid("reason_tool: the response must start with %s", rOpen)
	}
	rs := lead + len(rOpen)
	i := strings.Index(text[rs:end], rClose)
	if i < 0 {
		return invalid("reason_tool: %s is not closed", rOpen)
	}
	re := rs + i
	reasoning := text[rs:re]
	for _, tag := range []string{rOpen, tOpen, tClose} {
		if strings.Contains(reasoning, tag) {
			return invalid("reason_tool: %s inside the reasoning (exactly one <reason> and one <tool> block allowed)", tag)
		}
	}
	k := re + len(rClose)
	k += len(text[k:end]) - len(strings.TrimLeft(text[k:end], " \t\r\n"))
	if !strings.HasPrefix(text[k:end], tOpen) {
		return invalid("reason_tool: expected %s after %s", tOpen, rClose)
	}
	ts := k + len(tOpen)
	if !strings.HasSuffix(text[ts:end], tClose) {
		return invalid("reason_tool: the response must end with %s", tClose)
	}
	te := end - len(tClose)
	out := Parsed{Reasoning: reasoning, ReasoningSpan: Span{rs, re}}
	if strings.TrimSpace(text[ts:te]) == f.reject {
		out.Valid, out.NoCall = true, true
		return out
	}
	n, err := parseJSON(text, ts, te)
	if err != nil {
		return invalid("reason_tool: <tool> content is neither the rejection string nor valid JSON: %v", err)
	}
	calls, err := callsFromJSON(n)
	if err != nil {
		return invalid("reason_tool: %v", err)
	}
	out.Calls = calls
	out.Valid = true
	return out
}
