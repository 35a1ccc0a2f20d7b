package model

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// A config whose num_hidden_layers (2^31) the checkpoint does not back is
// refused from the header alone, naming the file and the key, before any
// per-layer allocation (well under 100 MB allocated in all).
func TestHugeConfigRefusedBeforeAllocation(t *testing.T) {
	dir := copyFixture(t, "qwen2-f32")
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["num_hidden_layers"] = 1 << 31
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Open(dir, kernels.NewCPU(), Options{})
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 2^31-layer config opened")
	}
	for _, want := range []string{filepath.Join(dir, "config.json"), `"num_hidden_layers"`, "2147483648", "holds 2 layers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 100<<20 {
		t.Errorf("allocated %d MB before refusing the config", n>>20)
	}
	if _, err := Export(dir, t.TempDir(), ExportOptions{}); err == nil || !strings.Contains(err.Error(), `"num_hidden_layers"`) {
		t.Errorf("export of the 2^31-layer config: %v", err)
	}
}
