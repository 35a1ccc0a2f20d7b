package sgemm

import (
	"runtime"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestDispatch: the kernel list follows the CPU (AVX-512F first, then
// AVX2+FMA) on amd64, and is empty elsewhere or with -tags purego.
func TestDispatch(t *testing.T) {
	var want []string
	if runtime.GOARCH == "amd64" && !purego {
		if cpu.X86.HasAVX512F {
			want = append(want, "avx512")
		}
		if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
			want = append(want, "avx2")
		}
	}
	if len(Kernels) != len(want) {
		t.Fatalf("%d kernels, want %v", len(Kernels), want)
	}
	for i, k := range Kernels {
		if k.Name != want[i] || k.fn == nil || k.MR <= 0 || k.NR <= 0 {
			t.Errorf("kernel %d: %+v, want %s", i, k, want[i])
		}
	}
	if (Best() == nil) != (len(want) == 0) {
		t.Errorf("Best() = %v with kernels %v", Best(), want)
	}
	t.Logf("kernels: %v", want)
}
