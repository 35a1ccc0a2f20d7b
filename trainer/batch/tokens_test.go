package batch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// logNormal draws n lengths with median med and log-σ sigma, clamped to
// [1, maxLen].
func logNormal(n, med int, sigma float64, maxLen int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]int, n)
	for i := range out {
		out[i] = min(maxLen, max(1, int(float64(med)*math.Exp(sigma*r.NormFloat64()))))
	}
	return out
}

func TestCutRespectsBudgetKeepsOrder(t *testing.T) {
	lens := logNormal(500, 450, 0.6, 4096, 1)
	for _, budget := range []int{4096, 8192, 16384} {
		micro := Cut(lens, budget, nil)
		next := 0
		for _, mb := range micro {
			s := 0
			for _, i := range mb {
				if i != next {
					t.Fatalf("budget %d: item %d out of order (want %d)", budget, i, next)
				}
				next++
				s += lens[i]
			}
			if s > budget && len(mb) > 1 {
				t.Errorf("budget %d: micro-batch of %d items has %d tokens", budget, len(mb), s)
			}
		}
		if next != len(lens) {
			t.Fatalf("budget %d: %d of %d items cut", budget, next, len(lens))
		}
		// Greedy cutting in order wastes less than one record per micro-batch.
		if min := (sum(lens) + budget - 1) / budget; len(micro) > 2*min {
			t.Errorf("budget %d: %d micro-batches for %d tokens", budget, len(micro), sum(lens))
		}
	}
	// An item over the budget goes alone; budget 0 keeps everything together.
	if got := Cut([]int{5, 20, 5}, 10, nil); !slices.EqualFunc(got, [][]int{{0}, {1}, {2}}, slices.Equal) {
		t.Errorf("Cut over budget: %v", got)
	}
	if got := Cut([]int{5, 20, 5}, 0, nil); len(got) != 1 || len(got[0]) != 3 {
		t.Errorf("Cut without budget: %v", got)
	}
	// The cost function decides (here: right padding to the longest).
	pad := func(l []int) int { return len(l) * slices.Max(l) }
	if got := Cut([]int{2, 9, 1, 1}, 18, pad); !slices.EqualFunc(got, [][]int{{0, 1}, {2, 3}}, slices.Equal) {
		t.Errorf("Cut with padded cost: %v", got)
	}
}

func TestDealBalancesTokens(t *testing.T) {
	lens := logNormal(256, 450, 0.6, 4096, 3)
	slices.SortStableFunc(lens, func(a, b int) int { return b - a }) // a step group: longest first
	for _, S := range []int{1, 2, 4, 8} {
		shares := Deal(lens, S)
		load := make([]int, S)
		for i, s := range shares {
			load[s] += lens[i]
		}
		if d := slices.Max(load) - slices.Min(load); d > lens[len(lens)-1]+lens[0]/8 {
			t.Errorf("S=%d: loads %v differ by %d", S, load, d)
		}
		if !slices.Equal(shares, Deal(lens, S)) {
			t.Errorf("S=%d: Deal is not deterministic", S)
		}
	}
}

func TestGraphPadding(t *testing.T) {
	lens := []int{4, 2, 3, 3}
	micro := [][]int{{0, 1}, {2, 3}}
	if got := GraphPadding(lens, micro, nil); math.Abs(got-2.0/14) > 1e-12 {
		t.Errorf("padded: %v, want 2/14", got)
	}
	if got := GraphPadding(lens, micro, sum); got != 0 {
		t.Errorf("packed: %v, want 0", got)
	}
}
