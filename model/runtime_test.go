package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// Tests of the runtime model against the PyTorch fixtures
// (testdata/README.md): log-probs base and LoRA (≤ 1e-4), LoRA gradients of
// the documented loss (relative error ≤ 1e-3 per tensor), PEFT round trip.

// fixtureRef is the part of reference.json the runtime tests read.
type fixtureRef struct {
	Tokens       [][]int32    `json:"tokens"`
	Logprobs     [][]*float64 `json:"logprobs"`
	LoraLogprobs [][]*float64 `json:"lora_logprobs"`
	LossMask     [][]float64  `json:"loss_mask"`
	Loss         float64      `json:"loss"`
	LoraLoss     float64      `json:"lora_loss"`
}

func readFixtureRef(t testing.TB, name string) *fixtureRef {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, name, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r fixtureRef
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func openFixture(t testing.TB, name string, o Options) *Model {
	t.Helper()
	m, err := Open(filepath.Join(fixtures, name), kernels.NewCPU(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func withAdapter(name string) Options {
	return Options{Adapter: filepath.Join(fixtures, name, "adapter")}
}

// maxDiffRef is max |got[b][t] − want[b][t]| over t ≥ 1 (want[b][0] is null).
func maxDiffRef(t *testing.T, got [][]float32, want [][]*float64) float64 {
	t.Helper()
	var d float64
	for b := range want {
		if len(got[b]) != len(want[b]) {
			t.Fatalf("row %d: %d log-probs, reference %d", b, len(got[b]), len(want[b]))
		}
		if want[b][0] != nil || got[b][0] != 0 {
			t.Fatalf("row %d: position 0 must be empty (got %v, reference %v)", b, got[b][0], want[b][0])
		}
		for i := 1; i < len(want[b]); i++ {
			d = math.Max(d, math.Abs(float64(got[b][i])-*want[b][i]))
		}
	}
	return d
}

func maxDiff(a, b [][]float32) float64 {
	var d float64
	for i := range a {
		for j := range a[i] {
			d = math.Max(d, math.Abs(float64(a[i][j])-float64(b[i][j])))
		}
	}
	return d
}

func TestLogProbsMatchPyTorch(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			base := openFixture(t, name, Options{})
			lora := openFixture(t, name, withAdapter(name))
			for _, c := range []struct {
				what string
				m    *Model
				want [][]*float64
			}{{"base", base, ref.Logprobs}, {"lora", lora, ref.LoraLogprobs}} {
				lp, err := c.m.LogProbs(ref.Tokens, true) // the padded batch of 4
				if err != nil {
					t.Fatal(err)
				}
				d := maxDiffRef(t, lp, c.want)
				var single float64 // each sequence alone (B = 1, other T buckets)
				for b, s := range ref.Tokens {
					one, err := c.m.LogProbs([][]int32{s}, true)
					if err != nil {
						t.Fatal(err)
					}
					single = math.Max(single, maxDiffRef(t, one, c.want[b:b+1]))
				}
				t.Logf("%s: max |Δ log-prob| batch %.2e, single %.2e", c.what, d, single)
				if d > 1e-4 || single > 1e-4 {
					t.Errorf("%s: max |Δ log-prob| batch %.2e, single %.2e > 1e-4", c.what, d, single)
				}
			}
			// Adapters off is exactly the base model.
			off, err := lora.LogProbs(ref.Tokens, false)
			if err != nil {
				t.Fatal(err)
			}
			on, _ := base.LogProbs(ref.Tokens, true)
			if d := maxDiff(off, on); d != 0 {
				t.Errorf("adapters off differs from the base model by %g", d)
			}
		})
	}
}

// maskedNLLGrad is the fixture's loss: −Σ mask·lp / Σ mask.
func maskedNLLGrad(mask [][]float64) func(*Outputs) (*Grads, error) {
	var total float64
	for _, r := range mask {
		for _, v := range r {
			total += v
		}
	}
	return func(o *Outputs) (*Grads, error) {
		g := &Grads{LogProbs: make([][]float32, len(o.LogProbs))}
		for b := range o.LogProbs {
			g.LogProbs[b] = make([]float32, len(o.LogProbs[b]))
			for t := range g.LogProbs[b] {
				g.LogProbs[b][t] = float32(-mask[b][t] / total)
			}
		}
		return g, nil
	}
}

func readHost(m *Model, p *Param) []float32 {
	out := make([]float32, p.Len())
	m.be.CopyOut(out, p.W)
	return out
}

func readGrad(m *Model, p *Param) []float32 {
	out := make([]float32, p.Len())
	m.be.CopyOut(out, p.G)
	return out
}

// relErr is ‖g − ref‖₂ / ‖ref‖₂.
func relErr(g []float32, ref []float64) float64 {
	var num, den float64
	for i := range ref {
		d := float64(g[i]) - ref[i]
		num += d * d
		den += ref[i] * ref[i]
	}
	return math.Sqrt(num / math.Max(den, 1e-300))
}

func TestLoRAGradsMatchPyTorch(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			m := openFixture(t, name, withAdapter(name))
			f, err := safetensors.Open(filepath.Join(fixtures, name, "lora_grads.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m.ZeroGrad()
			var loss float64
			grad := maskedNLLGrad(ref.LossMask)
			err = m.Step(ref.Tokens, func(o *Outputs) (*Grads, error) {
				g, err := grad(o)
				for b := range o.LogProbs {
					for t := range o.LogProbs[b] {
						loss += float64(g.LogProbs[b][t]) * float64(o.LogProbs[b][t])
					}
				}
				return g, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(loss-ref.LoraLoss) > 1e-4 {
				t.Errorf("loss %.7f, PyTorch %.7f", loss, ref.LoraLoss)
			}
			if len(m.Trainable()) != len(f.Tensors()) {
				t.Fatalf("%d trainable tensors, reference %d", len(m.Trainable()), len(f.Tensors()))
			}
			var worst float64
			for _, p := range m.Trainable() {
				want, _, err := f.Float64(p.Name)
				if err != nil {
					t.Fatalf("%s: %v", p.Name, err)
				}
				e := relErr(readGrad(m, p), want)
				worst = math.Max(worst, e)
				if e > 1e-3 {
					t.Errorf("%s: relative error %.2e > 1e-3", p.Name, e)
				}
			}
			t.Logf("loss %.7f (PyTorch %.7f); worst LoRA grad relative error %.2e over %d tensors", loss, ref.LoraLoss, worst, len(m.Trainable()))
		})
	}
}
