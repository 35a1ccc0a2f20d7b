package report

import "math"

// The strict rule every claim of `train report` and `make reproduce` is
// checked with (issue 22): an ordering "a > b" holds only when a > b on
// every benchmark draw and the mean margin is at least MinMargin points.
// A tie never holds, and neither does a one-draw lead within noise.
//
// Margins are rounded to hundredths of a point first (Margin), in the demo's
// claims and in make reproduce's alike, so that an exact one-point gap
// between two rates computed in float64 (82.0 against 81.0 can come out as
// 0.9999… points) counts as the one point it is.

// MinMargin is the smallest mean margin, in percentage points, that lets
// an ordering hold.
const MinMargin = 1.0

// Margin is a − b in points, a and b in points, rounded to hundredths of a
// point: the one rounding rule of every claim.
func Margin(a, b float64) float64 { return round2(a - b) }

// Strict reports whether an ordering holds, given its margins a − b in
// points, one per draw (each already rounded by Margin).
func Strict(margins []float64) bool {
	if len(margins) == 0 {
		return false
	}
	// Summed in whole hundredths, so the mean is compared exactly.
	var hundredths int64
	for _, m := range margins {
		if !(m > 0) {
			return false
		}
		hundredths += int64(math.Round(100 * m))
	}
	return float64(hundredths) >= 100*MinMargin*float64(len(margins))
}

func round2(x float64) float64 { return math.Round(100*x) / 100 }
