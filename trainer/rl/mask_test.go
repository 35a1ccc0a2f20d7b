package rl

import (
	"slices"
	"testing"

	"github.com/argrl/argrl/trainer/metrics"
)

// maskFixture is objFixture with rollout 1's tokens 1 and 2 (positions 3
// and 4 of its sequence) added by the environment, and importance weights.
func maskFixture() ([]*Rollout, [][]float32, [][]float32, [][]float32) {
	rolls, lp, ent, vals := objFixture()
	rolls[1].Mask = []bool{true, false, false, true}
	rolls[0].ISW, rolls[1].ISW = []float32{1, 0.9}, []float32{1.2, 1, 1, 0.8}
	return rolls, lp, ent, vals
}

// The objective on a multi-turn rollout: the tokens the environment added
// have no gradient, are not counted, and nothing at their positions (old,
// reference or current log-probs, advantages, values, returns, weights)
// changes any result, with token and sequence ratios, with values.
func TestObjectiveMaskExcludesEnvTokens(t *testing.T) {
	for _, seqLevel := range []bool{false, true} {
		o := Objective{EpsLow: 0.2, EpsHigh: 0.28, KLCoef: 0.1, KL: "k3", VfCoef: 0.5, ValueClip: 0.2, SeqLevel: seqLevel}
		run := func(rolls []*Rollout, lp, ent, vals [][]float32) ([][]float32, [][]float32, LossStats) {
			agg, err := NewAggregation("seq-mean-token-mean", []int{rolls[0].Tokens(), rolls[1].Tokens()}, 8)
			if err != nil {
				t.Fatal(err)
			}
			seqs := []Seq{{Start: 3, R: rolls[0], Agg: 0}, {Start: 2, R: rolls[1], Agg: 1}}
			dlp, dv, st, err := o.Grads(seqs, agg, lp, ent, vals)
			if err != nil {
				t.Fatal(err)
			}
			return dlp, dv, st
		}
		rolls, lp, ent, vals := maskFixture()
		dlp, dv, st := run(rolls, lp, ent, vals)
		if st.Tokens != 4 || rolls[1].Tokens() != 2 || rolls[1].Len() != 4 {
			t.Errorf("seq %v: %d tokens counted, want the 4 sampled", seqLevel, st.Tokens)
		}
		for _, k := range []int{1, 2} {
			if p := 2 + k; dlp[1][p] != 0 || dv[1][p-1] != 0 {
				t.Errorf("seq %v: environment token %d: ∂/∂logπ %v, ∂/∂V %v, want 0", seqLevel, k, dlp[1][p], dv[1][p-1])
			}
		}
		if dlp[1][2] == 0 || dlp[1][5] == 0 || dv[1][1] == 0 {
			t.Errorf("seq %v: a sampled token has no gradient: %v %v", seqLevel, dlp[1], dv[1])
		}
		// Anything at the environment's positions is ignored.
		for _, k := range []int{1, 2} {
			r := rolls[1]
			r.OldLP[k], r.RefLP[k], r.Adv[k], r.OldV[k], r.Ret[k], r.ISW[k] = -9, 3, 50, -7, 11, 4
			lp[1][2+k], ent[1][2+k], vals[1][1+k] = -0.01, 40, 6
		}
		dlp2, dv2, st2 := run(rolls, lp, ent, vals)
		for b := range dlp {
			if !slices.Equal(dlp[b], dlp2[b]) || !slices.Equal(dv[b], dv2[b]) {
				t.Errorf("seq %v: sequence %d: the environment's positions changed the gradients:\n%v\n%v", seqLevel, b, dlp[b], dlp2[b])
			}
		}
		if st != st2 {
			t.Errorf("seq %v: the environment's positions changed the stats: %+v vs %+v", seqLevel, st, st2)
		}
		// A sampled position does change them (the comparison above can fail).
		rolls[1].Adv[3] += 1
		if dlp3, _, _ := run(rolls, lp, ent, vals); slices.Equal(dlp3[1], dlp[1]) {
			t.Errorf("seq %v: changing a sampled token's advantage changed nothing", seqLevel)
		}
	}
}

