package chat

import (
	"encoding/json"
	"testing"

	"github.com/argrl/argrl/data"
)

// A record's reasoning is SFT's <reason> text in reason_tool; tool_call
// has no reasoning block and ignores it.
func TestGoldTextReasoning(t *testing.T) {
	rec := data.Record{ID: "r", Tools: []data.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}},
		Messages:  []data.Message{{Role: "user", Content: "hola"}},
		Calls:     []data.Call{{Name: "f", Arguments: map[string]any{"a": "x"}}},
		Reasoning: "f. a is x."}
	rt := mustFormat(t, "reason_tool")
	r, err := mustTemplate(t, "qwen2").Render(rec, rt, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := `<reason>f. a is x.</reason><tool>[{"name": "f", "arguments": {"a": "x"}}]</tool><|im_end|>`; r.Target != want {
		t.Errorf("reason_tool target %q, want %q", r.Target, want)
	}
	tc := mustFormat(t, "tool_call")
	r, err = mustTemplate(t, "qwen2").Render(rec, tc, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := tc.Render(rec.Calls, rec.Tools) + "<|im_end|>"; r.Target != want {
		t.Errorf("tool_call target %q, want %q", r.Target, want)
	}
}
