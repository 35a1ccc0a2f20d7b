package format

import (
	"reflect"
	"testing"

	"github.com/argrl/argrl/data"
)

// TestBFCLGoldRoundTrip renders every converted BFCL sample record's gold
// calls in each format and parses them back: the parse must be valid and
// give back exactly the gold calls (names, values) with spans on the values.
// This is what issue 4's "own gold scores FCM = 1" test builds on.
func TestBFCLGoldRoundTrip(t *testing.T) {
	var recs []data.Record
	for _, cat := range []string{"simple", "multiple", "parallel", "parallel_multiple", "irrelevance"} {
		q := "../testdata/bfcl/BFCL_v3_" + cat + ".json"
		a := "../testdata/bfcl/possible_answer/BFCL_v3_" + cat + ".json"
		if cat == "irrelevance" {
			a = ""
		}
		r, _, err := data.Import("bfcl", q, data.ImportOptions{Answers: a})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r...)
	}
	if len(recs) != 11 {
		t.Fatalf("%d records", len(recs))
	}
	for _, f := range allFormats(t) {
		for _, r := range recs {
			text := f.Render(r.Calls, r.Tools)
			p := f.Parse(text)
			if !p.Valid {
				t.Fatalf("%s %s: invalid: %s\n%s", f.Name(), r.ID, p.Err, text)
			}
			if len(r.Calls) == 0 {
				if !p.NoCall || len(p.Calls) != 0 {
					t.Errorf("%s %s: gold no-call renders %q, parsed %+v", f.Name(), r.ID, text, p)
				}
				continue
			}
			if p.NoCall || len(p.Calls) != len(r.Calls) {
				t.Fatalf("%s %s: %d calls parsed, want %d", f.Name(), r.ID, len(p.Calls), len(r.Calls))
			}
			for i, c := range p.Calls {
				if c.Name != r.Calls[i].Name || !reflect.DeepEqual(c.Arguments, r.Calls[i].Arguments) {
					t.Errorf("%s %s call %d: got %s %#v, want %s %#v", f.Name(), r.ID, i, c.Name, c.Arguments, r.Calls[i].Name, r.Calls[i].Arguments)
				}
				for k, v := range r.Calls[i].Arguments {
					checkSpan(t, f, text, c.ArgSpans[k], v)
				}
			}
		}
	}
}
