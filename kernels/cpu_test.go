package kernels_test

import (
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/kerneltest"
)

func TestCPU(t *testing.T) {
	kerneltest.RunAll(t, kernels.NewCPU())
}

// TestCPUWithoutBF16: the suite where the CPU lacks AVX512-BF16 (BF16
// MatMuls fall back to the float32 product).
func TestCPUWithoutBF16(t *testing.T) {
	kerneltest.RunAll(t, kernels.NewCPUWithoutBF16())
}

func TestRegistry(t *testing.T) {
	b, err := kernels.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() == "" {
		t.Errorf("empty backend name")
	}
	if _, err := kernels.Open("no-such-backend"); err == nil {
		t.Errorf("Open of an unknown backend succeeded")
	}
}
