package format

import (
	"strings"
	"testing"
)

func TestMismatchWarning(t *testing.T) {
	tc := `<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>`
	py := `[weather(city="Oslo")]`
	pythonic, _ := Get("pythonic", Options{})
	toolCall, _ := Get("tool_call", Options{})

	m := NewMismatch(pythonic)
	for _, s := range []string{tc, tc, py} {
		m.Add(s)
	}
	w := m.Warning("eval")
	for _, want := range []string{"warning: eval: 2 of 3 outputs", "format pythonic", "parse as tool_call", "set format: tool_call"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	if strings.Contains(w, "\n") {
		t.Errorf("warning is not one line: %q", w)
	}
	// tool_call reads the pythonic list as plain text (no call): still a mismatch.
	m = NewMismatch(toolCall)
	m.Add(py)
	if w := m.Warning("step 1"); !strings.Contains(w, "no call in format tool_call but parse as pythonic") {
		t.Errorf("tool_call scoring pythonic: %q", w)
	}
	// Half or fewer: silent; outputs in the configured format or in none: silent.
	m = NewMismatch(pythonic)
	for _, s := range []string{tc, py, "I cannot help.", "[]"} {
		m.Add(s)
	}
	if w := m.Warning("eval"); w != "" {
		t.Errorf("1 of 4 mismatched: %q", w)
	}
	m = NewMismatch(toolCall)
	m.Add("Sure, here is the weather.")
	if w := m.Warning("eval"); w != "" {
		t.Errorf("plain text: %q", w)
	}
	if w := NewMismatch(toolCall).Warning("eval"); w != "" {
		t.Errorf("no outputs: %q", w)
	}
}
