package reward

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/reward/internal/norm"
	"github.com/argrl/argrl/reward/judge"
)

// Levels are the five turn-level metrics of paper 000 §2.3, each
// conditional on the previous one: FCM ≤ ALC ≤ ACA ≤ TSA ≤ TID.
// They serialize as 0/1 integers.
type Levels struct {
	TID, TSA, ACA, ALC, FCM bool
}

// MarshalJSON writes {"tid":0|1,"tsa":..,"aca":..,"alc":..,"fcm":..}.
func (l Levels) MarshalJSON() ([]byte, error) {
	b := func(x bool) int {
		if x {
			return 1
		}
		return 0
	}
	return json.Marshal(struct {
		TID int `json:"tid"`
		TSA int `json:"tsa"`
		ACA int `json:"aca"`
		ALC int `json:"alc"`
		FCM int `json:"fcm"`
	}{b(l.TID), b(l.TSA), b(l.ACA), b(l.ALC), b(l.FCM)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Levels) UnmarshalJSON(data []byte) error {
	var v struct{ TID, TSA, ACA, ALC, FCM int }
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*l = Levels{v.TID != 0, v.TSA != 0, v.ACA != 0, v.ALC != 0, v.FCM != 0}
	return nil
}

// levels computes TID..FCM, judging the textual arguments once ACA holds.
func (s *Scorer) levels(ctx context.Context, rec *data.Record, p format.Parsed, o *Outcome) error {
	made := len(p.Calls) > 0
	switch {
	case !p.Valid:
		o.Gate = "tid"
		return nil
	case o.GoldNoCall:
		// Only the format's own no-call answer passes; it passes everything.
		if o.PredNoCall {
			o.Levels = Levels{true, true, true, true, true}
		} else {
			o.Gate = "tid"
		}
		return nil
	case !made:
		o.Gate = "tid"
		return nil
	}
	o.Levels.TID = true
	// TSA: equal multisets of names.
	names := map[string]int{}
	for _, g := range rec.Calls {
		names[g.Name]++
	}
	for _, c := range p.Calls {
		names[c.Name]--
	}
	for _, n := range names {
		if n != 0 {
			o.Gate = "tsa"
			return nil
		}
	}
	o.Levels.TSA = true
	// ACA: every call carries the schema's required arguments.
	required := map[string][]string{}
	for _, t := range rec.Tools {
		if sc, err := t.Schema(); err == nil {
			required[t.Name] = sc.Required
		}
	}
	for i, c := range p.Calls {
		for _, r := range required[c.Name] {
			if _, ok := c.Arguments[r]; !ok {
				o.Missing = append(o.Missing, fmt.Sprintf("%d.%s", i, r))
			}
		}
	}
	if len(o.Missing) > 0 {
		o.Gate = "aca"
		return nil
	}
	o.Levels.ACA = true
	// ALC: judge every textual argument value of the matched pairs.
	if err := s.judgeArgs(ctx, rec, p, o); err != nil {
		return err
	}
	threshold := s.ALCThreshold
	if threshold == 0 {
		threshold = 1.8
	}
	if o.Textual > 0 && o.ALCCont < threshold-1e-9 {
		o.Gate = "alc"
		return nil
	}
	o.Levels.ALC = true
	// FCM: every call matches a gold call exactly (TSA made the counts equal).
	exact := len(o.Pairs) == o.NGold
	for _, pr := range o.Pairs {
		exact = exact && pr.Exact
	}
	if !exact {
		o.Gate = "fcm"
		return nil
	}
	o.Levels.FCM = true
	return nil
}

// textualGold returns v* for a textual argument: the gold value, or the
// first non-empty accept value when the gold call omits it; ok is false
// when the argument is not string-valued.
func textualGold(rec *data.Record, j int, key string) (string, bool) {
	v, ok := rec.Calls[j].Arguments[key]
	if !ok {
		for _, a := range acceptOf(rec, j, key) {
			if a != "" {
				v, ok = a, true
				break
			}
		}
	}
	if !ok {
		return "", false
	}
	return textOf(v)
}

// textOf renders a string, or a non-empty list of strings joined by ", ".
func textOf(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, strings.TrimSpace(x) != ""
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return "", false
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ", "), len(parts) > 0
	}
	return "", false
}

// judgeArgs fills Verdict for the textual arguments present in the
// prediction, and the ALC_cont averages.
func (s *Scorer) judgeArgs(ctx context.Context, rec *data.Record, p format.Parsed, o *Outcome) error {
	var reqd map[string]map[string]bool
	if s.ALCRequiredOnly {
		reqd = map[string]map[string]bool{}
		for _, t := range rec.Tools {
			if sc, err := t.Schema(); err == nil {
				reqd[t.Name] = map[string]bool{}
				for _, r := range sc.Required {
					reqd[t.Name][r] = true
				}
			}
		}
	}
	utter := ""
	for _, m := range rec.Messages {
		if m.Role == "user" {
			utter = m.Content
		}
	}
	sum2, sum3 := 0.0, 0.0
	for k := range o.Args {
		a := &o.Args[k]
		if a.Extra || !a.Present {
			continue
		}
		gold, ok := textualGold(rec, a.Gold, a.Name)
		if !ok {
			continue
		}
		name := rec.Calls[a.Gold].Name
		if reqd != nil && !reqd[name][a.Name] {
			continue
		}
		a.Textual = true
		switch {
		case a.Match:
			a.Verdict = judge.Exact
		case s.Judge == nil:
			a.Verdict = judge.Mismatch
		default:
			pv := p.Calls[a.Pred].Arguments[a.Name]
			val, ok := textOf(pv)
			if !ok {
				val = norm.String(pv)
			}
			var accept []string
			for _, x := range acceptOf(rec, a.Gold, a.Name) {
				if t, ok := textOf(x); ok {
					accept = append(accept, t)
				}
			}
			v, err := s.Judge.Judge(ctx, judge.Query{Lang: rec.Lang, Utterance: utter, Arg: name + "." + a.Name,
				Gold: gold, Accept: accept, Value: val})
			if err != nil {
				return fmt.Errorf("judge %s.%s: %w", name, a.Name, err)
			}
			a.Verdict = v
		}
		o.Textual++
		sum2 += a.Verdict.RM2()
		sum3 += a.Verdict.RM3()
	}
	if o.Textual > 0 {
		o.ALCCont = sum2 / float64(o.Textual)
		o.ALCRM3 = sum3 / float64(o.Textual)
	}
	return nil
}

// sortedKeys lists m's keys in sorted order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
