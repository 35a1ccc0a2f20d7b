package rl

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer/metrics"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestGroupAdvantagesHandNumbers(t *testing.T) {
	// Group 1: r = 1,2,3,6: mean 3, unbiased std sqrt(14/3) = 2.1602468994692870.
	// Group 2: r = 0,1: mean 0.5, std sqrt(0.5).
	if _, err := GroupAdvantages([]float64{1, 2, 3, 6, 0, 1, 4}, 4, true, 1e-6); err == nil {
		t.Fatal("7 rewards split into groups of 4")
	}
	adv, err := GroupAdvantages([]float64{1, 2, 3, 6}, 4, true, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	std := 2.1602468994692870
	want := []float64{-2 / (std + 1e-6), -1 / (std + 1e-6), 0, 3 / (std + 1e-6)}
	// The same numbers written out (Python: (x-3)/(statistics.stdev(r)+1e-6)).
	lit := []float64{-0.9258196712013211, -0.46290983560066057, 0.0, 1.3887295068019816}
	for i := range want {
		if !near(adv[i], want[i], 1e-14) || !near(adv[i], lit[i], 1e-14) {
			t.Errorf("A[%d] = %.17g, want %.17g", i, adv[i], lit[i])
		}
	}
	// δ matters: with a tiny spread, A is bounded by spread/δ.
	adv, _ = GroupAdvantages([]float64{0, 1e-7}, 2, true, 1e-6)
	s := 1e-7 / math.Sqrt2 // unbiased std of {0, 1e-7}
	if !near(adv[1], 0.5e-7/(s+1e-6), 1e-12) || adv[1] > 0.1 {
		t.Errorf("tiny spread: A = %v, want %v", adv, 0.5e-7/(s+1e-6))
	}
	// Two groups, independent statistics.
	adv, _ = GroupAdvantages([]float64{0, 1, 5, 5}, 2, true, 1e-6)
	if !near(adv[0], -0.7071057811879616, 1e-14) || !near(adv[1], 0.7071057811879616, 1e-14) || adv[2] != 0 || adv[3] != 0 {
		t.Errorf("two groups: %v", adv)
	}
}

