package serve_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/argrl/argrl/serve"
	"github.com/argrl/argrl/serve/servetest"
)

// TestOpenAIClient drives the server with the official openai npm package
// (servetest.OpenAIVersion) on the demo's tiny model and two LoRA
// adapters: models, chat with tools (whole, streamed token by token with
// argument deltas, and through the client's stream helper), plain streamed
// text, n > 1 with a seed, logprobs/top_logprobs, token ids, multi-LoRA
// selection, completions, typed errors, and a 64-request concurrent burst
// over both adapters and the base whose every answer is well-formed and
// whose greedy answers equal the same requests alone
// (serve/testdata/openai_client.mjs).
func TestOpenAIClient(t *testing.T) {
	dir := servetest.OpenAINode(t)
	base := servetest.BaseModel()
	adapter := filepath.Join(t.TempDir(), "tuned")
	servetest.WriteAdapter(t, base, adapter, 9, 0.05)
	other := filepath.Join(t.TempDir(), "other")
	servetest.WriteAdapter(t, base, other, 4, 0.05)
	s := servetest.Start(t, base, serve.Options{Adapters: map[string]string{"tuned": adapter, "other": other}, APIKey: "sk-npm-test"})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "openai_client.mjs"), s.URL)
	cmd.Env = append(cmd.Environ(), "OPENAI_DIR="+dir, "ARGRL_KEY=sk-npm-test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node openai_client.mjs: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^ok [0-9]+ checks$`).Match(out) {
		t.Fatalf("the client did not finish:\n%s", out)
	}
	t.Logf("%s", out)
}
