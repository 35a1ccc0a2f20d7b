package format

import (
	"strings"

	"github.com/argrl/argrl/data"
)

const (
	tcOpen  = "<tool_call>"
	tcClose = "</tool_call>"
)

// ToolCall is paper 001's format (Qwen's native form): each call is
// <tool_call>{"name": ..., "arguments": {...}}</tool_call> on its own line;
// a response with no <tool_call> block is a plain-text answer (no call).
//
// The parser is tolerant like real models: whitespace around the JSON, one
// or several blocks, text before, between or after the blocks (e.g. a
// <think> block), a JSON array of calls inside one block, "parameters" for
// "arguments", a missing or null "arguments" (no arguments). It is strict where ambiguity would hide errors: a block that
// is not closed, a </tool_call> without an opening tag, JSON that does not
// parse, or arguments that are not an object make the text invalid.
type ToolCall struct {
	// RejectString is the plain-text answer Render writes for no call
	// (empty: DefaultRejectString). Parse accepts any plain text as no call.
	RejectString string
}

var _ Format = ToolCall{}

// Name returns "tool_call".
func (ToolCall) Name() string { return "tool_call" }

// Render writes one block per call, separated by newlines. With no calls it
// writes the plain-text RejectString.
func (f ToolCall) Render(calls []data.Call, tools []data.Tool) string {
	if len(calls) == 0 {
		return rejectOrDefault(f.RejectString)
	}
	schemas := toolSchemas(tools)
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tcOpen)
		writeCallJSON(&b, c, schemas[c.Name])
		b.WriteString(tcClose)
	}
	return b.String()
}

// Parse finds every <tool_call> block. See ToolCall for what is accepted.
func (ToolCall) Parse(text string) Parsed {
	var out Parsed
	pos := 0
	for {
		i := strings.Index(text[pos:], tcOpen)
		if i < 0 {
			if strings.Contains(text[pos:], tcClose) {
				return invalid("%s without an opening %s", tcClose, tcOpen)
			}
			break
		}
		open := pos + i
		if strings.Contains(text[pos:open], tcClose) {
			return invalid("%s without an opening %s", tcClose, tcOpen)
		}
		body := open + len(tcOpen)
		j := strings.Index(text[body:], tcClose)
		if j < 0 {
			return invalid("%s at byte %d is not closed", tcOpen, open)
		}
		end := body + j
		n, err := parseJSON(text, body, end)
		if err != nil {
			return invalid("block at byte %d: %v", open, err)
		}
		calls, err := callsFromJSON(n)
		if err != nil {
			return invalid("block at byte %d: %v", open, err)
		}
		out.Calls = append(out.Calls, calls...)
		pos = end + len(tcClose)
	}
	out.Valid = true
	out.NoCall = len(out.Calls) == 0
	return out
}