func TestGroupAdvantagesDrGRPO(t *testing.T) {
	adv, err := GroupAdvantages([]float64{1, 2, 3, 6}, 4, false, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float64{-2, -1, 0, 3} {
		if adv[i] != w {
			t.Errorf("Dr.GRPO A[%d] = %v, want %v", i, adv[i], w)
		}
	}
}

func TestGroupAdvantagesOneSample(t *testing.T) {
	adv, err := GroupAdvantages([]float64{2.5, -1}, 1, true, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if !near(adv[0], 2.4999975000025003, 1e-15) || !near(adv[1], -1/(1+1e-6), 1e-15) {
		t.Errorf("one-sample groups: %v (want r/(1+δ): mean 0, std 1 as verl)", adv)
	}
	adv, _ = GroupAdvantages([]float64{2.5}, 1, false, 1e-6)
	if adv[0] != 2.5 {
		t.Errorf("one-sample Dr.GRPO: %v", adv)
	}
}

func TestGroupAdvantagesAllEqual(t *testing.T) {
	// 0.1 three times: a float mean would be 0.10000000000000002; the
	// advantages must still be exactly zero.
	for _, norm := range []bool{true, false} {
		adv, err := GroupAdvantages([]float64{0.1, 0.1, 0.1, -1, -1, -1}, 3, norm, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range adv {
			if a != 0 || math.Signbit(a) {
				t.Errorf("norm_by_std=%v: A[%d] = %v, want 0", norm, i, a)
			}
		}
	}
	if f := ZeroStdFraction([]float64{0.1, 0.1, 0.1, -1, 2, -1}, 3); f != 0.5 {
		t.Errorf("zero-std fraction %v, want 0.5", f)
	}
	if _, err := GroupAdvantages([]float64{1, math.NaN()}, 2, true, 1e-6); err == nil {
		t.Error("a NaN reward gave no error")
	}
}

func TestGAEHandComputation(t *testing.T) {
	// V = 0.5, 1, 2; R = 3; γ = 0.9, λ = 0.8:
	//   t=2: δ = 3 − 2 = 1                 A = 1             ret = 3
	//   t=1: δ = 0.9·2 − 1 = 0.8           A = 0.8 + 0.72·1 = 1.52      ret = 2.52
	//   t=0: δ = 0.9·1 − 0.5 = 0.4         A = 0.4 + 0.72·1.52 = 1.4944 ret = 1.9944
	adv, ret := GAE([]float32{0.5, 1, 2}, 3, 0.9, 0.8)
	wantA, wantR := []float64{1.4944, 1.52, 1}, []float64{1.9944, 2.52, 3}
	for i := range wantA {
		if !near(float64(adv[i]), wantA[i], 1e-6) || !near(float64(ret[i]), wantR[i], 1e-6) {
			t.Errorf("t=%d: A %v ret %v, want %v %v", i, adv[i], ret[i], wantA[i], wantR[i])
		}
	}
	// γ = λ = 1: A_t = R − V_t (Monte Carlo), ret = R.
	adv, ret = GAE([]float32{0.5, 1, 2}, 3, 1, 1)
	for i, v := range []float64{0.5, 1, 2} {
		if !near(float64(adv[i]), 3-v, 1e-6) || !near(float64(ret[i]), 3, 1e-6) {
			t.Errorf("γ=λ=1, t=%d: A %v ret %v", i, adv[i], ret[i])
		}
	}
	// λ = 0: one-step TD errors.
	adv, _ = GAE([]float32{0.5, 1, 2}, 3, 0.9, 0)
	for i, w := range []float64{0.4, 0.8, 1} {
		if !near(float64(adv[i]), w, 1e-6) {
			t.Errorf("λ=0, t=%d: A %v, want %v", i, adv[i], w)
		}
	}
}

func TestWhiten(t *testing.T) {
	xs := [][]float32{{1, 2}, {3}}
	Whiten(xs)
	s := 1 / math.Sqrt(1+1e-8)
	if !near(float64(xs[0][0]), -s, 1e-7) || xs[0][1] != 0 || !near(float64(xs[1][0]), s, 1e-7) {
		t.Errorf("whitened %v", xs)
	}
}

func TestSurrogateSignAndClipping(t *testing.T) {
	ln := math.Log
	cases := []struct {
		name             string
		rho, adv, lo, hi float64
		loss, grad       float64
		clipped          bool
	}{
		{"on-policy, A>0: push logπ up", 1, 2, 0.2, 0.2, -2, -2, false},
		{"on-policy, A<0: push logπ down", 1, -2, 0.2, 0.2, 2, 2, false},
		{"A>0, ρ above 1+ε: clipped, no gradient", 1.5, 2, 0.2, 0.2, -2.4, 0, true},
		{"A>0, ρ below 1−ε: not clipped (min keeps ρÂ)", 0.5, 2, 0.2, 0.2, -1, -1, false},
		{"A<0, ρ below 1−ε: clipped, no gradient", 0.5, -2, 0.2, 0.2, 1.6, 0, true},
		{"A<0, ρ above 1+ε: not clipped", 1.5, -2, 0.2, 0.2, 3, 3, false},
		{"asymmetric: ρ=1.25 < 1+0.28", 1.25, 1, 0.2, 0.28, -1.25, -1.25, false},
		{"asymmetric: ρ=1.3 > 1+0.28", 1.3, 1, 0.2, 0.28, -1.28, 0, true},
		{"asymmetric low: ρ=0.85 > 1−0.1, A<0", 0.85, -1, 0.1, 0.28, 0.9, 0, true},
		{"A=0: nothing", 1.7, 0, 0.2, 0.2, 0, 0, false},
	}
	for _, c := range cases {
		old := -1.3
		loss, grad, clipped := Surrogate(old+ln(c.rho), old, c.adv, c.lo, c.hi)
		if !near(loss, c.loss, 1e-12) || !near(grad, c.grad, 1e-12) || clipped != c.clipped {
			t.Errorf("%s: loss %v grad %v clipped %v, want %v %v %v", c.name, loss, grad, clipped, c.loss, c.grad, c.clipped)
		}
	}
	// The log-ratio is clamped to ±20 before exp: no overflow, no gradient.
	loss, grad, _ := Surrogate(30, 0, -1, 0.2, 0.2)
	if !near(loss, math.Exp(20), 1e-12) || grad != 0 {
		t.Errorf("clamped log-ratio: loss %v grad %v", loss, grad)
	}
	// Finite differences away from the kinks.
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		old := -3 * r.Float64()
		x := old + 0.6*(r.Float64()-0.5)
		a := 4 * (r.Float64() - 0.5)
		_, g, _ := Surrogate(x, old, a, 0.2, 0.28)
		const h = 1e-6
		lp, _, _ := Surrogate(x+h, old, a, 0.2, 0.28)
		lm, _, _ := Surrogate(x-h, old, a, 0.2, 0.28)
		rho := math.Exp(x - old)
		if math.Abs(rho-0.8) < 1e-4 || math.Abs(rho-1.28) < 1e-4 {
			continue
		}
		if fd := (lp - lm) / (2 * h); math.Abs(fd-g) > 1e-6 {
			t.Fatalf("x=%v old=%v A=%v: grad %v, finite difference %v", x, old, a, g, fd)
		}
	}
}

func TestKLEstimators(t *testing.T) {
	// logπ = −1, logπ_ref = −1.5.
	for _, c := range []struct {
		est     string
		k, grad float64
	}{
		{"k1", 0.5, 1},
		{"k2", 0.125, 0.5},
		{"k3", 0.10653065971263342, 0.3934693402873666}, // e^{−0.5} + 0.5 − 1; 1 − e^{−0.5}
	} {
		k, g := KLTerm(c.est, -1, -1.5)
		if !near(k, c.k, 1e-14) || !near(g, c.grad, 1e-14) {
			t.Errorf("%s: %v %v, want %v %v", c.est, k, g, c.k, c.grad)
		}
	}
	// Equal policies: every estimator is 0, k3's gradient too.
	for _, est := range []string{"k1", "k2", "k3"} {
		if k, _ := KLTerm(est, -2, -2); k != 0 {
			t.Errorf("%s at π = π_ref: %v", est, k)
		}
	}
	// k3 is clamped to 10 (d = 9: e⁹ − 10 ≈ 8093) with zero gradient.
	if k, g := KLTerm("k3", -10, -1); k != 10 || g != 0 {
		t.Errorf("k3 clamp: %v %v", k, g)
	}
	if k, g := KLTerm("k3", -100, 0); k != 10 || g != 0 || math.IsInf(k, 0) {
		t.Errorf("k3 far clamp: %v %v", k, g)
	}
	// Finite differences.
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		lp, ref := -4*r.Float64(), -4*r.Float64()
		for _, est := range []string{"k1", "k2", "k3"} {
			const h = 1e-6
			_, g := KLTerm(est, lp, ref)
			kp, _ := KLTerm(est, lp+h, ref)
			km, _ := KLTerm(est, lp-h, ref)
			if k, _ := KLTerm(est, lp, ref); k >= 9.99 {
				continue
			}
			if fd := (kp - km) / (2 * h); math.Abs(fd-g) > 1e-6 {
				t.Fatalf("%s lp=%v ref=%v: grad %v, fd %v", est, lp, ref, g, fd)
			}
		}
	}
}

func TestValueLossClipping(t *testing.T) {
	for _, c := range []struct {
		name              string
		v, old, ret, clip float64
		loss, grad        float64
		clipped           bool
	}{
		// clip(1.5, 0.8, 1.2) = 1.2: ½·0.8² = 0.32 > ½·0.5² → clipped, no gradient.
		{"moved away past the clip", 1.5, 1, 2, 0.2, 0.32, 0, true},
		// inside the range: both squares equal.
		{"inside the range", 0.9, 1, 2, 0.2, 0.605, -1.1, false},
		// moved toward the target past the clip: the unclipped square is larger.
		{"overshoot toward the target", 1.5, 1, 0, 0.2, 1.125, 1.5, false},
		{"clip off", 1.5, 1, 2, 0, 0.125, -0.5, false},
	} {
		l, g, cl := ValueLoss(c.v, c.old, c.ret, c.clip)
		if !near(l, c.loss, 1e-12) || !near(g, c.grad, 1e-12) || cl != c.clipped {
			t.Errorf("%s: %v %v %v, want %v %v %v", c.name, l, g, cl, c.loss, c.grad, c.clipped)
		}
	}
}

func TestAggregationWeights(t *testing.T) {
	lens := []int{2, 4}
	for _, c := range []struct {
		mode   string
		c0, c1 float64
	}{
		{"token-mean", 1.0 / 6, 1.0 / 6},
		{"seq-mean-token-mean", 1.0 / 4, 1.0 / 8},
		{"seq-mean-token-sum-norm", 1.0 / 16, 1.0 / 16}, // N = 2, L = 8
	} {
		a, err := NewAggregation(c.mode, lens, 8)
		if err != nil {
			t.Fatal(err)
		}
		if !near(a.Weight(0), c.c0, 1e-15) || !near(a.Weight(1), c.c1, 1e-15) {
			t.Errorf("%s: %v %v", c.mode, a.Weight(0), a.Weight(1))
		}
	}
	if _, err := NewAggregation("mean", lens, 8); err == nil {
		t.Error("unknown loss_agg accepted")
	}
}

// objFixture is two rollouts (prompts of 3 and 2 tokens, responses of 2
// and 4) with every term active.
func objFixture() ([]*Rollout, [][]float32, [][]float32, [][]float32) {
	rolls := []*Rollout{
		{OldLP: []float32{-1, -2}, RefLP: []float32{-1.2, -1.5}, Adv: []float32{0.7, 2.1},
			OldV: []float32{0.1, 0.3}, Ret: []float32{1, 1}},
		{OldLP: []float32{-0.5, -0.4, -3, -1}, RefLP: []float32{-0.6, -0.4, -2, -1.1}, Adv: []float32{-1, -1, -3, -1},
			OldV: []float32{0, 0.2, 0.4, 0.9}, Ret: []float32{-1, -1, -1, -1}},
	}
	// Current log-probs (full positions; the response starts at 3 and 2).
	lp := [][]float32{{0, -0.3, -0.2, -0.9, -2.5}, {0, -0.1, -0.45, -0.3, -3.4, -1}}
	ent := [][]float32{{0, 1, 1, 2, 3}, {0, 1, 0.5, 0.5, 0.5, 0.5}}
	vals := [][]float32{{0, 0.2, 0.15, 0.6, 9}, {0, -0.1, 0.3, 0.35, 0.85, 9}}
	return rolls, lp, ent, vals
}

func TestObjectiveGradsFiniteDifference(t *testing.T) {
	rolls, lp, ent, vals := objFixture()
	o := Objective{EpsLow: 0.2, EpsHigh: 0.28, KLCoef: 0.1, KL: "k3", VfCoef: 0.5, ValueClip: 0.2}
	seqs := []Seq{{Start: 3, R: rolls[0], Agg: 0}, {Start: 2, R: rolls[1], Agg: 1}}
	for _, mode := range []string{"token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"} {
		agg, _ := NewAggregation(mode, []int{2, 4}, 8)
		dlp, dv, st, err := o.Grads(seqs, agg, lp, ent, vals)
		if err != nil {
			t.Fatal(err)
		}
		loss := func() float64 {
			_, _, s, _ := o.Grads(seqs, agg, lp, ent, vals)
			return s.Loss
		}
		for b := range lp {
			for i := range lp[b] {
				for _, which := range []struct {
					x [][]float32
					g [][]float32
				}{{lp, dlp}, {vals, dv}} {
					x0 := which.x[b][i]
					const h = 1e-3
					which.x[b][i] = x0 + h
					lpp, up := loss(), which.x[b][i]
					which.x[b][i] = x0 - h
					lm, down := loss(), which.x[b][i]
					which.x[b][i] = x0
					fd := (lpp - lm) / float64(up-down) // the float32 step actually taken
					if math.Abs(fd-float64(which.g[b][i])) > 2e-5 {
						t.Errorf("%s: seq %d pos %d: grad %v, finite difference %v", mode, b, i, which.g[b][i], fd)
					}
				}
			}
		}
		if st.Tokens != 6 || st.Clipped == 0 {
			t.Errorf("%s: stats %+v (want 6 tokens, some clipped)", mode, st)
		}
		if st.EntSum != 2+3+4*0.5 { // entropy of the response positions only: 3,4 and 2…5
			t.Errorf("entropy sum %v", st.EntSum)
		}
	}
}

// Accumulating micro-batches equals one piece: the aggregation weights
// use mini-batch totals.
func TestObjectiveMicroBatchesAddUp(t *testing.T) {
	rolls, lp, ent, vals := objFixture()
	o := Objective{EpsLow: 0.2, EpsHigh: 0.2, KLCoef: 0.001, KL: "k3", VfCoef: 0.5, ValueClip: 0.2}
	for _, mode := range []string{"token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"} {
		agg, _ := NewAggregation(mode, []int{2, 4}, 16)
		seqs := []Seq{{Start: 3, R: rolls[0], Agg: 0}, {Start: 2, R: rolls[1], Agg: 1}}
		dAll, vAll, sAll, err := o.Grads(seqs, agg, lp, ent, vals)
		if err != nil {
			t.Fatal(err)
		}
		var sum LossStats
		for b := range seqs {
			d, v, s, err := o.Grads(seqs[b:b+1], agg, lp[b:b+1], ent[b:b+1], vals[b:b+1])
			if err != nil {
				t.Fatal(err)
			}
			sum.Add(s)
			for i := range d[0] {
				if d[0][i] != dAll[b][i] || v[0][i] != vAll[b][i] {
					t.Fatalf("%s: seq %d pos %d differs alone vs in the batch", mode, b, i)
				}
			}
		}
		if !near(sum.Loss, sAll.Loss, 1e-12) || sum.Tokens != sAll.Tokens || sum.Clipped != sAll.Clipped {
			t.Errorf("%s: 2×1 %+v vs 1×2 %+v", mode, sum, sAll)
		}
	}
}

// On-policy (logπ = logπ_old): ρ = 1 for every token, nothing is clipped,
// and the gradient is −c·Â per token (plus the KL term).
func TestObjectiveOnPolicy(t *testing.T) {
	rolls, _, _, _ := objFixture()
	lp := [][]float32{{0, -0.3, -0.2, -1, -2}, {0, -0.1, -0.5, -0.4, -3, -1}}
	o := Objective{EpsLow: 0.2, EpsHigh: 0.2, KL: "k1"}
	agg, _ := NewAggregation("token-mean", []int{2, 4}, 0)
	dlp, dv, st, err := o.Grads([]Seq{{3, rolls[0], 0}, {2, rolls[1], 1}}, agg, lp, nil, nil)
	if err != nil || dv != nil {
		t.Fatal(err, dv)
	}
	if st.MaxRatioDev != 0 || st.Clipped != 0 {
		t.Errorf("on-policy: max |ρ−1| %v, clipped %d", st.MaxRatioDev, st.Clipped)
	}
	for k, a := range rolls[1].Adv {
		if !near(float64(dlp[1][2+k]), -float64(a)/6, 1e-7) {
			t.Errorf("token %d: dlp %v, want %v", k, dlp[1][2+k], -a/6)
		}
	}
	if dlp[0][0] != 0 || dlp[0][1] != 0 || dlp[0][2] != 0 {
		t.Errorf("prompt positions got gradient: %v", dlp[0])
	}
}

func TestRewardMetrics(t *testing.T) {
	res := []*reward.Result{
		{Reward: 1, Parts: map[string]float64{"alc_cont": 2}, Metrics: reward.Levels{TID: true, TSA: true}},
		{Reward: 1, Parts: map[string]float64{}, Metrics: reward.Levels{TID: true}},
		{Reward: 0, Parts: map[string]float64{"alc_cont": 1}},
		{Reward: 2, Parts: map[string]float64{}, Metrics: reward.Levels{TID: true, TSA: true, ACA: true, ALC: true, FCM: true}},
	}
	m := metrics.Metrics{}
	RewardMetrics(m, res, 2)
	want := metrics.Metrics{"reward_mean": 1, "reward_std": math.Sqrt(2.0 / 3), "reward_min": 0, "reward_max": 2,
		"reward_alc_cont": 1.5, "zero_std_frac": 0.5,
		"rate_tid": 0.75, "rate_tsa": 0.5, "rate_aca": 0.25, "rate_alc": 0.25, "rate_fcm": 0.25}
	for k, v := range want {
		if !near(m[k], v, 1e-12) {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	LengthMetrics(m, []int{4, 8, 0}, []bool{false, true, false})
	if m["resp_len"] != 4 || m["resp_len_max"] != 8 || !near(m["truncated_frac"], 1.0/3, 1e-15) {
		t.Errorf("lengths %v", m)
	}
}

// The objective against PyTorch autograd (testdata/rl/gen_objective.py,
// written from docs/contracts.md §5 and verl's formulas): loss and gradients with
// respect to every log-prob and value, for each loss_agg.
func TestObjectiveMatchesTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/objective.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		Loss    float64
		DLP, DV [][]float64
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	rolls, lp, ent, vals := objFixture()
	o := Objective{EpsLow: 0.2, EpsHigh: 0.28, KLCoef: 0.1, KL: "k3", VfCoef: 0.5, ValueClip: 0.2}
	seqs := []Seq{{Start: 3, R: rolls[0], Agg: 0}, {Start: 2, R: rolls[1], Agg: 1}}
	if len(want) != 3 {
		t.Fatalf("%d modes in the fixture", len(want))
	}
	for mode, w := range want {
		agg, err := NewAggregation(mode, []int{2, 4}, 8)
		if err != nil {
			t.Fatal(err)
		}
		dlp, dv, st, err := o.Grads(seqs, agg, lp, ent, vals)
		if err != nil {
			t.Fatal(err)
		}
		if !near(st.Loss, w.Loss, 1e-6) {
			t.Errorf("%s: loss %v, torch %v", mode, st.Loss, w.Loss)
		}
		for b := range dlp {
			for i := range dlp[b] {
				if math.Abs(float64(dlp[b][i])-w.DLP[b][i]) > 1e-6 || math.Abs(float64(dv[b][i])-w.DV[b][i]) > 1e-6 {
					t.Errorf("%s: seq %d pos %d: dlp %v dv %v, torch %v %v", mode, b, i, dlp[b][i], dv[b][i], w.DLP[b][i], w.DV[b][i])
				}
			}
		}
	}
}
