package serve

import (
	"strings"
	"testing"

	"github.com/argrl/argrl/data/format"
)

// streamCalls feeds text to a chatStream in pieces of the given sizes (as
// tokens would arrive) and returns the calls it streamed, each as name
// and arguments joined.
func streamCalls(text string, sizes []int) (content string, calls [][2]string, c *chatStream) {
	c = &chatStream{parse: true}
	at := 0
	feed := func(upto int) {
		for _, d := range c.advance(text[:upto]) {
			switch {
			case d.content != nil:
				content += *d.content
			case d.head:
				calls = append(calls, [2]string{d.name, ""})
			default:
				calls[d.call][1] += d.args
			}
		}
	}
	for i := 0; at < len(text); i++ {
		n := 1
		if len(sizes) > 0 {
			n = max(1, sizes[i%len(sizes)])
		}
		at = min(len(text), at+n)
		feed(at)
	}
	feed(len(text))
	return content, calls, c
}

// TestStreamedCalls: tool calls in the tool_call format stream as a head
// (the name) then argument pieces that join into exactly the arguments of
// the whole answer (writeExact), whatever the token boundaries; content
// before the first call streams as text; a call of another shape is left
// for the end (failed), without a head.
func TestStreamedCalls(t *testing.T) {
	f, err := format.Get("tool_call", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{format: f}
	for _, tc := range []struct {
		text    string
		content string
		streams int // calls streamed
	}{
		{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>", "", 1},
		{"Let me check.\n<tool_call>\n{\"name\":\"f\",\"arguments\":{\"a\":[1, 2.50,{\"b\":null}],\"c\":\"x\\\"y\\u00e9<\",\"d\":true}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {}}\n</tool_call>", "Let me check.\n", 2},
		{"<tool_call>\n{\"name\": \"h\", \"arguments\": {\"n\": -1e3, \"s\": \"a b\"}}</tool_call>", "", 1},
		{"<tool_call>\n{\"name\": \"p\", \"parameters\": {\"x\": 1}}\n</tool_call>", "", 0},
		{"no call at all, just <tool text", "no call at all, just <tool text", 0},
	} {
		want := s.format.Parse(tc.text)
		_, calls := s.assistantMessage(tc.text, &toolChoice{Mode: "auto"}, "call_x")
		for _, sizes := range [][]int{nil, {3}, {2, 7, 1}, {1000}} {
			content, got, c := streamCalls(tc.text, sizes)
			if len(got) != tc.streams {
				t.Errorf("%q in pieces %v: %d calls streamed, want %d", tc.text, sizes, len(got), tc.streams)
				continue
			}
			if want.Valid && len(calls) > 0 && content != tc.content {
				t.Errorf("%q in pieces %v: content %q, want %q", tc.text, sizes, content, tc.content)
			}
			if len(calls) == 0 && !c.inCalls && content != tc.text {
				t.Errorf("%q: streamed text %q", tc.text, content)
			}
			for k, g := range got {
				if g[0] != calls[k].Function.Name || g[1] != calls[k].Function.Arguments {
					t.Errorf("%q in pieces %v: call %d streamed as %q %q; the whole answer has %q %q",
						tc.text, sizes, k, g[0], g[1], calls[k].Function.Name, calls[k].Function.Arguments)
				}
			}
		}
	}
}

// TestTextStreamHolds: the final-so-far text holds back a tail that may
// begin a stop string and a partial character, and cuts at a whole stop
// string.
func TestTextStreamHolds(t *testing.T) {
	if n := partialSuffix("hello wor", "world"); n != 3 {
		t.Errorf("partialSuffix = %d, want 3", n)
	}
	if n := partialSuffix("hello", "xyz"); n != 0 {
		t.Errorf("partialSuffix = %d, want 0", n)
	}
	if n := partialSuffix("ab<tool_", tcOpenTag); n != 6 {
		t.Errorf("partialSuffix = %d, want 6", n)
	}
}

// FuzzStreamCalls: streaming any text in any pieces never panics, and
// every call it streams has the name the whole answer parses.
func FuzzStreamCalls(f *testing.F) {
	f.Add("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", 3)
	f.Add("x<tool_call>{\"name\":\"a\\\"\",\"arguments\":{\"k\":[1,{\"z\":\"\\ud800\"}]}}</tool_call>", 1)
	f.Add("<tool_call>{\"name\": \"a\", \"arguments\": {\"k\": 1e}}</tool_call>", 2)
	fm, err := format.Get("tool_call", format.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{format: fm}
	f.Fuzz(func(t *testing.T, text string, size int) {
		_, got, _ := streamCalls(text, []int{size%9 + 1})
		_, calls := s.assistantMessage(text, &toolChoice{Mode: "auto"}, "call_x")
		if len(calls) == 0 {
			return
		}
		for k, g := range got {
			if k < len(calls) && g[0] != calls[k].Function.Name && !strings.Contains(text, "[") {
				t.Errorf("call %d streamed as %q, parsed as %q", k, g[0], calls[k].Function.Name)
			}
		}
	})
}
