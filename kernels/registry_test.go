package kernels

import (
	"errors"
	"strings"
	"testing"

	"github.com/argrl/argrl/internal/registry"
)

// fakeGPU is a CPU backend that says it is a GPU.
type fakeGPU struct{ Backend }

func (fakeGPU) Name() string   { return "cuda" }
func (fakeGPU) Device() string { return "Test GPU (sm_90)" }

// fakeGPUbf16 is its cuda-bf16 mode.
type fakeGPUbf16 struct{ fakeGPU }

func (fakeGPUbf16) Name() string { return "cuda-bf16" }

// auto picks cuda-bf16 when it is registered and opens, cpu otherwise,
// and says which and why; it never picks an emulator; an explicit cuda on
// a build without it says how to get it, and stays the f32 "cuda".
func TestChooseAuto(t *testing.T) {
	old := factories
	defer func() { factories = old }()
	factories = registry.New[Factory]()
	Register("cpu", func() (Backend, error) { return NewCPU(), nil })
	Register("cuda-emu", func() (Backend, error) { return fakeGPU{NewCPU()}, nil })
	Register("cuda-bf16tc", func() (Backend, error) { return fakeGPU{NewCPU()}, nil })

	b, why, err := Choose(Auto)
	if err != nil || !strings.HasPrefix(b.Name(), "cpu") || !strings.Contains(why, "cpu (auto: this binary has no CUDA backend") {
		t.Errorf("auto without cuda: %v, %q, %v", b, why, err)
	}
	_, err = Open("cuda")
	if err == nil || !strings.Contains(err.Error(), "built without the CUDA backend") || !strings.Contains(err.Error(), `"auto"`) {
		t.Errorf("explicit cuda on a build without it: %v", err)
	}
	Register("cuda", func() (Backend, error) { return nil, errors.New("no CUDA-capable device is detected") })
	Register("cuda-bf16", func() (Backend, error) { return nil, errors.New("no CUDA-capable device is detected") })
	b, why, err = Choose(Auto)
	if err != nil || !strings.HasPrefix(b.Name(), "cpu") || !strings.Contains(why, "no usable GPU") || !strings.Contains(why, "no CUDA-capable device") {
		t.Errorf("auto with cuda but no GPU: %v, %q, %v", b, why, err)
	}
	if _, err := Open("cuda"); err == nil || !strings.Contains(err.Error(), "no CUDA-capable device") {
		t.Errorf("explicit cuda without a GPU: %v", err)
	}
	Register("cuda", func() (Backend, error) { return fakeGPU{NewCPU()}, nil })
	Register("cuda-bf16", func() (Backend, error) { return fakeGPUbf16{fakeGPU{NewCPU()}}, nil })
	b, why, err = Choose(Auto)
	if err != nil || b.Name() != "cuda-bf16" || why != "cuda-bf16 (auto: the GPU's fastest mode; model.backend: cuda for f32: Test GPU (sm_90))" {
		t.Errorf("auto with a GPU: %v, %q, %v", b, why, err)
	}
	if b, why, err := Choose("cuda"); err != nil || b.Name() != "cuda" || why != "cuda: Test GPU (sm_90)" {
		t.Errorf("explicit cuda with a GPU: %v, %q, %v", b, why, err)
	}
	if _, why, _ := Choose("cpu"); why != "cpu" {
		t.Errorf("a named backend is reported as %q", why)
	}
	if _, err := Open("nope"); err == nil || !strings.Contains(err.Error(), "auto") || !strings.Contains(err.Error(), "cpu") {
		t.Errorf("unknown backend: %v", err)
	}
}
