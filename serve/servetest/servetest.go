// Package servetest starts `train serve`'s server on the demo's tiny base
// model (configs/demo/base-model) for tests, with random LoRA adapters.
package servetest

import (
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/tokenizer"
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

// Start opens the model in modelDir (with adapters, the first one loaded)
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
	m, err := model.Open(modelDir, be, model.Options{Adapter: o.Adapters[o.First]})
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
