package reward

import (
	"context"
	"fmt"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward/judge"
)

// Report holds the metric rates over a set of turns: paper 000's five
// levels and paper 001's exact match, name accuracy and argument score.
// SFT validation, GRPO evaluation and `train eval` all print this.
type Report struct {
	N          int     `json:"n"`
	TID        float64 `json:"tid"`
	TSA        float64 `json:"tsa"`
	ACA        float64 `json:"aca"`
	ALC        float64 `json:"alc"`
	FCM        float64 `json:"fcm"`
	ExactMatch float64 `json:"exact_match"`
	NameAcc    float64 `json:"name_acc"`
	ArgScore   float64 `json:"arg_score"`
	// ALCCont is the mean ALC_cont (RM-2 scale) over turns with judged
	// textual arguments; Judged counts those turns.
	ALCCont float64 `json:"alc_cont"`
	Judged  int     `json:"judged"`
	// Invalid counts responses that did not parse in the format.
	Invalid int `json:"invalid"`
	// The judge's verdicts on the textual argument values of the judged
	// turns (those that passed ACA): exact, right language but not the
	// gold value, mixed languages, wrong language (paper 000's Argument
	// Language Mismatch).
	ValuesExact    int `json:"values_exact"`
	ValuesRight    int `json:"values_right"`
	ValuesMixed    int `json:"values_mixed"`
	ValuesMismatch int `json:"values_mismatch"`
}

// Values is the number of judged textual argument values.
func (r Report) Values() int { return r.ValuesExact + r.ValuesRight + r.ValuesMixed + r.ValuesMismatch }

// MismatchRate is the share of judged textual values in the wrong language
// (0 when none was judged).
func (r Report) MismatchRate() float64 {
	if r.Values() == 0 {
		return 0
	}
	return float64(r.ValuesMismatch) / float64(r.Values())
}

// Aggregate accumulates Outcomes into a Report.
type Aggregate struct {
	n, invalid, judged             int
	tid, tsa, aca, alc, fcm, exact int
	verdicts                       [judge.Exact + 1]int // indexed by judge.Verdict
	nameSum, argSum, alcSum        float64
}

// Add counts one turn.
func (a *Aggregate) Add(o *Outcome) {
	a.n++
	c := func(p *int, b bool) {
		if b {
			*p++
		}
	}
	c(&a.tid, o.Levels.TID)
	c(&a.tsa, o.Levels.TSA)
	c(&a.aca, o.Levels.ACA)
	c(&a.alc, o.Levels.ALC)
	c(&a.fcm, o.Levels.FCM)
	c(&a.exact, o.Exact)
	c(&a.invalid, !o.Valid)
	a.nameSum += o.NameFrac
	a.argSum += o.ArgFrac
	if o.Textual > 0 {
		a.judged++
		a.alcSum += o.ALCCont
	}
	for _, g := range o.Args {
		if g.Textual && g.Verdict >= judge.Mismatch && g.Verdict <= judge.Exact {
			a.verdicts[g.Verdict]++
		}
	}
}

// Report returns the rates (all 0 when nothing was added).
func (a *Aggregate) Report() Report {
	r := Report{N: a.n, Judged: a.judged, Invalid: a.invalid,
		ValuesExact: a.verdicts[judge.Exact], ValuesRight: a.verdicts[judge.Right],
		ValuesMixed: a.verdicts[judge.Mixed], ValuesMismatch: a.verdicts[judge.Mismatch]}
	if a.n == 0 {
		return r
	}
	f := func(k int) float64 { return float64(k) / float64(a.n) }
	r.TID, r.TSA, r.ACA, r.ALC, r.FCM = f(a.tid), f(a.tsa), f(a.aca), f(a.alc), f(a.fcm)
	r.ExactMatch = f(a.exact)
	r.NameAcc = a.nameSum / float64(a.n)
	r.ArgScore = a.argSum / float64(a.n)
	if a.judged > 0 {
		r.ALCCont = a.alcSum / float64(a.judged)
	}
	return r
}

// Table renders the report as an aligned text table.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "turns %d (unparsable %d)\n", r.N, r.Invalid)
	fmt.Fprintf(&b, "%-6s %-6s %-6s %-6s %-6s | %-11s %-8s %-9s\n", "TID", "TSA", "ACA", "ALC", "FCM", "exact_match", "name_acc", "arg_score")
	fmt.Fprintf(&b, "%-6.4f %-6.4f %-6.4f %-6.4f %-6.4f | %-11.4f %-8.4f %-9.4f\n",
		r.TID, r.TSA, r.ACA, r.ALC, r.FCM, r.ExactMatch, r.NameAcc, r.ArgScore)
	if r.Judged > 0 {
		fmt.Fprintf(&b, "mean ALC_cont %.4f over %d turns with textual arguments\n", r.ALCCont, r.Judged)
	}
	if n := r.Values(); n > 0 {
		f := func(k int) float64 { return 100 * float64(k) / float64(n) }
		fmt.Fprintf(&b, "textual values %d: exact %.1f%%, right language but not the gold %.1f%%, mixed %.1f%%, wrong language %.1f%%\n",
			n, f(r.ValuesExact), f(r.ValuesRight), f(r.ValuesMixed), f(r.ValuesMismatch))
	}
	return b.String()
}

// Evaluate scores texts[i] against recs[i] and returns the report and each
// turn's outcome.
func (s *Scorer) Evaluate(ctx context.Context, recs []data.Record, texts []string) (Report, []*Outcome, error) {
	if len(recs) != len(texts) {
		return Report{}, nil, fmt.Errorf("evaluate: %d records but %d responses", len(recs), len(texts))
	}
	var agg Aggregate
	outs := make([]*Outcome, len(recs))
	for i := range recs {
		o, err := s.Score(ctx, &recs[i], texts[i])
		if err != nil {
			return Report{}, nil, err
		}
		agg.Add(o)
		outs[i] = o
	}
	return agg.Report(), outs, nil
}
