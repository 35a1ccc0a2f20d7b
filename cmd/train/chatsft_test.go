package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Plain conversations without tools (ShareGPT here) train with train sft:
// the target is the assistant's answer, and validation says the call
// metrics are skipped instead of printing zeros.
func TestSFTPlainChat(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "chat.json")
	src := `{"conversations": [{"from": "human", "value": "Say hi in French."}, {"from": "gpt", "value": "Bonjour !"}]}
{"conversations": [{"from": "human", "value": "Say hi in Spanish."}, {"from": "gpt", "value": "¡Hola!"}, {"from": "human", "value": "And in Italian?"}, {"from": "gpt", "value": "Ciao!"}]}
`
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	recs := filepath.Join(dir, "chat.jsonl")
	if _, stderr, code := runTrain(t, "data", "convert", "--from", "sharegpt", in, recs); code != 0 {
		t.Fatalf("convert: exit %d\n%s", code, stderr)
	}
	cfg := sftYAML(t, filepath.Join(dir, "run"), "")
	sets := []string{"--set", "data.train=" + recs, "--set", "data.val=" + recs, "--set", "optim.max_steps=2", "--set", "eval_every=2", "--set", "optim.batch_size=1"}
	stdout, stderr, code := runTrain(t, append([]string{"sft", "--config", cfg, "--debug-template"}, sets...)...)
	if code != 0 {
		t.Fatalf("--debug-template: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "----- target (loss) -----\nBonjour !<|im_end|>") || strings.Contains(stdout, "<tools>") {
		t.Errorf("the plain-chat target is not the answer, or tools were rendered:\n%s", stdout)
	}
	_, stderr, code = runTrain(t, append([]string{"sft", "--config", cfg}, sets...)...)
	if code != 0 {
		t.Fatalf("sft: exit %d\n%s", code, stderr)
	}
	// eval on plain chat only: nothing for the call metrics, said plainly.
	if _, stderr, code := runTrain(t, "eval", "--data", recs, "--predictions", recs); code == 0 || !strings.Contains(stderr, "are plain chat (no tools): the call metrics have nothing to score") {
		t.Errorf("eval on plain chat: exit %d\n%s", code, stderr)
	}
	for _, w := range []string{"sft: 3 training examples", "3 of 3 records are plain chat (no tools): the call metrics (TID…FCM) skip them", "eval step 2: loss", "(plain chat: no call metrics)"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
