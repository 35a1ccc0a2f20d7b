package model

import (
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestPreNormBF16Decode: on cuda-emu-bf16, computing in bf16, a KV cache
// writes the layers' pre-norms in bf16 (eagerOps.preNorm), and prefill
// and decode give the log-probs, fork logits and last hidden states of
// the f32 pre-norms bit for bit (every reader rounds its A to bf16, as
// RMSNorm's bf16 output is rounded), with the fixture's adapter on, on a
// Qwen2 (folded q/k/v biases) and a Qwen3 (per-head q/k norms, which stay
// f32) fixture.
func TestPreNormBF16Decode(t *testing.T) {
	if testing.Short() {
		t.Skip("cuda-emu-bf16: -short")
	}
	for _, name := range []string{"qwen2-bf16-tied", "qwen3-bf16-sharded"} {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			be, err := kernels.Open("cuda-emu-bf16")
			if err != nil {
				t.Skipf("cuda-emu-bf16: %v", err)
			}
			t.Cleanup(func() { be.Close() })
			o := withAdapter(name)
			o.Compute = "bf16"
			m, err := Open(filepath.Join(fixtures, name), be, o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			d, err := m.NewKVCache(1, m.MaxLen(), 1)
			if err != nil {
				t.Fatal(err)
			}
			on := d.normBF16 != nil && d.normBF16.DType() == kernels.BF16
			d.Close()
			if !on {
				t.Fatal("no bf16 pre-norm buffer on cuda-emu-bf16 with bf16 compute")
			}
			prompt := []int{5, 3, 7, 1}
			lp, fork, last := decodeLogProbs(t, m, ref.Tokens, prompt, 3)
			saved := bf16PreNorm
			bf16PreNorm = func(*Model) bool { return false }
			t.Cleanup(func() { bf16PreNorm = saved })
			lp32, fork32, last32 := decodeLogProbs(t, m, ref.Tokens, prompt, 3)
			sameBits(t, "log-probs", lp, lp32)
			sameBits(t, "fork logits", [][]float32{fork}, [][]float32{fork32})
			sameBits(t, "last hidden states", last, last32)
		})
	}
}
