package model

import (
	"math"
	"testing"
)

// TestRecomputeGradsBitIdentical: with Recompute layer, every trainable
// gradient (LoRA with dropout, value head), the log-probs and the values
// equal those of Recompute none bit for bit, for f32 and bf16 compute,
// over two accumulated steps, with the LM head in chunks of 7 rows; the
// plan recomputes steps and allocates less activation memory.
func TestRecomputeGradsBitIdentical(t *testing.T) {
	defer func(n int) { headChunkRows = n }(headChunkRows)
	headChunkRows = 7
	for _, name := range []string{"qwen2-f32", "qwen3-bf16-sharded", "llama-bf16-tied"} {
		for _, compute := range []string{"f32", "bf16"} {
			t.Run(name+"/"+compute, func(t *testing.T) {
				ref := readFixtureRef(t, name)
				seqs := eightSeqs(ref)
				run := func(recompute string) ([][]float32, *Outputs, *Model) {
					m := openFixture(t, name, Options{LoRA: &LoRAOptions{R: 4, Alpha: 8, Dropout: 0.1, Seed: 3},
						ValueHead: true, Compute: compute, Recompute: recompute})
					for _, p := range m.Trainable() { // nonzero B: every gradient flows
						m.be.Fill(p.W, 0.03)
					}
					m.ZeroGrad()
					var out *Outputs
					for range 2 {
						grad := weightedGrad(seqs, true)
						if err := m.Step(seqs, func(o *Outputs) (*Grads, error) { out = o; return grad(o) }); err != nil {
							t.Fatal(err)
						}
					}
					var gs [][]float32
					for _, p := range m.Trainable() {
						gs = append(gs, readGrad(m, p))
					}
					return gs, out, m
				}
				g0, o0, m0 := run("none")
				g1, o1, m1 := run("layer")
				for i, p := range m0.Trainable() {
					nonzero := false
					for j := range g0[i] {
						if math.Float32bits(g0[i][j]) != math.Float32bits(g1[i][j]) {
							t.Fatalf("%s: gradient[%d] = %v with recompute, %v without", p.Name, j, g1[i][j], g0[i][j])
						}
						nonzero = nonzero || g0[i][j] != 0
					}
					if !nonzero {
						t.Errorf("%s: zero gradient", p.Name)
					}
				}
				for _, pair := range [][2][][]float32{{o0.LogProbs, o1.LogProbs}, {o0.Entropy, o1.Entropy}, {o0.Values, o1.Values}} {
					if d := maxDiff(pair[0], pair[1]); d != 0 {
						t.Errorf("outputs differ by %g with recompute", d)
					}
				}
				B, T := len(seqs), 16
				s0, err := m0.TrainPlan(B, T)
				if err != nil {
					t.Fatal(err)
				}
				s1, err := m1.TrainPlan(B, T)
				if err != nil {
					t.Fatal(err)
				}
				if s0.RecomputeSteps != 0 || s1.RecomputeSteps == 0 || s1.ActivationBytes() >= s0.ActivationBytes() {
					t.Errorf("plans: none %+v, layer %+v", s0, s1)
				}
				t.Logf("activations: none %d B, layer %d B (%d steps recomputed)", s0.ActivationBytes(), s1.ActivationBytes(), s1.RecomputeSteps)
			})
		}
	}
}
