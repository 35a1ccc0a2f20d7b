package rollout

import (
	"math"
	"slices"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// handLogits: probabilities 0.30 0.20 0.15 0.12 0.10 0.08 0.03 0.02 placed
// on shuffled ids, so rank order is not id order.
var (
	handProbs = []float64{0.30, 0.20, 0.15, 0.12, 0.10, 0.08, 0.03, 0.02}
	handIDs   = []int{5, 2, 7, 0, 3, 6, 1, 4} // handIDs[rank] = token id
)

// expected returns the kept token ids (rank order) and their renormalized
// probabilities under temperature T, top-k then top-p on the
// renormalized top-k mass (the Hugging Face / vLLM order), computed in
// float64 from handProbs.
func expected(T float64, topK int, topP float64) ([]int, []float64) {
	q := make([]float64, len(handProbs))
	var z float64
	for r, p := range handProbs {
		q[r] = math.Pow(p, 1/T) // softmax(log p / T) ∝ p^(1/T)
		z += q[r]
	}
	for r := range q {
		q[r] /= z
	}
	K := len(q)
	if topK > 0 {
		K = min(K, topK)
	}
	if topP > 0 && topP < 1 {
		var w float64
		for r := range K {
			w += q[r]
		}
		c := 0.0
		for r := range K {
			if c += q[r]; c >= topP*w {
				K = r + 1
				break
			}
		}
	}
	var tot float64
	for r := range K {
		tot += q[r]
	}
	ids := make([]int, K)
	ps := make([]float64, K)
	for r := range K {
		ids[r], ps[r] = handIDs[r], q[r]/tot
	}
	return ids, ps
}

// chi2Crit001 are the chi-square critical values at α = 0.001 for 1..7
// degrees of freedom.
var chi2Crit001 = []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32}

// TestTopPTopK draws N = 20000 tokens from the hand-made logits through
// Backend.Sample with this package's uniforms (Uniform(seed, id, 0, step)
// for step < N) and checks, per setting:
//   - the set of tokens drawn is exactly the expected kept set;
//   - the empirical frequencies pass a chi-square goodness-of-fit test at
//     α = 0.001 against the renormalized kept probabilities, and each is
//     within 0.015 of its probability (≈ 4.2 standard deviations at p = 0.5);
//   - greedy always returns the argmax.
//
// The uniforms are a fixed function of the seed, so the test is
// deterministic; it checks the hash stream as much as the kernel.
func TestTopPTopK(t *testing.T) {
	const N = 20000
	V := len(handProbs)
	row := make([]float32, V)
	for r, p := range handProbs {
		row[handIDs[r]] = float32(math.Log(p)) + 1.5 // a shift changes nothing
	}
	be := kernels.NewCPU()
	logits := be.Alloc(kernels.F32, N*V)
	host := make([]float32, N*V)
	for n := range N {
		copy(host[n*V:], row)
	}
	be.CopyIn(logits, host)
	u := make([]float32, N)
	for n := range u {
		u[n] = Uniform(99, "hand-made", 0, n)
	}
	ids := make([]int32, N)
	cases := []struct {
		name string
		T    float64
		k    int
		p    float64
		kept int // size of the kept set, stated by hand
	}{
		{"T=1", 1, 0, 0, 8},
		{"top-k 3", 1, 3, 0, 3},
		{"top-p 0.6", 1, 0, 0.6, 3},              // .30+.20 = .50 < .6 ≤ .65
		{"top-p 0.7", 1, 0, 0.7, 4},              // .65 < .7 ≤ .77
		{"T=0.5 top-p 0.9", 0.5, 0, 0.9, 4},      // p² renormalized: .4875 .7042 .8261 .9041
		{"top-k 5 then top-p 0.8", 1, 5, 0.8, 4}, // within top-5 (mass .87): .65/.87 = .747 < .8 ≤ .77/.87 = .885
		{"T=0.6 top-p 0.95", 0.6, 0, 0.95, 6},    // p^(5/3) renormalized: … .8719 .9402 .9874
		{"top-k 1", 1, 1, 0, 1},
	}
	for _, c := range cases {
		sp := kernels.SampleParams{Temperature: float32(c.T), TopK: c.k, TopP: float32(c.p)}
		be.Sample(ids, logits, u, N, V, sp)
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		keep, probs := expected(c.T, c.k, c.p)
		if len(keep) != c.kept {
			t.Fatalf("%s: the oracle keeps %d tokens, the hand count is %d", c.name, len(keep), c.kept)
		}
		count := make([]int, V)
		for _, id := range ids {
			count[id]++
		}
		var drawn []int
		for id, n := range count {
			if n > 0 {
				drawn = append(drawn, id)
			}
		}
		want := slices.Clone(keep)
		slices.Sort(want)
		if !slices.Equal(drawn, want) {
			t.Errorf("%s: drew tokens %v, want exactly %v", c.name, drawn, want)
			continue
		}
		var chi2, maxAbs float64
		for r, id := range keep {
			e := probs[r] * N
			chi2 += (float64(count[id]) - e) * (float64(count[id]) - e) / e
			maxAbs = math.Max(maxAbs, math.Abs(float64(count[id])/N-probs[r]))
		}
		df := len(keep) - 1
		t.Logf("%-24s kept %v  chi2 %.2f (df %d)  max |freq−p| %.4f", c.name, keep, chi2, df, maxAbs)
		if df > 0 && chi2 > chi2Crit001[df] {
			t.Errorf("%s: chi2 %.2f > %.2f (α = 0.001, df %d)", c.name, chi2, chi2Crit001[df], df)
		}
		if maxAbs > 0.015 {
			t.Errorf("%s: max |freq − p| = %.4f > 0.015", c.name, maxAbs)
		}
	}
	be.Sample(ids, logits, u, N, V, kernels.SampleParams{Temperature: 0, TopP: 0.5, TopK: 3})
	for n, id := range ids {
		if id != int32(handIDs[0]) {
			t.Fatalf("greedy draw %d: token %d, want the argmax %d", n, id, handIDs[0])
		}
	}
}

// TestUniform: the stream is a pure function of its key, in [0, 1), with
// uniform moments, and changes with each key part.
func TestUniform(t *testing.T) {
	base := Uniform(1, "rec-1", 2, 3)
	if base != Uniform(1, "rec-1", 2, 3) {
		t.Fatal("Uniform is not a pure function")
	}
	for i, v := range []float32{Uniform(2, "rec-1", 2, 3), Uniform(1, "rec-2", 2, 3), Uniform(1, "rec-1", 3, 3), Uniform(1, "rec-1", 2, 4)} {
		if v == base {
			t.Errorf("changing key part %d leaves the uniform unchanged", i)
		}
	}
	const n = 100000
	var s, s2 float64
	for i := range n {
		u := float64(Uniform(7, "x", i%8, i/8))
		if u < 0 || u >= 1 {
			t.Fatalf("uniform %v outside [0, 1)", u)
		}
		s += u
		s2 += u * u
	}
	mean, varc := s/n, s2/n-(s/n)*(s/n)
	// Standard errors: mean 1/sqrt(12n) ≈ 9e-4, variance ≈ 2.7e-4; 5σ bounds.
	if math.Abs(mean-0.5) > 0.0046 || math.Abs(varc-1.0/12) > 0.0014 {
		t.Errorf("mean %.4f (want 0.5), variance %.4f (want %.4f)", mean, varc, 1.0/12)
	}
}
