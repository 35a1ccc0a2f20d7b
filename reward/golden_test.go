package reward

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward/internal/norm"
	"github.com/argrl/argrl/reward/judge"
)

// table1Record is paper 000's currency example (Figure 1 and Table 1): a
// Spanish user, get_conversion_cost, two calls. The gold values are the
// Figure's "Expected" ones: euro/dollars and pound/dollars.
func table1Record(t *testing.T) data.Record {
	t.Helper()
	const line = `{"id": "table1", "lang": "es",
	 "tools": [{"name": "get_conversion_cost", "description": "Cost of converting an amount between currencies.",
	   "parameters": {"type": "object", "properties": {
	     "amount": {"type": "number"}, "from_currency": {"type": "string"}, "to_currency": {"type": "string"}},
	     "required": ["amount", "from_currency", "to_currency"]}}],
	 "messages": [{"role": "user", "content": "¿Cuánto costará en dólares si transfiero 15000 Euro a dólares? y ¿cuánto si convierto 200 libras a dólares?"}],
	 "calls": [{"name": "get_conversion_cost", "arguments": {"amount": 15000, "from_currency": "euro", "to_currency": "dollars"}},
	           {"name": "get_conversion_cost", "arguments": {"amount": 200, "from_currency": "pound", "to_currency": "dollars"}}]}`
	var r data.Record
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func getReward(t *testing.T, name string, mut func(*Config)) Reward {
	t.Helper()
	c := DefaultConfig()
	if mut != nil {
		mut(&c)
	}
	r, err := Get(name, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestPaper000Table1 reproduces Table 1 with the builtin judge: both
// responses stop at ALC (ALC_cont 1.25 and 1.75 on the RM-2 scale, below
// 1.8), so rm1 = 0 and rm2 = 1.5; RM-3 averages 2.5/1.0 per value over the
// four textual values: (2.5+1+1+1)/4 = 1.375 and (2.5+2.5+1+2.5)/4 = 2.125.
func TestPaper000Table1(t *testing.T) {
	rec := table1Record(t)
	cases := []struct {
		name, text    string
		rm1, rm2, rm3 float64
		verdicts      []judge.Verdict // from_currency, to_currency of call 1, then call 2
	}{
		{"spanish values",
			`[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dólares"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dólares")]`,
			0, 1.5, 1.375, []judge.Verdict{judge.Exact, judge.Mismatch, judge.Mismatch, judge.Mismatch}},
		{"english values",
			`[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dollars")]`,
			0, 1.5, 2.125, []judge.Verdict{judge.Exact, judge.Exact, judge.Mismatch, judge.Exact}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, want := range []struct {
				name string
				v    float64
			}{{"rm1", tc.rm1}, {"rm2", tc.rm2}, {"rm3", tc.rm3}} {
				r := getReward(t, want.name, func(c *Config) { c.Format = "pythonic" })
				res, err := r.Score(context.Background(), &rec, tc.text)
				if err != nil {
					t.Fatal(err)
				}
				if !near(res.Reward, want.v) {
					t.Errorf("%s = %v, want %v (gate %s, parts %v)", want.name, res.Reward, want.v, res.Gate, res.Parts)
				}
				l := res.Metrics
				if !l.TID || !l.TSA || !l.ACA || l.ALC || l.FCM {
					t.Errorf("%s: levels %+v, want TID TSA ACA only", want.name, l)
				}
				// Every span holds its argument's value in the raw text.
				if len(res.Spans) != 6 {
					t.Errorf("%s: %d spans, want 6", want.name, len(res.Spans))
				}
				for _, a := range res.Args {
					if a.Span == nil {
						t.Fatalf("%s: %s has no span", want.name, a.Name)
					}
					if raw := tc.text[a.Span[0]:a.Span[1]]; raw != norm.String(res.Outcome.Parsed.Calls[a.Pred].Arguments[a.Name]) {
						t.Errorf("%s: span of %s holds %q", want.name, a.Name, raw)
					}
				}
				var got []judge.Verdict
				for _, a := range res.Args {
					if a.Textual {
						got = append(got, a.Verdict)
					}
				}
				if len(got) != len(tc.verdicts) {
					t.Fatalf("%s: %d textual args, want %d", want.name, len(got), len(tc.verdicts))
				}
				for i := range got {
					if got[i] != tc.verdicts[i] {
						t.Errorf("%s: textual arg %d verdict %v, want %v", want.name, i, got[i], tc.verdicts[i])
					}
				}
			}
		})
	}
	// The gold itself is FCM and scores the top of every scale.
	gold := `[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars"), get_conversion_cost(amount=200, from_currency="pound", to_currency="dollars")]`
	for name, want := range map[string]float64{"rm1": 2, "rm2": 2, "rm3": 2.5} {
		res, err := getReward(t, name, func(c *Config) { c.Format = "pythonic" }).Score(context.Background(), &rec, gold)
		if err != nil {
			t.Fatal(err)
		}
		if !near(res.Reward, want) || !res.Metrics.FCM {
			t.Errorf("gold: %s = %v (FCM %v), want %v", name, res.Reward, res.Metrics.FCM, want)
		}
	}
}

// TestRMGates checks the structural gates shared by rm1/rm2/rm3.
func TestRMGates(t *testing.T) {
	rec := table1Record(t)
	cases := []struct {
		name, text    string
		rm1, rm2, rm3 float64
	}{
		{"no call", `[]`, -1, -1, -1},
		{"unparsable", `[get_conversion_cost(amount=15000`, -1, -1, -1},
		{"one call of two", `[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars")]`, -1, -0.5, -0.5},
		{"wrong tool", `[convert(amount=1), convert(amount=2)]`, -1, -0.5, -0.5},
		{"required arg missing", `[get_conversion_cost(amount=15000, from_currency="euro"), get_conversion_cost(amount=200, from_currency="pound", to_currency="dollars")]`, -1, 0.5, 0.5},
		// Right language everywhere, wrong number: ALC passes, FCM fails.
		{"alc passes, fcm fails", `[get_conversion_cost(amount=1, from_currency="euro", to_currency="dollars"), get_conversion_cost(amount=200, from_currency="pound", to_currency="dollars")]`, -1, 1.5, 2.5},
		// Every textual value in the wrong language: ALC_cont = 1.0.
		{"all mismatched", `[get_conversion_cost(amount=15000, from_currency="european currency", to_currency="dólares"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dólares")]`, 0, 1.0, 1.0},
	}
	for _, tc := range cases {
		for name, want := range map[string]float64{"rm1": tc.rm1, "rm2": tc.rm2, "rm3": tc.rm3} {
			res, err := getReward(t, name, func(c *Config) { c.Format = "pythonic" }).Score(context.Background(), &rec, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !near(res.Reward, want) {
				t.Errorf("%s: %s = %v, want %v (gate %s, metrics %+v)", tc.name, name, res.Reward, want, res.Gate, res.Metrics)
			}
		}
	}
}

// TestNoTextTurn: a turn without textual arguments passes ALC; its
// ALC_cont is the scale's top unless no_text_score says otherwise. A zero
// Config takes the defaults.
func TestNoTextTurn(t *testing.T) {
	rec := mustRecord(t, `{"id": "n", "lang": "es", "tools": [{"name": "set_temp", "parameters": {"type": "object",
	  "properties": {"degrees": {"type": "number"}}, "required": ["degrees"]}}],
	  "messages": [{"role": "user", "content": "Pon 21 grados"}], "calls": [{"name": "set_temp", "arguments": {"degrees": 21}}]}`)
	wrong := `<tool_call>{"name": "set_temp", "arguments": {"degrees": 12}}</tool_call>`
	for _, c := range []struct {
		name   string
		cfg    Config
		reward string
		want   float64
	}{
		{"rm3 default", DefaultConfig(), "rm3", 2.5},
		{"rm3 zero config", Config{}, "rm3", 2.5},
		{"rm2 default", DefaultConfig(), "rm2", 1.5},
		{"rm3 no_text_score 2", func() Config { c := DefaultConfig(); c.NoTextScore = 2; return c }(), "rm3", 2},
		{"decomposed zero config", Config{}, "decomposed", 0.5},
	} {
		r, err := Get(c.reward, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Score(context.Background(), &rec, wrong)
		if err != nil {
			t.Fatal(err)
		}
		if !near(res.Reward, c.want) || !res.Metrics.ALC || res.Metrics.FCM {
			t.Errorf("%s: %v (metrics %+v), want %v with ALC and not FCM", c.name, res.Reward, res.Metrics, c.want)
		}
	}
}

// TestConcurrentScoring: one reward serves many goroutines (GRPO scores a
// group at once); run with -race.
func TestConcurrentScoring(t *testing.T) {
	rec := table1Record(t)
	r := getReward(t, "rm3", func(c *Config) { c.Format = "pythonic" })
	text := `[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dollars")]`
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				res, err := r.Score(context.Background(), &rec, text)
				if err == nil && !near(res.Reward, 2.125) {
					err = fmt.Errorf("rm3 = %v, want 2.125", res.Reward)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportCountsVerdicts checks that a Report counts the judge's verdict
// on every textual value of the turns that reach ALC: Table 1's two
// responses (exact 1 + wrong language 3, exact 3 + wrong language 1) and a
// third whose values only re-accent the gold (a minor variation each).
func TestReportCountsVerdicts(t *testing.T) {
	rec := table1Record(t)
	c := DefaultConfig()
	c.Format = "pythonic"
	s, err := NewScorer(c)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		`[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dólares"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dólares")]`,
		`[get_conversion_cost(amount=15000, from_currency="euro", to_currency="dollars"), get_conversion_cost(amount=200, from_currency="libras", to_currency="dollars")]`,
		`[get_conversion_cost(amount=15000, from_currency="éuro", to_currency="dóllars"), get_conversion_cost(amount=200, from_currency="póund", to_currency="dóllars")]`,
		`[]`, // no call: nothing judged
	}
	recs := []data.Record{rec, rec, rec, rec}
	rep, _, err := s.Evaluate(context.Background(), recs, texts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ValuesExact != 4 || rep.ValuesRight != 4 || rep.ValuesMismatch != 4 || rep.Values() != 12 || !near(rep.MismatchRate(), 4.0/12) {
		t.Errorf("verdicts exact %d right %d mismatch %d (rate %v), want 4/4/4 (1/3)", rep.ValuesExact, rep.ValuesRight, rep.ValuesMismatch, rep.MismatchRate())
	}
	if rep.Judged != 3 {
		t.Errorf("judged turns %d, want 3", rep.Judged)
	}
}

// TestALCJudgesLanguageOnly: ALC uses the RM-2 language scale of
// docs/contracts.md §3, which judges language, not exactness: a value in
// the user's language that is not the gold value scores 2.0 and passes ALC
// (then fails FCM); a value mixing in English words scores 1.5 (below the
// 1.8 threshold); an English value 1.0. RM-3 pays 2.0, 1.5 and 1.0.
func TestALCJudgesLanguageOnly(t *testing.T) {
	const line = `{"id": "alc", "lang": "es",
	 "tools": [{"name": "reservar_mesa", "description": "Reserva una mesa.",
	   "parameters": {"type": "object", "properties": {"nota": {"type": "string"}}, "required": ["nota"]}}],
	 "messages": [{"role": "user", "content": "Reserva una mesa junto a la ventana, por favor."}],
	 "calls": [{"name": "reservar_mesa", "arguments": {"nota": "mesa junto a la ventana"}}]}`
	var rec data.Record
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		value         string
		verdict       judge.Verdict
		alc           bool
		rm1, rm2, rm3 float64
	}{
		{"mesa junto a la ventana", judge.Exact, true, 2, 2, 2.5},
		{"mesa cerca de la ventana", judge.Right, true, -1, 1.5, 2.0},
		{"mesa junto a la window", judge.Mixed, false, 0, 1.5, 1.5},
		{"table by the window", judge.Mismatch, false, 0, 1.0, 1.0},
	} {
		text := `[reservar_mesa(nota="` + c.value + `")]`
		for name, want := range map[string]float64{"rm1": c.rm1, "rm2": c.rm2, "rm3": c.rm3} {
			res, err := getReward(t, name, func(cf *Config) { cf.Format = "pythonic" }).Score(context.Background(), &rec, text)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Args) != 1 || res.Args[0].Verdict != c.verdict {
				t.Fatalf("%q: verdicts %+v, want %v", c.value, res.Args, c.verdict)
			}
			if res.Metrics.ALC != c.alc || !near(res.Reward, want) {
				t.Errorf("%q: %s = %v with ALC %v, want %v with ALC %v", c.value, name, res.Reward, res.Metrics.ALC, want, c.alc)
			}
		}
	}
}
