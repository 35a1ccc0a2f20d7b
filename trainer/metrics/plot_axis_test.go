package metrics

import (
	"strings"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	labels := func(tk niceTicks, lo, hi float64) string {
		var out []string
		for _, x := range tk.Ticks(lo, hi) {
			if x.Label != "" {
				out = append(out, x.Label)
			}
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		integer bool
		lo, hi  float64
		want    string
	}{
		{true, 1, 150, "20 40 60 80 100 120 140"},
		{true, 1, 200, "50 100 150 200"},
		{true, 1, 4, "1 2 3 4"},
		{false, 0.3, 2.1, "0.5 1.0 1.5 2.0"},
		{false, -1, 2.5, "-1.0 -0.5 0 0.5 1.0 1.5 2.0 2.5"},
		{false, 1e-5, 1e-4, "2e-5 4e-5 6e-5 8e-5 1e-4"},
		{false, 0, 30000, "0 5000 10000 15000 20000 25000 30000"},
		{false, 1e6, 3e6, "1e6 1.5e6 2e6 2.5e6 3e6"},
		{false, 6.2227, 6.2229, "6.22270 6.22275 6.22280 6.22285 6.22290"},
		{false, 0.0009, 0.0011, "0.00090 0.00095 0.00100 0.00105 0.00110"},
	} {
		if got := labels(niceTicks{integer: c.integer}, c.lo, c.hi); got != c.want {
			t.Errorf("ticks(%v, %g, %g) = %q, want %q", c.integer, c.lo, c.hi, got, c.want)
		}
	}
	if tk := (niceTicks{}).Ticks(2, 2); len(tk) != 1 || tk[0].Label != "2" {
		t.Errorf("a zero range: %+v", tk)
	}
}
