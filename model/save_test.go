package model

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// The PPO value head (gradients by central differences, persistence) and
// SaveCheckpoint after a full fine-tuning step.

func TestValueHead(t *testing.T) {
	const name = "qwen3-f32-tied"
	ref := readFixtureRef(t, name)
	o := withAdapter(name)
	o.ValueHead = true
	m := openFixture(t, name, o)
	seqs := eightSeqs(ref)
	// Values only: the LoRA weights still receive gradient through the trunk.
	valuesOnly := func(o *Outputs) (*Grads, error) {
		g, _ := weightedGrad(seqs, true)(o)
		g.LogProbs = nil
		return g, nil
	}
	m.ZeroGrad()
	if err := m.Step(seqs, valuesOnly); err != nil {
		t.Fatal(err)
	}
	tr := m.Trainable()
	vw, vb := tr[len(tr)-2], tr[len(tr)-1]
	if vw.Name != "value_head.weight" || vb.Name != "value_head.bias" {
		t.Fatalf("last trainables %s, %s", vw.Name, vb.Name)
	}
	if g := readGrad(m, tr[1]); slices.Equal(g, make([]float32, len(g))) {
		t.Error("value loss does not reach the LoRA weights")
	}
	// value is linear in the head: central differences are exact up to rounding.
	obj := func() float64 {
		out, err := m.Forward(seqs, true)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := valuesOnly(out)
		var s float64
		for b := range out.Values {
			for i := range out.Values[b] {
				s += float64(g.Values[b][i]) * float64(out.Values[b][i])
			}
		}
		return s
	}
	for _, p := range []*Param{vw, vb} {
		g, w := readGrad(m, p), readHost(m, p)
		for _, i := range []int{0, len(w) - 1} {
			orig := w[i]
			w[i] = orig + 0.5
			m.be.CopyIn(p.W, w)
			up := obj()
			w[i] = orig - 0.5
			m.be.CopyIn(p.W, w)
			down := obj()
			w[i] = orig
			m.be.CopyIn(p.W, w)
			num := up - down
			if math.Abs(num-float64(g[i])) > 1e-4*math.Max(1, math.Abs(num)) {
				t.Errorf("%s[%d]: Step %.6g, differences %.6g", p.Name, i, g[i], num)
			}
		}
	}
	out, _ := m.Forward(seqs, true)
	if len(out.Values) != len(seqs) || len(out.Values[3]) != len(seqs[3]) {
		t.Errorf("values shape %d×%d", len(out.Values), len(out.Values[3]))
	}
}

func TestSaveCheckpointAndValueHead(t *testing.T) {
	const name = "qwen3-bf16-sharded"
	ref := readFixtureRef(t, name)
	m := openFixture(t, name, Options{FullFT: true, ValueHead: true})
	m.ZeroGrad()
	seqs := eightSeqs(ref)
	if err := m.Step(seqs, weightedGrad(seqs, true)); err != nil {
		t.Fatal(err)
	}
	sgd(m, 0.1)
	want, err := m.Forward(seqs, true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.SaveCheckpoint(filepath.Join(dir, "model")); err != nil {
		t.Fatal(err)
	}
	if err := m.ExportValueHead(filepath.Join(dir, "value_head.safetensors")); err != nil {
		t.Fatal(err)
	}
	m2, err := Open(filepath.Join(dir, "model"), kernels.NewCPU(), Options{ValueHead: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.ImportValueHead(filepath.Join(dir, "value_head.safetensors")); err != nil {
		t.Fatal(err)
	}
	got, err := m2.Forward(seqs, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(got.LogProbs, want.LogProbs) + maxDiff(got.Values, want.Values); d != 0 {
		t.Errorf("saved and reloaded model differs by %g", d)
	}
	base := openFixture(t, name, Options{})
	orig, _ := base.LogProbs(seqs, true)
	if maxDiff(orig, want.LogProbs) < 1e-4 {
		t.Error("full fine-tuning step did not change the model")
	}
	if err := base.ImportValueHead(filepath.Join(dir, "value_head.safetensors")); err == nil {
		t.Error("ImportValueHead without a value head must fail")
	}
}
