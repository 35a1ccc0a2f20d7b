package synth

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
)

// TestGoldLanguage checks every gold value against the lexicon and the
// translation protocol: free-form and "as written" values are the lexicon
// entry in the record's language (base corpus: that or English), "in
// English" entities the English name, enums the enum value of the word the
// user said, and everything else copied from the utterance.
func TestGoldLanguage(t *testing.T) {
	cfg := smallConfig()
	_, _, files := generateFiles(t, cfg)
	apis := apiByName()
	for name, recs := range files {
		base := name == "base.jsonl"
		english, distinguishing := 0, 0
		for _, r := range recs {
			eng, dist, err := checkGold(r, apis, base)
			if err != nil {
				t.Fatalf("%s: record %s: %v\n  utterance: %s", name, r.ID, err, r.Messages[0].Content)
			}
			if dist {
				distinguishing++
				if eng {
					english++
				}
			}
		}
		if !base {
			continue
		}
		share := float64(english) / float64(distinguishing)
		t.Logf("base corpus: %d/%d non-English records with user-language values write them in English (%.3f)", english, distinguishing, share)
		if math.Abs(share-cfg.BaseEnglish) > 0.07 {
			t.Errorf("base corpus English share %.3f, want %.2f ± 0.07", share, cfg.BaseEnglish)
		}
	}
}

// checkGold returns whether the record's user-language values are written
// in English (eng) and whether it has a value that tells (dist: a
// user-language value whose translation differs from English, in a
// non-English record).
func checkGold(r data.Record, apis map[string]*API, base bool) (eng, dist bool, err error) {
	li := langIndex(r.Lang)
	if li < 0 {
		return false, false, fmt.Errorf("unknown language %q", r.Lang)
	}
	utt := r.Messages[len(r.Messages)-1].Content
	sawEng, sawUser := false, false
	for _, c := range r.Calls {
		api := apis[c.Name]
		if api == nil {
			return false, false, fmt.Errorf("unknown API %s", c.Name)
		}
		for _, k := range sortedKeys(c.Arguments) {
			a, ok := api.arg(k)
			if !ok {
				return false, false, fmt.Errorf("%s: unknown argument %s", c.Name, k)
			}
			v := c.Arguments[k]
			s, isStr := v.(string)
			switch a.Kind {
			case Free, EntityUser:
				es, _ := builtin.category(a.Cat)
				e := find(es, func(e Entry) bool { return e.T[li] == s && strings.Contains(utt, s) })
				if e != nil {
					if e.T[li] != e.T[0] {
						sawUser = true
					}
					continue
				}
				e = find(es, func(e Entry) bool { return e.T[0] == s && strings.Contains(utt, e.T[li]) })
				if base && e != nil && r.Lang != "en" {
					sawEng = true
					continue
				}
				return false, false, fmt.Errorf("%s.%s = %q is not the %s lexicon value (category %s) the user said", c.Name, k, s, r.Lang, a.Cat)
			case EntityEnglish:
				es, _ := builtin.category(a.Cat)
				if find(es, func(e Entry) bool { return e.T[0] == s && strings.Contains(utt, e.T[li]) }) == nil {
					return false, false, fmt.Errorf("%s.%s = %q is not the English name of an entity the user said", c.Name, k, s)
				}
			case Enum:
				es, _ := builtin.category(a.Cat)
				if find(es, func(e Entry) bool { return e.Key == s && strings.Contains(utt, e.T[li]) }) == nil {
					return false, false, fmt.Errorf("%s.%s = %q is not the enum value of a word the user said", c.Name, k, s)
				}
			case Int:
				f, isNum := v.(float64)
				if !isNum || f != math.Trunc(f) || !strings.Contains(utt, strconv.Itoa(int(f))) {
					return false, false, fmt.Errorf("%s.%s = %v is not an integer copied from the utterance", c.Name, k, v)
				}
			default: // identifiers, dates, times
				if !isStr || !strings.Contains(utt, s) {
					return false, false, fmt.Errorf("%s.%s = %v is not copied from the utterance", c.Name, k, v)
				}
			}
		}
	}
	if sawEng && sawUser {
		return false, false, fmt.Errorf("mixes English and %s user-language values", r.Lang)
	}
	if !base && sawEng {
		return false, false, fmt.Errorf("English user-language values outside the base corpus")
	}
	return sawEng, r.Lang != "en" && (sawEng || sawUser), nil
}

func find(es []Entry, ok func(Entry) bool) *Entry {
	for i := range es {
		if ok(es[i]) {
			return &es[i]
		}
	}
	return nil
}

// TestGoldCallsValidate checks every gold call against its tool's JSON
// schema as the data package parses it: declared arguments only, every
// required one present, JSON types and enums respected.
func TestGoldCallsValidate(t *testing.T) {
	_, _, files := generateFiles(t, smallConfig())
	for name, recs := range files {
		for _, r := range recs {
			for i, c := range r.Calls {
				tool, ok := r.ToolByName(c.Name)
				if !ok {
					t.Fatalf("%s: %s: call %d to %s, not among the tools", name, r.ID, i, c.Name)
				}
				if err := validateCall(tool, c); err != nil {
					t.Fatalf("%s: %s: call %d: %v", name, r.ID, i, err)
				}
			}
		}
	}
	// The check bites: a wrong type, an enum value outside the enum and a
	// missing required argument are all caught.
	api := apiByName()["search_flights"]
	tool := &data.Tool{Name: api.Name, Parameters: api.Parameters()}
	good := map[string]any{"origin": "Paris", "destination": "Rome", "date": "2025-03-01", "cabin": "business"}
	if err := validateCall(tool, data.Call{Name: api.Name, Arguments: good}); err != nil {
		t.Fatalf("valid call rejected: %v", err)
	}
	for _, mut := range []func(m map[string]any){
		func(m map[string]any) { m["date"] = 20250301.0 },
		func(m map[string]any) { m["cabin"] = "clase business" },
		func(m map[string]any) { delete(m, "origin") },
		func(m map[string]any) { m["seat"] = "12A" },
	} {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		mut(m)
		if err := validateCall(tool, data.Call{Name: api.Name, Arguments: m}); err == nil {
			t.Errorf("invalid call accepted: %v", m)
		}
	}
}

func validateCall(tool *data.Tool, c data.Call) error {
	s, err := tool.Schema()
	if err != nil {
		return err
	}
	for _, req := range s.Required {
		if _, ok := c.Arguments[req]; !ok {
			return fmt.Errorf("required %s missing", req)
		}
	}
	for _, k := range sortedKeys(c.Arguments) {
		v := c.Arguments[k]
		ps, ok := s.Property(k)
		if !ok {
			return fmt.Errorf("argument %s not declared", k)
		}
		f, isNum := v.(float64)
		_, isStr := v.(string)
		switch {
		case ps.HasType("string") && !isStr,
			ps.HasType("number") && !isNum,
			ps.HasType("integer") && (!isNum || f != math.Trunc(f)):
			return fmt.Errorf("argument %s = %v does not have type %v", k, v, ps.Type)
		}
		if len(ps.Enum) > 0 {
			in := false
			for _, e := range ps.Enum {
				in = in || e == v
			}
			if !in {
				return fmt.Errorf("argument %s = %v not in enum %v", k, v, ps.Enum)
			}
		}
	}
	return nil
}
