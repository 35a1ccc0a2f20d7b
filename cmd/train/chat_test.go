package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// train chat through a pipe on the demo's tiny model: tools from a file,
// the calls parsed and shown, /tool goes on, /reset starts over (greedy:
// the same question after /reset gets the first answer again).
func TestChatThroughPipe(t *testing.T) {
	dir := t.TempDir()
	tools := `[{"type": "function", "function": {"name": "search_products", "description": "Search the online shop.", "parameters": {"type": "object", "properties": {"product": {"type": "string", "description": "What to look for."}}, "required": ["product"]}}},
 {"name": "track_order", "description": "Where an order is.", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}]`
	tp := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(tp, []byte(tools), 0o644); err != nil {
		t.Fatal(err)
	}
	q := "Hola, busca silla de oficina en la tienda online."
	cmd := trainCmd(t, "chat", "--model", "../../configs/demo/base-model", "--tools", tp, "--max-new-tokens", "96")
	cmd.Stdin = strings.NewReader(q + "\n/tool {\"results\": [\"silla A\"]}\n/reset\n/nope\n" + q + "\n")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(stdout), "\n"), "\n")
	reset := -1
	for i, l := range lines {
		if l == "(new conversation)" {
			reset = i
		}
	}
	if reset < 1 || reset == len(lines)-1 {
		t.Fatalf("no answers around /reset:\n%s", stdout)
	}
	first, again := lines[0], lines[reset+1]
	if !strings.HasPrefix(first, "call: search_products {") {
		t.Errorf("the first answer is not a parsed search_products call: %q", first)
	}
	name, args, _ := strings.Cut(strings.TrimPrefix(first, "call: "), " ")
	var m map[string]any
	if err := json.Unmarshal([]byte(args), &m); err != nil || name != "search_products" || m["product"] == nil {
		t.Errorf("call line %q: arguments %v, %v", first, m, err)
	}
	if again != first {
		t.Errorf("after /reset the same question got %q, first %q: the history was not cleared", again, first)
	}
	for _, w := range []string{"template qwen2.5, format tool_call, 2 tools", `unknown command "/nope"`} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	// Bad input: a clear error and a non-zero exit.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[{"name": "f(x)"}]`), 0o644)
	if _, stderr, code := runTrain(t, "chat", "--model", "../../configs/demo/base-model", "--tools", bad); code == 0 || !strings.Contains(stderr, "bad.json: [0].name: invalid tool name") {
		t.Errorf("bad tools: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := runTrain(t, "chat"); code == 0 || !strings.Contains(stderr, "--model is required") {
		t.Errorf("no --model: exit %d\n%s", code, stderr)
	}
}
