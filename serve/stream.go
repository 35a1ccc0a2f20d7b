package serve

// Streaming: a sample's tokens become server-sent deltas as the engine
// draws them. Every delta is a piece of the final answer, never taken
// back: text is given out once it is final (no trailing partial
// character, no tail that may begin a stop string, which cuts the
// answer). In the tool_call format a call streams as OpenAI's API does:
// one delta with the call's id, type and function name as soon as the
// name is written, then its arguments piece by piece, each a complete
// JSON token rewritten as the whole answer writes it (writeExact: compact,
// ", " and ": ", numbers as written), so the pieces join into the whole
// answer's arguments. What does not follow the expected shape (another
// format, "parameters" for "arguments", a list of calls in one block) is
// sent when the sample ends, as whole calls.

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// textStream decodes a sample as its tokens arrive.
type textStream struct {
	s      *Server
	ids    []int32
	stops  []string
	prefix string // text the server wrote ahead of the sample's (tool_choice)
}

// avail is the text that is final so far: prefix + decode(ids), cut at a
// complete stop string, else without a trailing partial character and
// without the longest tail that begins a stop string.
func (t *textStream) avail() string {
	full := t.prefix + t.s.tok.Decode(t.ids, true)
	body := len(t.prefix)
	cut := len(full)
	for _, st := range t.stops {
		if i := strings.Index(full[body:], st); i >= 0 {
			cut = min(cut, body+i)
		}
	}
	if cut < len(full) {
		return full[:cut]
	}
	for strings.HasSuffix(full, "\uFFFD") && len(full) > body {
		full = full[:len(full)-len("\uFFFD")]
	}
	for len(full) > body && !utf8.ValidString(full[max(body, len(full)-3):]) {
		full = full[:len(full)-1]
	}
	hold := 0
	for _, st := range t.stops {
		hold = max(hold, partialSuffix(full[body:], st))
	}
	return full[:len(full)-hold]
}

// partialSuffix is the length of the longest proper prefix of pat that
// text ends with.
func partialSuffix(text, pat string) int {
	for n := min(len(text), len(pat)-1); n > 0; n-- {
		if strings.HasSuffix(text, pat[:n]) {
			return n
		}
	}
	return 0
}

// callHead matches the start of a call in the tool_call format, up to the
// arguments' value.
var callHead = regexp.MustCompile(`^\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*`)

const (
	tcOpenTag  = "<tool_call>"
	tcCloseTag = "</tool_call>"
)

// chatStream is one choice of a streamed chat answer.
type chatStream struct {
	textStream
	parse   bool // parse calls as they come (tool_call format, tool_choice not none)
	hold    bool // another format with tools: everything at the end
	content int  // bytes of avail sent as content
	inCalls bool // a call started: no more content
	pos     int  // where the call scan is in avail
	failed  bool // the calls left the expected shape: the rest at the end
	calls   []*streamedCall
	arg     *argLexer // the arguments being streamed, nil between calls
}

// streamedCall is a call whose head was sent.
type streamedCall struct {
	name string
	args strings.Builder // arguments sent
}

// delta is one piece to send: content, or a call's head or arguments.
type delta struct {
	content *string
	call    int // index of the call (head or arguments)
	head    bool
	name    string
	args    string
}

// advance consumes the text that became final and returns the deltas.
func (c *chatStream) advance(text string) []delta {
	var out []delta
	if c.hold {
		return nil
	}
	if !c.inCalls {
		end := len(text)
		if c.parse {
			if i := strings.Index(text[c.content:], tcOpenTag); i >= 0 {
				end = c.content + i
				c.inCalls, c.pos = true, end
			} else {
				end -= partialSuffix(text[c.content:], tcOpenTag)
			}
		}
		if end > c.content {
			piece := text[c.content:end]
			out = append(out, delta{content: &piece})
			c.content = end
		}
		if !c.inCalls {
			return out
		}
	}
	for !c.failed {
		if c.arg == nil { // between calls: the next head
			i := strings.Index(text[c.pos:], tcOpenTag)
			if i < 0 {
				return out
			}
			body := c.pos + i + len(tcOpenTag)
			m := callHead.FindStringSubmatchIndex(text[body:])
			if m == nil {
				if strings.Contains(text[body:], tcCloseTag) || strings.Contains(text[body:], `"parameters"`) || strings.HasPrefix(strings.TrimSpace(text[body:]), "[") {
					c.failed = true // not the shape streamed: sent at the end
				}
				return out
			}
			var name string
			if json.Unmarshal([]byte(text[body+m[2]:body+m[3]]), &name) != nil {
				c.failed = true
				return out
			}
			c.calls = append(c.calls, &streamedCall{name: name})
			out = append(out, delta{call: len(c.calls) - 1, head: true, name: name})
			c.pos = body + m[1]
			c.arg = &argLexer{}
		}
		piece, n, done, ok := c.arg.next(text[c.pos:])
		if !ok {
			c.failed = true
			return out
		}
		c.pos += n
		if piece != "" {
			k := len(c.calls) - 1
			c.calls[k].args.WriteString(piece)
			out = append(out, delta{call: k, args: piece})
		}
		if !done {
			return out
		}
		c.arg = nil
	}
	return out
}

// argLexer rewrites a JSON value token by token as writeExact writes it.
type argLexer struct {
	depth   int
	started bool
}

// next lexes the complete tokens at the start of text: the rewritten
// pieces, the bytes consumed, whether the value ended, and false when
// text is not the JSON object expected.
func (l *argLexer) next(text string) (piece string, n int, done, ok bool) {
	var b bytes.Buffer
	for {
		for n < len(text) && strings.IndexByte(" \t\r\n", text[n]) >= 0 {
			n++
		}
		if n == len(text) {
			return b.String(), n, false, true
		}
		ch := text[n]
		if !l.started && ch != '{' {
			return b.String(), n, false, false
		}
		l.started = true
		switch {
		case ch == '{' || ch == '[':
			b.WriteByte(ch)
			l.depth++
			n++
		case ch == '}' || ch == ']':
			b.WriteByte(ch)
			l.depth--
			n++
			if l.depth == 0 {
				return b.String(), n, true, true
			}
		case ch == ',':
			b.WriteString(", ")
			n++
		case ch == ':':
			b.WriteString(": ")
			n++
		case ch == '"':
			end := n + 1
			for end < len(text) && text[end] != '"' {
				if text[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(text) {
				return b.String(), n, false, true // the string goes on
			}
			var s string
			if json.Unmarshal([]byte(text[n:end+1]), &s) != nil {
				return b.String(), n, false, false
			}
			writeExact(&b, s)
			n = end + 1
		default:
			end := n
			for end < len(text) && strings.IndexByte("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", text[end]) >= 0 {
				end++
			}
			if end == n {
				return b.String(), n, false, false
			}
			if end == len(text) {
				return b.String(), n, false, true // the number or literal goes on
			}
			switch tok := text[n:end]; tok {
			case "true", "false", "null":
				b.WriteString(tok)
			default:
				if !json.Valid([]byte(tok)) {
					return b.String(), n, false, false
				}
				writeExact(&b, json.Number(tok))
			}
			n = end
		}
	}
}
