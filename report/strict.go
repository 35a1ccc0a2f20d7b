package report

// The strict rule every claim of `train report` and `make reproduce` is
// checked with (issue 22): an ordering "a > b" holds only when a > b on
// every benchmark draw and the mean margin is at least MinMargin points.
// A tie never holds, and neither does a one-draw lead within noise.

// MinMargin is the smallest mean margin, in percentage points, that lets
// an ordering hold.
const MinMargin = 1.0

// Strict reports whether an ordering holds, given its margins a − b in
// points, one per draw.
func Strict(margins []float64) bool {
	if len(margins) == 0 {
		return false
	}
	var sum float64
	for _, m := range margins {
		if !(m > 0) {
			return false
		}
		sum += m
	}
	return sum/float64(len(margins)) >= MinMargin
}
