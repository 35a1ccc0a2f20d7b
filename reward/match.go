// Package reward scores tool-call responses: one scorer (matcher) computes
// the hierarchical metrics of paper 000 §2.3 (TID, TSA, ACA, ALC, FCM) and
// paper 001's exact match, name accuracy and argument score, and every
// reward model (rm1, rm2, rm3, decomposed, binary, r2if; docs/contracts.md
// §4) is computed from that same scorer's Outcome, so training and
// evaluation cannot drift apart. The bfcl reward is the exception by
// design: it follows BFCL's own checker (internal/bfcl), whose rules differ
// from §3's normalization, and reports the §3 levels beside it.
package reward

import (
	"context"
	"fmt"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/reward/internal/norm"
	"github.com/argrl/argrl/reward/judge"
)

// Scorer compares a response with a record's gold calls.
type Scorer struct {
	Format format.Format
	Judge  judge.Judge // nil: ALC is not judged (textual args count as exact only when they match)
	// ALCThreshold: ALC passes when ALC_cont ≥ it on the RM-2 scale (1.8).
	ALCThreshold float64
	// ALCRequiredOnly restricts ALC and RM-3 to schema-required textual
	// arguments (paper 000 eq. 2); false uses every textual argument
	// (docs/contracts.md §3).
	ALCRequiredOnly bool
}

// ArgResult is the comparison of one argument of a matched pair of calls:
// a gold argument (present in the gold call or in accept) or an extra
// predicted one.
type ArgResult struct {
	Pred    int    `json:"pred"` // index of the predicted call
	Gold    int    `json:"gold"` // index of the gold call
	Name    string `json:"name"`
	Present bool   `json:"present"`         // the predicted call has it
	Extra   bool   `json:"extra,omitempty"` // predicted but absent from gold and accept
	// Match: the value equals the gold value after normalization or is in
	// accept; an omitted argument matches when gold omits it or accept
	// lists "".
	Match   bool `json:"match"`
	Textual bool `json:"textual,omitempty"` // judged for language (ALC, RM-3)
	// Verdict is the language judge's decision (textual arguments, once
	// ACA holds); an argument that matches is Exact without asking.
	Verdict judge.Verdict `json:"verdict,omitempty"`
	Span    *[2]int       `json:"span,omitempty"` // value bytes [start, end) in the response
}

// Pair is a predicted call matched to a gold call (same name).
type Pair struct {
	Pred     int     `json:"pred"`
	Gold     int     `json:"gold"`
	Exact    bool    `json:"exact"`     // every gold argument matches and none is extra
	Matched  int     `json:"matched"`   // gold arguments that match
	GoldArgs int     `json:"gold_args"` // gold arguments (gold call ∪ accept keys)
	Extra    int     `json:"extra"`     // predicted arguments outside the gold set
	ArgFrac  float64 `json:"arg_frac"`  // paper 001's per-pair argument score
}

// Outcome is everything the metrics and rewards need about one response.
type Outcome struct {
	Valid      bool   `json:"valid"` // the response parses in the format (paper 001's fmt)
	ParseError string `json:"parse_error,omitempty"`
	GoldNoCall bool   `json:"gold_no_call"`
	PredNoCall bool   `json:"pred_no_call"` // the format's own no-call answer
	Levels     Levels `json:"metrics"`
	// Gate is the first level that failed ("tid", "tsa", "aca", "alc",
	// "fcm"), or "" when all passed.
	Gate string `json:"gate"`
	// Textual is K, the number of judged textual argument values;
	// ALCCont is their mean on the RM-2 scale, ALCRM3 on the RM-3 scale
	// (both 0 when K = 0 or ACA failed).
	Textual int     `json:"textual"`
	ALCCont float64 `json:"alc_cont"`
	ALCRM3  float64 `json:"alc_rm3"`
	// Paper 001's scores.
	NameFrac   float64 `json:"name_frac"`
	ArgFrac    float64 `json:"arg_frac"`
	Exact      bool    `json:"exact"`
	ExtraCalls int     `json:"extra_calls"`
	NPred      int     `json:"n_pred"`
	NGold      int     `json:"n_gold"`

	Pairs   []Pair        `json:"pairs,omitempty"`
	Args    []ArgResult   `json:"args,omitempty"`
	Missing []string      `json:"missing_required,omitempty"` // "call.arg" failing ACA
	Parsed  format.Parsed `json:"-"`
}

// Score parses text with the scorer's format and compares it with rec.
func (s *Scorer) Score(ctx context.Context, rec *data.Record, text string) (*Outcome, error) {
	return s.ScoreParsed(ctx, rec, s.Format.Parse(text))
}

// ScoreParsed compares an already parsed response with rec.
func (s *Scorer) ScoreParsed(ctx context.Context, rec *data.Record, p format.Parsed) (*Outcome, error) {
	o := &Outcome{Valid: p.Valid, ParseError: p.Err, GoldNoCall: len(rec.Calls) == 0, Parsed: p,
		NPred: len(p.Calls), NGold: len(rec.Calls)}
	o.PredNoCall = p.Valid && p.NoCall && len(p.Calls) == 0
	if o.NPred > o.NGold {
		o.ExtraCalls = o.NPred - o.NGold
	}
	if p.Valid {
		s.match(rec, p, o)
	}
	s.paper001(o)
	if err := s.levels(ctx, rec, p, o); err != nil {
		return nil, fmt.Errorf("record %s: %w", rec.ID, err)
	}
	return o, nil
}

