package report

// Paper 000's claims in miniature (issue 8's acceptance), checked on the
// loaded numbers: each claim compares rates read from the evaluation files.

import (
	"fmt"
	"io"
	"strings"
)

// Claim is one checked statement.
type Claim struct {
	Split string
	Text  string // e.g. "ALC(SFT) > ALC(Base) on es"
	Got   string // the compared numbers
	Holds bool
}

// Claims checks, on each split, with base, sft and rl naming the stages
// and trained the training languages (pooled), each ordering under the
// strict rule (strict.go: ahead by at least MinMargin points; a tie does
// not hold):
//
//	ALC(sft) > ALC(base) and FCM(sft) > FCM(base) on the trained languages;
//	ALC(rl) > ALC(sft) on the trained languages;
//	ALC(rl) > ALC(base) on at least two unseen languages.
func (r *Results) Claims(base, sft, rl string, trained []string) ([]Claim, error) {
	var out []Claim
	tr := strings.Join(trained, ",")
	for _, sp := range r.Splits {
		b, err := r.Get(base, sp, trained...)
		if err != nil {
			return nil, err
		}
		s, err := r.Get(sft, sp, trained...)
		if err != nil {
			return nil, err
		}
		g, err := r.Get(rl, sp, trained...)
		if err != nil {
			return nil, err
		}
		B, S, G := StageTitle(base), StageTitle(sft), StageTitle(rl)
		ahead := claimAhead
		out = append(out,
			Claim{sp, fmt.Sprintf("ALC(%s) > ALC(%s) on %s", S, B, tr), fmt.Sprintf("%.2f > %.2f", 100*s.ALC, 100*b.ALC), ahead(s.ALC, b.ALC)},
			Claim{sp, fmt.Sprintf("FCM(%s) > FCM(%s) on %s", S, B, tr), fmt.Sprintf("%.2f > %.2f", 100*s.FCM, 100*b.FCM), ahead(s.FCM, b.FCM)},
			Claim{sp, fmt.Sprintf("ALC(%s) > ALC(%s) on %s", G, S, tr), fmt.Sprintf("%.2f > %.2f", 100*g.ALC, 100*s.ALC), ahead(g.ALC, s.ALC)})
		var better, all []string
		for _, l := range r.Langs {
			if contains(trained, l) {
				continue
			}
			lb, err := r.Get(base, sp, l)
			if err != nil {
				return nil, err
			}
			lg, err := r.Get(rl, sp, l)
			if err != nil {
				return nil, err
			}
			all = append(all, fmt.Sprintf("%s %.2f→%.2f", l, 100*lb.ALC, 100*lg.ALC))
			if ahead(lg.ALC, lb.ALC) {
				better = append(better, l)
			}
		}
		out = append(out, Claim{sp, fmt.Sprintf("ALC(%s) > ALC(%s) on ≥ 2 unseen languages", G, B),
			fmt.Sprintf("%d of %d: %s", len(better), len(all), strings.Join(all, ", ")), len(better) >= 2})
	}
	return out, nil
}

// claimAhead is the demo's ordering of two rates (fractions of 1): the
// strict rule on their margin in points, rounded like every other margin.
func claimAhead(a, b float64) bool { return Strict([]float64{Margin(100*a, 100*b)}) }

// WriteClaims prints one line per claim.
func WriteClaims(w io.Writer, cs []Claim) {
	for _, c := range cs {
		v := "holds"
		if !c.Holds {
			v = "DOES NOT HOLD"
		}
		short, _, _ := strings.Cut(title(c.Split), ":")
		fmt.Fprintf(w, "  %-8s %-13s  %s: %s\n", short, v, c.Text, c.Got)
	}
}