// The masked objective is the objective of the sampled tokens alone: the
// same loss as the rollout with the environment's tokens cut out (no
// values: their positions would move), and a mask of all true is no mask.
func TestObjectiveMaskIsSampledTokens(t *testing.T) {
	for _, seqLevel := range []bool{false, true} {
		o := Objective{EpsLow: 0.2, EpsHigh: 0.28, KLCoef: 0.1, KL: "k2", SeqLevel: seqLevel}
		rolls, lp, ent, _ := maskFixture()
		cut := &Rollout{OldLP: Pack(rolls[1].OldLP, rolls[1].Mask), RefLP: Pack(rolls[1].RefLP, rolls[1].Mask),
			Adv: Pack(rolls[1].Adv, rolls[1].Mask), ISW: Pack(rolls[1].ISW, rolls[1].Mask)}
		cutLP := append(slices.Clone(lp[1][:2]), Pack(lp[1][2:], rolls[1].Mask)...)
		cutEnt := append(slices.Clone(ent[1][:2]), Pack(ent[1][2:], rolls[1].Mask)...)
		agg, _ := NewAggregation("token-mean", []int{2, 2}, 8)
		dlp, _, st, err := o.Grads([]Seq{{Start: 2, R: rolls[1], Agg: 1}}, agg, lp[1:], ent[1:], nil)
		if err != nil {
			t.Fatal(err)
		}
		dcut, _, sc, err := o.Grads([]Seq{{Start: 2, R: cut, Agg: 1}}, agg, [][]float32{cutLP}, [][]float32{cutEnt}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !near(st.Loss, sc.Loss, 1e-15) || !near(st.KLSum, sc.KLSum, 1e-15) || st.EntSum != sc.EntSum || st.Tokens != sc.Tokens {
			t.Errorf("seq %v: masked %+v, cut %+v", seqLevel, st, sc)
		}
		if got := append(slices.Clone(dlp[0][:2]), Pack(dlp[0][2:], rolls[1].Mask)...); !slices.Equal(got, dcut[0]) {
			t.Errorf("seq %v: masked gradients %v, cut %v", seqLevel, dlp[0], dcut[0])
		}
		// All true is no mask, bit for bit.
		plain, lp2, ent2, vals2 := objFixture()
		all, _, _, _ := objFixture()
		for _, r := range all {
			r.Mask = make([]bool, r.Len())
			for k := range r.Mask {
				r.Mask[k] = true
			}
		}
		agg2, _ := NewAggregation("token-mean", []int{2, 4}, 8)
		o.VfCoef = 0.5
		seqs := func(rs []*Rollout) []Seq { return []Seq{{Start: 3, R: rs[0], Agg: 0}, {Start: 2, R: rs[1], Agg: 1}} }
		a, av, sa, _ := o.Grads(seqs(plain), agg2, lp2, ent2, vals2)
		b, bv, sb, _ := o.Grads(seqs(all), agg2, lp2, ent2, vals2)
		for i := range a {
			if !slices.Equal(a[i], b[i]) || !slices.Equal(av[i], bv[i]) || sa != sb {
				t.Errorf("seq %v: a mask of all true differs from none", seqLevel)
			}
		}
	}
	bad := &Rollout{OldLP: []float32{-1, -1}, Adv: []float32{1, 1}, Mask: []bool{true}}
	agg, _ := NewAggregation("token-mean", []int{1}, 8)
	if _, _, _, err := (Objective{}).Grads([]Seq{{Start: 1, R: bad}}, agg, [][]float32{{0, -1, -1}}, nil, nil); err == nil {
		t.Error("a mask shorter than the rollout was accepted")
	}
}

func TestPackUnpack(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5}
	mask := []bool{true, false, true, false, true}
	p := Pack(x, mask)
	if !slices.Equal(p, []float32{1, 3, 5}) || SampledCount(mask, 5) != 3 || SampledCount(nil, 5) != 5 {
		t.Fatalf("Pack %v", p)
	}
	if u := Unpack(p, mask); !slices.Equal(u, []float32{1, 0, 3, 0, 5}) {
		t.Errorf("Unpack %v", u)
	}
	if &Pack(x, nil)[0] != &x[0] || &Unpack(x, nil)[0] != &x[0] {
		t.Error("nil mask: Pack and Unpack must return their input")
	}
}

// tis.cap and the logged advantages ignore the environment's tokens: they
// have no sampler log-prob (0), which would read as a large mismatch.
func TestMaskTISAndMetrics(t *testing.T) {
	r := &Rollout{OldLP: []float32{-1, 0, 0, -2}, Adv: []float32{1, 0, 0, 3}, Mask: []bool{true, false, false, true}}
	if err := r.SetTIS([]float32{-1, -6, -4, -2}, 2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.ISW, []float32{1, 1, 1, 1}) {
		t.Errorf("ISW %v, want 1 everywhere (no mismatch on the sampled tokens)", r.ISW)
	}
	m := metrics.Metrics{}
	MismatchMetrics(m, []*Rollout{r}, 2)
	if m["rollout_train_kl"] != 0 || m["rollout_train_ratio_max"] != 1 || m["tis_clip_frac"] != 0 {
		t.Errorf("mismatch over the environment's tokens: %v", m)
	}
	AdvantageMetrics(m, []*Rollout{r})
	if m["adv_mean"] != 2 || m["adv_abs_mean"] != 2 {
		t.Errorf("advantage metrics %v, want the mean over the 2 sampled tokens", m)
	}
}
