package rl

import (
	"math"
	"testing"

	"github.com/argrl/argrl/trainer/metrics"
)

func TestRLOOHandNumbers(t *testing.T) {
	// r = 1,2,3,6: Σ = 12; A_i = r_i − (12 − r_i)/3.
	adv, err := Advantages(AdvSpec{Estimator: "rloo"}, []float64{1, 2, 3, 6, 4, 4, 4, 4}, 4, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{1 - 11.0/3, 2 - 10.0/3, 0, 4, 0, 0, 0, 0} {
		if !near(adv[i], w, 1e-15) {
			t.Errorf("A[%d] = %.17g, want %.17g", i, adv[i], w)
		}
	}
	// = G/(G−1)·(r − mean): 4/3·(−2, −1, 0, 3).
	if !near(adv[0], -8.0/3, 1e-15) || !near(adv[3], 4, 1e-15) {
		t.Errorf("rloo is not 4/3 of Dr.GRPO's: %v", adv[:4])
	}
	// The equal group is exactly zero; G = 1 has no leave-one-out baseline.
	for _, a := range adv[4:] {
		if a != 0 || math.Signbit(a) {
			t.Errorf("equal group: %v", adv[4:])
		}
	}
	if _, err := RLOOAdvantages([]float64{1, 2}, 1); err == nil {
		t.Error("rloo with groups of 1 accepted")
	}
}

func TestReinforcePPHandNumbers(t *testing.T) {
	// r = 1, 0, 1 over 2, 1, 1 tokens: the tokens carry 1,1,0,1: μ = 0.75,
	// σ² = (2·0.0625 + 0.5625 + 0.0625)/3 = 0.25; A = (r − 0.75)/sqrt(0.25 + 1e-8).
	adv, err := Advantages(AdvSpec{Estimator: "reinforce++"}, []float64{1, 0, 1}, 3, []int{2, 1, 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(0.25 + 1e-8)
	lit := []float64{0.4999999900000003, -1.4999999700000008, 0.4999999900000003} // Python, the same formula
	for i, r := range []float64{1, 0, 1} {
		if !near(adv[i], (r-0.75)/s, 1e-15) || !near(adv[i], lit[i], 1e-14) {
			t.Errorf("A[%d] = %.17g, want %.17g", i, adv[i], lit[i])
		}
	}
	// The same as whitening the tokens (PPO's Whiten): one number per token.
	toks := [][]float32{{1, 1}, {0}, {1}}
	Whiten(toks)
	for i, row := range toks {
		for _, x := range row {
			if !near(float64(x), adv[i], 1e-6) {
				t.Errorf("rollout %d: whitened token %v, advantage %v", i, x, adv[i])
			}
		}
	}
	// No group baseline: a group of equal rewards still gets a non-zero
	// advantage when the step's other rewards differ; all equal: zero.
	adv, _ = ReinforcePPAdvantages([]float64{1, 1, 0, 1}, []int{1, 1, 1, 1})
	if adv[0] == 0 || adv[0] != adv[1] || adv[2] >= 0 {
		t.Errorf("per-step baseline: %v", adv)
	}
	adv, _ = ReinforcePPAdvantages([]float64{0.1, 0.1, 0.1}, []int{3, 1, 2})
	for _, a := range adv {
		if a != 0 {
			t.Errorf("equal rewards: %v", adv)
		}
	}
	if _, err := ReinforcePPAdvantages([]float64{1}, []int{1, 2}); err == nil {
		t.Error("mismatched lengths accepted")
	}
}

func TestPerPartHandNumbers(t *testing.T) {
	// One group of 4 with rm3's two terms: gate −1,−1,0,0 and args 0,0,1,2.5.
	//   gate: mean −0.5, std sqrt(1/3): z = ±0.5/(sqrt(1/3)+δ) = ±0.8660239037870368
	//   args: mean 0.875, std sqrt(4.1875/3): z = (a − 0.875)/(std+δ)
	//   S = z_gate + z_args, then S/(std(S)+δ) over the step.
	// A second group whose terms are all equal gives S = 0 and A = 0.
	terms := []map[string]float64{
		{"gate": -1, "args": 0}, {"gate": -1, "args": 0}, {"gate": 0, "args": 1}, {"gate": 0, "args": 2.5},
		{"gate": -0.5, "args": 0}, {"gate": -0.5}, {"gate": -0.5, "args": 0}, {"gate": -0.5},
	}
	adv, err := Advantages(AdvSpec{Estimator: "grpo", NormByStd: true, Delta: 1e-6, PerPart: true}, make([]float64, 8), 4, nil, terms)
	if err != nil {
		t.Fatal(err)
	}
	zg := 0.5 / (math.Sqrt(1.0/3) + 1e-6)
	sa := math.Sqrt(4.1875 / 3)
	S := []float64{-zg - 0.875/(sa+1e-6), -zg - 0.875/(sa+1e-6), zg + 0.125/(sa+1e-6), zg + 1.625/(sa+1e-6), 0, 0, 0, 0}
	_, sd := meanStd(S, true)
	lit := []float64{-1.2740820852239887, -1.2740820852239887, 0.7706696011322707, 1.7774945693157065, 0, 0, 0, 0} // Python
	for i := range S {
		if !near(adv[i], S[i]/(sd+1e-6), 1e-14) || !near(adv[i], lit[i], 1e-13) {
			t.Errorf("A[%d] = %.17g, want %.17g", i, adv[i], lit[i])
		}
	}
	for _, a := range adv[4:] {
		if a != 0 {
			t.Errorf("equal terms: %v", adv[4:])
		}
	}
	// Summing first (GRPO on r = gate + args = −1,−1,1,2.5) ranks the same
	// here but spaces them otherwise: the two rules differ.
	grpo, _ := GroupAdvantages([]float64{-1, -1, 1, 2.5}, 4, true, 1e-6)
	if near(grpo[2], adv[2], 1e-3) {
		t.Errorf("per-part %v equals GRPO on the sum %v", adv[:4], grpo)
	}
	// Without the std (Dr.GRPO) the centred terms add up to the centred reward.
	dr, _ := PerPartAdvantages(terms[:4], 4, false, 1e-6)
	for i, w := range []float64{-1 - 0.375, -1 - 0.375, 1 - 0.375, 2.5 - 0.375} {
		if !near(dr[i], w, 1e-15) {
			t.Errorf("Dr.GRPO per part: A[%d] = %v, want %v", i, dr[i], w)
		}
	}
	if _, err := Advantages(AdvSpec{Estimator: "rloo", PerPart: true}, make([]float64, 4), 4, nil, terms[:4]); err == nil {
		t.Error("per_part with rloo accepted")
	}
	if _, err := Advantages(AdvSpec{Estimator: "grpo", PerPart: true}, make([]float64, 4), 4, nil, nil); err == nil {
		t.Error("per_part without terms accepted")
	}
}

// The default estimator is GroupAdvantages itself.
func TestAdvantagesDefaultIsGRPO(t *testing.T) {
	r := []float64{0.3, -1, 2.5, 0.7, 1, 1, 0, 0.25}
	for _, norm := range []bool{true, false} {
		a, err := Advantages(AdvSpec{Estimator: "grpo", NormByStd: norm, Delta: 1e-6}, r, 4, []int{1, 2, 3, 4, 5, 6, 7, 8}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := GroupAdvantages(r, 4, norm, 1e-6)
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Errorf("norm %v: A[%d] %v, GroupAdvantages %v", norm, i, a[i], b[i])
			}
		}
	}
	if _, err := Advantages(AdvSpec{Estimator: "ppo"}, r, 4, nil, nil); err == nil {
		t.Error("unknown estimator accepted")
	}
}

func TestInformativeGroups(t *testing.T) {
	got := InformativeGroups([]float64{1, 1, 1, 0, 2, 0.5, 0.5, 0.5, 0.5, 3, 1, 1, 7, 8}, 3)
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("informative groups %v, want [1 3] (the trailing 2 rewards are no group)", got)
	}
}

func TestOverlongPenalty(t *testing.T) {
	// L = 24, buffer 8: free up to 16 tokens, then (16 − n)/8·penalty.
	for _, c := range []struct {
		n       int
		penalty float64
		want    float64
	}{{0, 1, 0}, {16, 1, 0}, {17, 1, -0.125}, {20, 1, -0.5}, {24, 1, -1}, {20, 0.5, -0.25}, {25, 0.5, -0.5}} {
		if got := OverlongPenalty(c.n, 24, 8, c.penalty); got != c.want {
			t.Errorf("n = %d, penalty %v: %v, want %v", c.n, c.penalty, got, c.want)
		}
	}
	if OverlongPenalty(23, 24, 0, 1) != 0 || OverlongPenalty(24, 24, 0, 1) != -1 {
		t.Error("buffer 0 is not a hard cut at L")
	}
}

// GSPO by hand: one rollout, logπ_old = −1, −2, logπ = −0.8, −2, Â = A on
// both tokens, token-mean (c = ½). x̄ = 0.1, s = e^0.1; unclipped:
// loss = −s·A, ∂/∂logπ_u = −(c/T)·s·ΣÂ = −s·A/2 on both tokens, where the
// token-level ratio would clip the first token (e^0.2 > 1.2) and give −A/2
// on the second only.
func TestSequenceRatioHandNumbers(t *testing.T) {
	s := math.Exp(0.1)
	lp := [][]float32{{0, -0.8, -2}}
	for _, c := range []struct {
		name         string
		a, hi        float64
		loss, grad   float64
		clippedToken int
	}{
		{"A>0, s inside 1+ε", 1, 0.2, -s, -s / 2, 0},
		{"A>0, s above 1+ε: clipped", 1, 0.05, -1.05, 0, 2},
		{"A<0, s above 1+ε: not clipped", -1, 0.05, s, s / 2, 0},
	} {
		r := &Rollout{OldLP: []float32{-1, -2}, Adv: []float32{float32(c.a), float32(c.a)}}
		agg, _ := NewAggregation("token-mean", []int{2}, 0)
		o := Objective{EpsLow: 0.2, EpsHigh: c.hi, SeqLevel: true}
		dlp, _, st, err := o.Grads([]Seq{{Start: 1, R: r}}, agg, lp, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !near(st.Loss, c.loss, 1e-6) || st.Clipped != c.clippedToken || dlp[0][0] != 0 ||
			!near(float64(dlp[0][1]), c.grad, 1e-6) || !near(float64(dlp[0][2]), c.grad, 1e-6) {
			t.Errorf("%s: loss %v grads %v clipped %d, want %v %v %d", c.name, st.Loss, dlp[0], st.Clipped, c.loss, c.grad, c.clippedToken)
		}
	}
	// The token-level ratio on the same numbers.
	r := &Rollout{OldLP: []float32{-1, -2}, Adv: []float32{1, 1}}
	agg, _ := NewAggregation("token-mean", []int{2}, 0)
	dlp, _, st, _ := Objective{EpsLow: 0.2, EpsHigh: 0.2}.Grads([]Seq{{Start: 1, R: r}}, agg, lp, nil, nil)
	if dlp[0][1] != 0 || !near(float64(dlp[0][2]), -0.5, 1e-7) || st.Clipped != 1 {
		t.Errorf("token level: grads %v clipped %d", dlp[0], st.Clipped)
	}
}

// The GSPO objective and the importance-weighted one against finite
// differences, with every term on, one sequence clipped and one not
// (ε = 0.05: s = 0.819 with Â > 0 keeps s·Â; s = 0.939 with Â < 0 clips).
func TestSequenceAndTISGradsFiniteDifference(t *testing.T) {
	rolls, lp, ent, vals := objFixture()
	rolls[0].ISW, rolls[1].ISW = []float32{1.5, 0.7}, []float32{1, 2, 0.25, 1.2}
	seqs := []Seq{{Start: 3, R: rolls[0], Agg: 0}, {Start: 2, R: rolls[1], Agg: 1}}
	for _, seqLevel := range []bool{true, false} {
		o := Objective{EpsLow: 0.05, EpsHigh: 0.05, KLCoef: 0.1, KL: "k3", VfCoef: 0.5, ValueClip: 0.2, SeqLevel: seqLevel}
		for _, mode := range []string{"token-mean", "seq-mean-token-mean"} {
			agg, _ := NewAggregation(mode, []int{2, 4}, 8)
			dlp, _, st, err := o.Grads(seqs, agg, lp, ent, vals)
			if err != nil {
				t.Fatal(err)
			}
			if seqLevel && st.Clipped != 4 {
				t.Errorf("%s: %d tokens clipped, want the second sequence's 4", mode, st.Clipped)
			}
			for b := range lp {
				for i := range lp[b] {
					x0 := lp[b][i]
					const h = 1e-3
					lp[b][i] = x0 + h
					_, _, sp, _ := o.Grads(seqs, agg, lp, ent, vals)
					up := lp[b][i]
					lp[b][i] = x0 - h
					_, _, sm, _ := o.Grads(seqs, agg, lp, ent, vals)
					down := lp[b][i]
					lp[b][i] = x0
					fd := (sp.Loss - sm.Loss) / float64(up-down)
					if math.Abs(fd-float64(dlp[b][i])) > 2e-5 {
						t.Errorf("seq level %v, %s: seq %d pos %d: grad %v, finite difference %v", seqLevel, mode, b, i, dlp[b][i], fd)
					}
				}
			}
		}
	}
	bad := *rolls[0]
	bad.ISW = []float32{1}
	agg, _ := NewAggregation("token-mean", []int{2}, 8)
	if _, _, _, err := (Objective{}).Grads([]Seq{{Start: 3, R: &bad}}, agg, lp[:1], nil, nil); err == nil {
		t.Error("importance weights of the wrong length accepted")
	}
}

// TIS by hand: π_old (training) −1, −2; π_rollout −1.5, −2; cap 1.5. The
// first token's ratio e^0.5 = 1.6487 is cut to 1.5, the second is 1. At
// logπ = logπ_old with Â = 2, token-mean: pg = −2·w = −3, −2; loss −2.5;
// ∂/∂logπ = −½·w·Â = −1.5, −1. Mismatch: k3 = e^0.5 − 1.5 on the first
// token, 0 on the second.
func TestTISHandNumbers(t *testing.T) {
	r := &Rollout{OldLP: []float32{-1.5, -2}, Adv: []float32{2, 2}}
	if err := r.SetTIS([]float32{-1, -2}, 1.5); err != nil {
		t.Fatal(err)
	}
	if r.RolloutLP[0] != -1.5 || r.OldLP[0] != -1 || r.ISW[0] != 1.5 || r.ISW[1] != 1 {
		t.Fatalf("old %v rollout %v weights %v", r.OldLP, r.RolloutLP, r.ISW)
	}
	agg, _ := NewAggregation("token-mean", []int{2}, 0)
	dlp, _, st, err := Objective{EpsLow: 0.2, EpsHigh: 0.2}.Grads([]Seq{{Start: 1, R: r}}, agg, [][]float32{{0, -1, -2}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !near(st.Loss, -2.5, 1e-7) || !near(float64(dlp[0][1]), -1.5, 1e-7) || !near(float64(dlp[0][2]), -1, 1e-7) || st.MaxRatioDev != 0 {
		t.Errorf("loss %v grads %v max|ρ−1| %v", st.Loss, dlp[0], st.MaxRatioDev)
	}
	m := metrics.Metrics{}
	MismatchMetrics(m, []*Rollout{r}, 1.5)
	if !near(m["rollout_train_kl"], (math.Exp(0.5)-1.5)/2, 1e-12) || !near(m["rollout_train_ratio_max"], math.Exp(0.5), 1e-12) || m["tis_clip_frac"] != 0.5 {
		t.Errorf("mismatch metrics %v", m)
	}
	// Equal engines: weights 1, KL 0, ratio 1, exactly.
	same := &Rollout{OldLP: []float32{-0.3, -4}}
	if err := same.SetTIS([]float32{-0.3, -4}, 2); err != nil {
		t.Fatal(err)
	}
	m = metrics.Metrics{}
	MismatchMetrics(m, []*Rollout{same}, 2)
	if same.ISW[0] != 1 || same.ISW[1] != 1 || m["rollout_train_kl"] != 0 || m["rollout_train_ratio_max"] != 1 {
		t.Errorf("no mismatch: weights %v, metrics %v", same.ISW, m)
	}
	if err := same.SetTIS([]float32{-1}, 2); err == nil {
		t.Error("training log-probs of the wrong length accepted")
	}
}
