package data

import (
	"fmt"
	"math"
	"testing"
)

// synthRecords builds n records over nAPI APIs; every 7th record has a
// second call (linking two APIs), every 11th has no call.
func synthRecords(n, nAPI int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		var calls []Call
		if i%11 != 5 {
			calls = append(calls, Call{Name: fmt.Sprintf("api_%02d", i%nAPI), Arguments: map[string]any{}})
			if i%7 == 3 {
				calls = append(calls, Call{Name: fmt.Sprintf("api_%02d", (i%nAPI)^1), Arguments: map[string]any{}})
			}
		}
		recs[i] = Record{ID: fmt.Sprintf("r%04d", i), Calls: calls}
	}
	return recs
}

func assignment(recs []Record) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		m[r.ID] = r.Split
	}
	return m
}

func TestSplitDeterministic(t *testing.T) {
	for _, mode := range []string{SplitRandom, SplitLearnability, SplitGeneralization} {
		cfg := SplitConfig{Mode: mode, Seed: 7, Validation: 0.1, Test: 0.2, Overlap: -1}
		a := synthRecords(400, 40)
		if _, err := Split(a, cfg); err != nil {
			t.Fatal(err)
		}
		// Same seed, reversed input order: same assignment.
		b := synthRecords(400, 40)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		if _, err := Split(b, cfg); err != nil {
			t.Fatal(err)
		}
		ma, mb := assignment(a), assignment(b)
		for id, s := range ma {
			if s == "" || mb[id] != s {
				t.Fatalf("%s: %s is %q then %q", mode, id, s, mb[id])
			}
		}
		// Another seed: a different assignment.
		c := synthRecords(400, 40)
		cfg.Seed = 8
		Split(c, cfg)
		diff := 0
		for id, s := range assignment(c) {
			if ma[id] != s {
				diff++
			}
		}
		if diff == 0 {
			t.Errorf("%s: seed has no effect", mode)
		}
	}
}

func TestSplitRandomFractions(t *testing.T) {
	recs := synthRecords(1000, 40)
	rep, err := Split(recs, SplitConfig{Mode: SplitRandom, Seed: 1, Validation: 0.1, Test: 0.15})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Validation != 100 || rep.Test != 150 || rep.Train != 750 {
		t.Errorf("sizes %+v", rep)
	}
}

func TestSplitOverlap(t *testing.T) {
	const n = 600
	cases := []struct {
		mode    string
		overlap float64
		lo, hi  float64
	}{
		{SplitLearnability, -1, 1, 1},
		{SplitGeneralization, -1, 0, 0},
		{SplitLearnability, 0.5, 0.4, 0.6},
		{SplitGeneralization, 0.06, 0, 0.15},
	}
	for _, c := range cases {
		recs := synthRecords(n, 60)
		rep, err := Split(recs, SplitConfig{Mode: c.mode, Seed: 3, Validation: 0.1, Test: 0.2, Overlap: c.overlap})
		if err != nil {
			t.Fatal(err)
		}
		train, val, test := BySplit(recs)
		// The report agrees with an independent measurement.
		if got := APIOverlap(train, test); got != rep.TestOverlap {
			t.Errorf("report %v, measured %v", rep.TestOverlap, got)
		}
		all := APIOverlap(train, append(val, test...)).Fraction()
		if all < c.lo || all > c.hi {
			t.Errorf("%s target %v: overlap %.3f outside [%v, %v] (%s)", c.mode, c.overlap, all, c.lo, c.hi, rep)
		}
		evalN := rep.Validation + rep.Test
		withCalls := 0
		for _, r := range recs {
			if len(r.Calls) > 0 {
				withCalls++
			}
		}
		if want := 0.3*float64(withCalls) + 0.3*float64(n-withCalls); math.Abs(float64(evalN)-want) > 25 { // groups of ~18 records move whole
			t.Errorf("%s: %d evaluation records, want about %.0f (%s)", c.mode, evalN, want, rep)
		}
		t.Logf("%s target %v: %s", c.mode, c.overlap, rep)
	}
}

func TestAPIOverlapDefinition(t *testing.T) {
	mk := func(names ...string) Record {
		r := Record{}
		for _, n := range names {
			r.Calls = append(r.Calls, Call{Name: n})
		}
		return r
	}
	train := []Record{mk("a"), mk("b", "c")}
	eval := []Record{mk("a"), mk("d"), mk("d", "c"), mk()}
	o := APIOverlap(train, eval)
	if o.Records != 3 || o.Overlapping != 2 || math.Abs(o.Fraction()-2.0/3) > 1e-12 {
		t.Errorf("overlap %+v", o)
	}
}

func TestSplitErrors(t *testing.T) {
	recs := synthRecords(10, 3)
	for _, cfg := range []SplitConfig{{Mode: "random", Validation: 0.6, Test: 0.5}, {Mode: "weird"}, {Mode: SplitLearnability, Overlap: 2}} {
		if _, err := Split(recs, cfg); err == nil {
			t.Errorf("Split(%+v) should fail", cfg)
		}
	}
}

// One API everywhere: nothing can be held out, so a generalization split
// keeps training data and reports the overlap it could not avoid.
func TestSplitSingleGroup(t *testing.T) {
	recs := make([]Record, 50)
	for i := range recs {
		recs[i] = Record{ID: fmt.Sprintf("r%d", i), Calls: []Call{{Name: "only"}}}
	}
	rep, err := Split(recs, SplitConfig{Mode: SplitGeneralization, Validation: 0.1, Test: 0.1, Overlap: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Train != 40 || rep.Validation+rep.Test != 10 || rep.TestOverlap.Fraction() != 1 {
		t.Errorf("single group: %s", rep)
	}
}