// goldKeys lists gold call j's argument names: its arguments, then accept
// keys it lacks.
func goldKeys(rec *data.Record, j int) []string {
	g := rec.Calls[j]
	keys := make([]string, 0, len(g.Arguments))
	for _, k := range sortedKeys(g.Arguments) {
		keys = append(keys, k)
	}
	if j < len(rec.Accept) {
		for _, k := range sortedKeys(rec.Accept[j]) {
			if _, ok := g.Arguments[k]; !ok {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func acceptOf(rec *data.Record, j int, key string) []any {
	if j < len(rec.Accept) {
		return rec.Accept[j][key]
	}
	return nil
}

// argMatch compares predicted call c's argument key with gold call j's.
func argMatch(rec *data.Record, j int, c format.ParsedCall, key string) bool {
	gv, ghas := rec.Calls[j].Arguments[key]
	acc := acceptOf(rec, j, key)
	pv, present := c.Arguments[key]
	if !present {
		return !ghas || norm.Omittable(acc)
	}
	return (ghas && norm.Equal(pv, gv)) || norm.In(pv, acc)
}

// compare builds the pair summary of predicted call i against gold call j.
func compare(rec *data.Record, p format.Parsed, i, j int) Pair {
	c := p.Calls[i]
	keys := goldKeys(rec, j)
	pr := Pair{Pred: i, Gold: j, GoldArgs: len(keys)}
	in := map[string]bool{}
	for _, k := range keys {
		in[k] = true
		if argMatch(rec, j, c, k) {
			pr.Matched++
		}
	}
	for k := range c.Arguments {
		if !in[k] {
			pr.Extra++
		}
	}
	pr.Exact = pr.Matched == pr.GoldArgs && pr.Extra == 0
	switch {
	case pr.GoldArgs == 0 && len(c.Arguments) == 0:
		pr.ArgFrac = 1
	case pr.GoldArgs == 0:
		pr.ArgFrac = 0.5
	default:
		pr.ArgFrac = float64(pr.Matched) / float64(pr.GoldArgs) * max(0, 1-0.25*float64(pr.Extra))
	}
	return pr
}

// match pairs predicted and gold calls greedily and one-to-one by name:
// first each gold call (in order) takes the first unused prediction that
// matches it exactly, then each remaining gold call takes the unused
// same-name prediction with the most matching arguments (fewest extras,
// then earliest).
func (s *Scorer) match(rec *data.Record, p format.Parsed, o *Outcome) {
	usedP := make([]bool, len(p.Calls))
	usedG := make([]bool, len(rec.Calls))
	var pairs []Pair
	for j, g := range rec.Calls {
		for i, c := range p.Calls {
			if usedP[i] || c.Name != g.Name {
				continue
			}
			if pr := compare(rec, p, i, j); pr.Exact {
				pairs = append(pairs, pr)
				usedP[i], usedG[j] = true, true
				break
			}
		}
	}
	for j, g := range rec.Calls {
		if usedG[j] {
			continue
		}
		best := Pair{Pred: -1}
		for i, c := range p.Calls {
			if usedP[i] || c.Name != g.Name {
				continue
			}
			pr := compare(rec, p, i, j)
			if best.Pred < 0 || pr.Matched > best.Matched || pr.Matched == best.Matched && pr.Extra < best.Extra {
				best = pr
			}
		}
		if best.Pred >= 0 {
			pairs = append(pairs, best)
			usedP[best.Pred], usedG[j] = true, true
		}
	}
	o.Pairs = pairs
	for _, pr := range pairs {
		c := p.Calls[pr.Pred]
		in := map[string]bool{}
		for _, k := range goldKeys(rec, pr.Gold) {
			in[k] = true
			a := ArgResult{Pred: pr.Pred, Gold: pr.Gold, Name: k, Match: argMatch(rec, pr.Gold, c, k)}
			_, a.Present = c.Arguments[k]
			if sp, ok := c.ArgSpans[k]; ok && a.Present {
				a.Span = &[2]int{sp.Start, sp.End}
			}
			o.Args = append(o.Args, a)
		}
		for _, k := range sortedKeys(c.Arguments) {
			if in[k] {
				continue
			}
			a := ArgResult{Pred: pr.Pred, Gold: pr.Gold, Name: k, Present: true, Extra: true}
			if sp, ok := c.ArgSpans[k]; ok {
				a.Span = &[2]int{sp.Start, sp.End}
			}
			o.Args = append(o.Args, a)
		}
	}
}

// paper001 fills name_frac, arg_frac and exact (paper 001 A.4).
func (s *Scorer) paper001(o *Outcome) {
	switch {
	case !o.Valid:
	case o.GoldNoCall:
		if o.PredNoCall {
			o.NameFrac, o.ArgFrac, o.Exact = 1, 1, true
		}
	default:
		o.NameFrac = float64(len(o.Pairs)) / float64(o.NGold)
		exact := len(o.Pairs) == o.NGold && o.NPred == o.NGold
		sum := 0.0
		for _, pr := range o.Pairs {
			sum += pr.ArgFrac
			exact = exact && pr.Exact
		}
		if len(o.Pairs) > 0 {
			o.ArgFrac = sum / float64(len(o.Pairs))
		}
		o.Exact = exact
	}
}
