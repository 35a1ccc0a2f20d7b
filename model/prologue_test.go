package model

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/argrl/argrl/kernels"
	_ "github.com/argrl/argrl/kernels/cuda" // registers cuda-emu
)

// TestFusedPrologueBitIdentical: on the emulated CUDA backend (f32 and bf16
// modes: f32 and bf16 KV pages), decoding with the fused bias + RoPE + KV
// write (BiasRoPEKV) gives exactly the logits of the op-by-op sequence,
// through a chunked prefill and ragged decode steps, for an architecture
// with q/k/v biases (Qwen2) and one with per-head q/k norms and no bias
// (Qwen3); the fused call did run.
func TestFusedPrologueBitIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("cuda-emu: -short")
	}
	for _, bn := range []string{"cuda-emu", "cuda-emu-bf16"} {
		be, err := kernels.Open(bn)
		if err != nil {
			t.Skipf("%s: %v", bn, err)
		}
		for _, name := range []string{"qwen2-f32", "qwen3-f32-tied"} {
			t.Run(bn+"/"+name, func(t *testing.T) {
				m, err := Open(filepath.Join(fixtures, name), be, withAdapter(name))
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				fused, calls := decodeSteps(t, m, true)
				plain, none := decodeSteps(t, m, false)
				if calls == 0 {
					t.Fatalf("the fused prologue never ran on %s", bn)
				}
				if none != 0 {
					t.Fatalf("the fused prologue ran %d times while off", none)
				}
				for i := range fused {
					if !slices.Equal(fused[i], plain[i]) {
						t.Fatalf("step %d: fused logits differ from the op-by-op sequence", i)
					}
				}
				t.Logf("%d passes, %d fused calls, logits bit-identical", len(fused), calls)
			})
		}
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	}
}

// decodeSteps prefills two prompts (one longer than a prefill chunk of 3
// rows) and decodes ragged steps, with the fused prologue on or off; it
// returns every pass's logits and the fused calls made.
func decodeSteps(t *testing.T, m *Model, fuse bool) ([][]float32, int) {
	t.Helper()
	defer func(old bool) { fusePrologue = old }(fusePrologue)
	fusePrologue = fuse
	d, err := m.NewKVCache(2, m.MaxLen(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.rows = 3
	V := m.Config.VocabSize
	var out [][]float32
	grab := func(buf kernels.Buffer, B int) {
		h := make([]float32, B*V)
		m.be.CopyOut(h, buf)
		out = append(out, h)
	}
	for slot, p := range [][]int32{{5, 3, 7, 1, 2, 9, 4}, {8, 6}} {
		buf, err := d.Prefill(slot, p)
		if err != nil {
			t.Fatal(err)
		}
		grab(buf, 1)
	}
	for step, s := range [][]int{{0, 1}, {1}, {0, 1}, {0}} {
		toks := make([]int32, len(s))
		for i := range toks {
			toks[i] = int32((step*7 + i*3 + 1) % V)
		}
		buf, err := d.Decode(s, toks)
		if err != nil {
			t.Fatal(err)
		}
		grab(buf, len(s))
	}
	if err := m.be.Sync(); err != nil {
		t.Fatal(err)
	}
	return out, d.fusedPrologues
}
