package serve

// Chat requests as the model sees them: the conversation rendered with the
// model's own chat template and output format (model/chat, data/format),
// tool_choice applied, and the answer parsed back into tool_calls.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

// chatPrompt renders the request into prompt ids. The returned prefix is
// text the server wrote at the start of the assistant turn to apply
// tool_choice (required: the opening of a call; a named function: the
// opening of a call to it): its ids end the prompt, and it is put back in
// front of the generated text before parsing.
func (s *Server) chatPrompt(msgs []data.Message, tools []data.Tool, tc *toolChoice) (ids []int32, prefix string, err *apiError) {
	rec := data.Record{ID: "request", Messages: msgs, Tools: tools}
	if tc.Mode == "none" {
		rec.Tools = nil
	}
	r, rerr := s.tmpl.Render(rec, s.format, false)
	if rerr != nil {
		return nil, "", badRequest("messages", "invalid_value", "%v", rerr)
	}
	ids, _ = s.tok.Encode(r.Prompt, false)
	switch tc.Mode {
	case "required", "function":
		prefix, err = s.forcePrefix(tc)
		if err != nil {
			return nil, "", err
		}
		more, _ := s.tok.Encode(prefix, false)
		ids = append(ids, more...)
	}
	return ids, prefix, nil
}

// forcePrefix is the text that makes the answer a call (required) or a
// call to one function (named), in the served output format.
func (s *Server) forcePrefix(tc *toolChoice) (string, *apiError) {
	name, _ := json.Marshal(tc.Name)
	switch s.format.Name() {
	case "tool_call":
		if tc.Mode == "required" {
			return "<tool_call>\n", nil
		}
		return "<tool_call>\n{\"name\": " + string(name) + ", \"arguments\": ", nil
	case "pythonic":
		if tc.Mode == "required" {
			return "[", nil
		}
		return "[" + tc.Name + "(", nil
	}
	return "", badRequest("tool_choice", "unsupported_value", "key \"tool_choice\": %q is served with the tool_call and pythonic formats, not %s", tc.Mode, s.format.Name())
}

// assistantMessage parses the answer: its calls become tool_calls (with
// arguments as JSON text, keys in the order the model wrote them) and the
// text before the first call, if any, the content. Text that does not parse
// in the format is returned as content, without calls.
func (s *Server) assistantMessage(text string, tc *toolChoice, callID string) (content *string, calls []toolCall) {
	if tc.Mode == "none" {
		return &text, nil
	}
	p := s.format.Parse(text)
	if !p.Valid || len(p.Calls) == 0 {
		return &text, nil
	}
	for i, c := range p.Calls {
		args := "{}"
		if c.Exact != nil {
			var b bytes.Buffer
			writeExact(&b, c.Exact)
			args = b.String()
		}
		calls = append(calls, toolCall{ID: fmt.Sprintf("%s_%d", callID, i), Type: "function",
			Function: functionCall{Name: c.Name, Arguments: args}})
	}
	before := ""
	switch s.format.Name() {
	case "tool_call":
		before = text[:max(0, strings.Index(text, "<tool_call>"))]
	case "reason_tool":
		before = p.Reasoning
	}
	if b := strings.TrimSpace(before); b != "" {
		content = &b
	}
	return content, calls
}

// writeExact writes a parsed value as compact JSON, keys in written order,
// numbers as written (format.ParsedCall.Exact).
func writeExact(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case *format.Object:
		b.WriteByte('{')
		for i, k := range x.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExact(b, k)
			b.WriteString(": ")
			writeExact(b, x.Values[k])
		}
		b.WriteByte('}')
	case format.Tuple:
		writeExact(b, []any(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExact(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err == nil && json.Valid([]byte(x)) {
			b.WriteString(string(x))
		} else {
			writeExact(b, string(x))
		}
	default:
		j, err := json.Marshal(x)
		if err != nil {
			j = []byte("null")
		}
		b.Write(j)
	}
}
