package model

import (
	"math"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestBF16Compute: with Compute bf16, decoding equals the training graph
// (as in float32), the log-probs stay within bf16 rounding of PyTorch's
// float32 reference and, on a CPU with bf16 products, differ from the f32
// compute's (on one without, equal them bit for bit); a training step's
// gradients stay close to float32's.
func TestBF16Compute(t *testing.T) {
	for _, name := range []string{"qwen2-f32", "qwen3-bf16-sharded", "llama-bf16-tied"} {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			o := withAdapter(name)
			o.Compute = "bf16"
			m := openFixture(t, name, o)
			m32 := openFixture(t, name, withAdapter(name))
			got, err := m.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m32.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			dec, _, _ := decodeLogProbs(t, m, ref.Tokens, []int{5, 3, 7, 1}, 3)
			if d := maxDiff(dec, got); d > 1e-5 {
				t.Errorf("bf16: decode vs graph max |Δ lp| %.2e (tol 1e-5)", d)
			}
			dTorch := maxDiffRef(t, got, ref.LoraLogprobs)
			d32 := maxDiff(got, want)
			t.Logf("bf16 vs f32 compute max |Δ lp| %.2e, vs PyTorch f32 %.2e", d32, dTorch)
			if dTorch > 0.05 {
				t.Errorf("bf16 log-probs %.2e from PyTorch's float32 (tol 0.05)", dTorch)
			}
			if bf := kernels.BF16Products(m.Backend()); bf == (d32 == 0) {
				t.Errorf("bf16 products %v, yet bf16 vs f32 log-probs differ by %.2e", bf, d32)
			}
			seqs := eightSeqs(ref)
			var gs [2][][]float32
			for i, mm := range []*Model{m32, m} {
				mm.ZeroGrad()
				if err := mm.Step(seqs, weightedGrad(seqs, false)); err != nil {
					t.Fatal(err)
				}
				for _, p := range mm.Trainable() {
					gs[i] = append(gs[i], readGrad(mm, p))
				}
			}
			for i, p := range m.Trainable() {
				if e := relErr32(gs[1][i], gs[0][i]); !(e < 0.05) || math.IsNaN(e) {
					t.Errorf("%s: bf16 gradient relative difference %.2e from f32 (tol 0.05)", p.Name, e)
				}
			}
		})
	}
}
