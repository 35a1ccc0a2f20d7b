// Package servetest starts `train serve`'s server on the demo's tiny base
// model (configs/demo/base-model) for tests, with random LoRA adapters.
package servetest

import (
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/model/tokenizer/tokenizertest"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/serve"
)

// BaseModel is the demo's base model directory.
func BaseModel() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "configs", "demo", "base-model")
}

// WriteAdapter writes a random rank-4 PEFT adapter (every target, A and B
// uniform in ±scale) for the model in modelDir to dir.
func WriteAdapter(t testing.TB, modelDir, dir string, seed uint64, scale float32) {
	t.Helper()
	cfg, err := model.LoadConfig(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := model.NewAdapter(cfg, 4, 8, 0, model.AllTargets)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 2))
	for _, path := range sortedPaths(a) {
		l := a.Modules[path]
		for _, x := range [][]float32{l.A.Data, l.B.Data} {
			for i := range x {
				x[i] = (2*r.Float32() - 1) * scale
			}
		}
	}
	a.BaseModel = modelDir
	if err := model.ExportPEFT(dir, a, cfg); err != nil {
		t.Fatal(err)
	}
}

func sortedPaths(a *model.Adapter) []string {
	var out []string
	for p := range a.Modules {
		out = append(out, p)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Server is a running test server.
type Server struct {
	*serve.Server
	HTTP *httptest.Server
	URL  string
}

// Start opens the model in modelDir (its adapters loaded by serve.New)
// on the CPU backend and serves it on a local port until the test ends.
func Start(t testing.TB, modelDir string, o serve.Options) *Server {
	t.Helper()
	be, _, err := kernels.Choose("cpu")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Open(modelDir, be, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	batch := o.Batch
	if batch == 0 {
		batch = 64
	}
	eng, err := rollout.New(m, rollout.Options{Batch: batch, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(m, eng, tok, o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		eng.Close()
		m.Close()
		be.Close()
	})
	return &Server{Server: s, HTTP: hs, URL: hs.URL}
}

// OpenAIVersion is the pinned version of the official openai npm package
// the client tests drive the server with.
const OpenAIVersion = "6.30.1"

// OpenAINode returns a directory whose node_modules holds the openai
// package, installed once with npm into the test cache
// (tokenizertest.CacheDir). Where node or npm is missing or the registry
// unreachable the test is skipped, and fails under CI (CI set).
func OpenAINode(t testing.TB) string {
	t.Helper()
	dir, err := fetchOpenAI()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("installing openai@%s from npm: %v", OpenAIVersion, err)
		}
		t.Skipf("skipping: cannot install openai@%s from npm (are node and npm installed and the registry reachable?): %v", OpenAIVersion, err)
	}
	return dir
}

var npmMu sync.Mutex

func fetchOpenAI() (string, error) {
	npmMu.Lock()
	defer npmMu.Unlock()
	root := filepath.Join(tokenizertest.CacheDir(), "npm", "openai-"+OpenAIVersion)
	if _, err := os.Stat(filepath.Join(root, "node_modules", "openai", "package.json")); err == nil {
		return root, nil
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s not found: %w", tool, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(filepath.Dir(root), "openai-stage-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stage)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", stage, "openai@"+OpenAIVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install openai@%s: %v: %s", OpenAIVersion, err, strings.TrimSpace(string(out)))
	}
	if _, err := os.Stat(filepath.Join(stage, "node_modules", "openai", "package.json")); err != nil {
		return "", fmt.Errorf("npm install openai@%s: no package.json: %w", OpenAIVersion, err)
	}
	os.RemoveAll(root)
	if err := os.Rename(stage, root); err != nil {
		return "", err
	}
	return root, nil
}
