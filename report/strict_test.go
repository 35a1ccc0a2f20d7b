package report

import "testing"

// TestMarginExactPointGaps: at n = 200 turns every exact one-point gap
// between two rates is a margin of exactly 1.00 point, and holds, in the
// demo's rule (rates as fractions) and in make reproduce's (rates in
// points). Before the shared rule the demo compared 100·(a − b) unrounded,
// and some of these gaps came out just below one point.
func TestMarginExactPointGaps(t *testing.T) {
	unrounded := 0
	for k := 0; k+2 <= 200; k++ {
		a, b := float64(k+2)/200, float64(k)/200 // two rates one point apart
		if 100*(a-b) < 1 {
			unrounded++
		}
		if m := Margin(100*a, 100*b); m != 1 {
			t.Errorf("Margin(%v, %v) = %v, want exactly 1", 100*a, 100*b, m)
		}
		if !Strict([]float64{Margin(100*a, 100*b)}) {
			t.Errorf("a one-point gap %v > %v does not hold", 100*a, 100*b)
		}
		if Strict([]float64{Margin(100*b, 100*a)}) {
			t.Errorf("%v > %v holds", 100*b, 100*a)
		}
		// r.Claims' own comparison, through Results.
		if c := claimAhead(a, b); !c {
			t.Errorf("demo rule: %v > %v by one point does not hold", a, b)
		}
	}
	if unrounded == 0 {
		t.Errorf("no unrounded gap fell below one point: the test no longer exercises the rounding")
	}
	t.Logf("%d of 199 exact one-point gaps are below 1 unrounded", unrounded)
	// A mean margin of three rounded draws: 1.00, 1.00, 0.99 does not hold.
	if Strict([]float64{1, 1, 0.99}) {
		t.Errorf("mean 0.9967 holds")
	}
	if !Strict([]float64{1.01, 1, 0.99}) {
		t.Errorf("mean 1.00 does not hold")
	}
}

func TestCountClaimsSanityApart(t *testing.T) {
	cs := []ReproClaim{{Holds: true}, {Holds: false}, {Holds: true, Sanity: true}}
	h, n, sh, s := CountClaims(cs)
	if h != 1 || n != 2 || sh != 1 || s != 1 {
		t.Errorf("CountClaims = %d %d %d %d", h, n, sh, s)
	}
}
