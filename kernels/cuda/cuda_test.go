//go:build argrl_cuda

package cuda

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/kerneltest"
)

// gpu opens the CUDA backend, or skips the test where no GPU is usable
// (a -tags argrl_cuda build on a machine without one) unless
// ARGRL_REQUIRE_GPU is set, as make gpu-check does.
func gpu(t testing.TB, opt Options) *Backend {
	t.Helper()
	be, err := New(opt)
	if err != nil {
		if os.Getenv("ARGRL_REQUIRE_GPU") == "" {
			t.Skipf("no GPU: %v", err)
		}
		t.Fatal(err)
	}
	return be
}

// TestConformanceCUDA runs the conformance suite, and the emulated tests'
// extra shapes, on the GPU (only in a -tags argrl_cuda build): f32
// ("cuda"), bf16 tensor-core GEMMs ("cuda-bf16tc") and every op with bf16
// activations ("cuda-bf16", MatMul at bf16 tolerance by testTensorCores).
func TestConformanceCUDA(t *testing.T) {
	for _, opt := range []Options{{}, {BF16TensorCores: true}, bf16Options} {
		be := gpu(t, opt)
		t.Logf("device: %s, options %+v", be.Device(), opt)
		if opt.BF16Activations {
			t.Run("bf16", func(t *testing.T) {
				kerneltest.RunAllExcept(t, be, "MatMul")
				t.Run("tensorcores", func(t *testing.T) { testTensorCores(t, be) })
			})
		} else if opt.BF16TensorCores {
			t.Run("tensorcores", func(t *testing.T) { testTensorCores(t, be) })
		} else {
			kerneltest.RunAll(t, be)
			t.Run("shapes", func(t *testing.T) { testShapes(t, be) })
			t.Run("registry", func(t *testing.T) {
				b, err := kernels.Open("cuda")
				if err != nil {
					t.Fatal(err)
				}
				if b.Name() != "cuda" {
					t.Errorf("kernels.Open(\"cuda\").Name() = %q", b.Name())
				}
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			})
		}
		s := be.MemStats()
		t.Logf("pool: in use %d B, peak %d B, cached %d B", s.InUse, s.Peak, s.Cached)
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestCUDAMatchesEmulator runs the same attention inputs through the GPU
// and the CPU emulator of the same kernels: beyond the reference
// tolerance, the two must agree closely (same algorithm, same order of
// operations; only fused multiply-adds and exp differ).
func TestCUDAMatchesEmulator(t *testing.T) {
	dev := gpu(t, Options{})
	defer dev.Close()
	emu := newEmu(t, EmuOptions{})
	p := kernels.AttnParams{B: 2, Tq: 45, Hq: 12, Hkv: 2, D: 64, S: 2, Tmax: 45, KLen: []int32{45, 31}}
	r := rand.New(rand.NewPCG(1, 2))
	nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
	vals := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(2*r.Float64() - 1)
		}
		return x
	}
	q, k, v := vals(nq), vals(nkv), vals(nkv)
	var outs [2][]float32
	for i, be := range []*Backend{dev, emu} {
		up := func(x []float32) kernels.Buffer {
			b := be.Alloc(kernels.F32, len(x))
			be.CopyIn(b, x)
			return b
		}
		out, lse := be.Alloc(kernels.F32, nq), be.Alloc(kernels.F32, nr)
		be.Attention(out, lse, up(q), up(k), up(v), p)
		outs[i] = make([]float32, nq)
		be.CopyOut(outs[i], out)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range outs[0] {
		if d := outs[0][i] - outs[1][i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("out[%d]: GPU %v, emulator %v", i, outs[0][i], outs[1][i])
		}
	}
}
