package data

import (
	"strings"
	"testing"
)

// The reasoning key (train data synth --reasoning) is read as a string and
// a wrong type is an error that names it.
func TestDecodeReasoning(t *testing.T) {
	line := `{"id":"r","lang":"es","tools":[],"messages":[{"role":"user","content":"hola"}],"calls":[],"reject_reason":"No tool.","reasoning":"No tool."}`
	rec, err := DecodeRecord([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Reasoning != "No tool." {
		t.Errorf("reasoning %q", rec.Reasoning)
	}
	_, err = DecodeRecord([]byte(strings.Replace(line, `"reasoning":"No tool."`, `"reasoning":3`, 1)))
	if err == nil || !strings.Contains(err.Error(), "reasoning") {
		t.Errorf("reasoning 3: %v", err)
	}
}
