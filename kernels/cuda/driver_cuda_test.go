//go:build argrl_cuda

package cuda

import (
	"os"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestDriverReport opens the machine's CUDA driver and cuBLAS (no GPU
// needed: on a machine with the driver library installed but no device
// this is the whole of what the binary does before cuInit) and checks that
// every entry point resolved to a real symbol. make cuda-check runs it; on
// this project's CI that is a CUDA 12 driver library (Debian's libcuda1)
// next to the 11.8 toolkit's cuBLAS.
func TestDriverReport(t *testing.T) {
	rep, err := DriverReport()
	if err != nil {
		if os.Getenv("ARGRL_REQUIRE_GPU") == "" && (strings.Contains(err.Error(), "no usable CUDA driver") || strings.Contains(err.Error(), "no CUDA driver library")) {
			t.Skipf("no CUDA driver library here: %v", err)
		}
		t.Fatalf("%v\n%s", err, rep)
	}
	t.Logf("resolved at run time:\n%s", rep)
	lines := strings.Split(strings.TrimSpace(rep), "\n")
	// the summary, one "loaded" line per file (driver, cuBLASLt, cuBLAS),
	// then the entry points
	nl := strings.Count(Loaded(), "\n")
	if nl < 2 || !strings.Contains(rep, "loaded CUDA driver: ") || !strings.Contains(rep, "loaded cuBLAS: ") {
		t.Fatalf("the loaded files are not reported:\n%s", rep)
	}
	if len(lines) != 1+nl+entryPoints() {
		t.Fatalf("%d entry points reported, want %d", len(lines)-1-nl, entryPoints())
	}
	for _, l := range lines[1+nl:] {
		f := strings.Fields(l)
		if len(f) != 3 || f[1] == "?" {
			t.Errorf("entry point not resolved to a symbol: %q", l)
		}
	}
}

// TestNewWithoutGPU: where the driver loads but no GPU is visible, New
// fails with an error naming cuInit and the driver, and does not crash.
func TestNewWithoutGPU(t *testing.T) {
	be, err := New(Options{})
	if err == nil {
		be.Close()
		t.Skip("a GPU is present")
	}
	t.Logf("New: %v", err)
	if _, lerr := DriverReport(); lerr != nil {
		t.Skipf("no driver library: %v", lerr)
	}
	if !strings.Contains(err.Error(), "cuInit") {
		t.Errorf("New without a GPU: %v; want the cuInit failure", err)
	}
}

// TestAutoWithoutGPU: in the GPU build on a machine without a GPU, auto
// opens cpu and says why in one line; nothing panics.
func TestAutoWithoutGPU(t *testing.T) {
	be, line, err := kernels.Choose(kernels.Auto)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	t.Logf("auto: %s", line)
	if strings.HasPrefix(line, kernels.AutoCUDA) {
		t.Skip("a GPU is present")
	}
	if !strings.HasPrefix(be.Name(), "cpu") || !strings.HasPrefix(line, "cpu (auto: no usable GPU") || strings.Contains(line, "\n") {
		t.Errorf("auto without a GPU: backend %s, line %q", be.Name(), line)
	}
}
