package reward

import (
	"context"
	"math"
	"testing"

	"github.com/argrl/argrl/data/format"
)

// TestACEHandComputed: three responses to the weather record with the
// fake student (4 responses; all correct when the reasoning mentions "CA",
// otherwise only the first): v_base = 1/4.
//
//	reasoning naming CA      v = 4/4   CER = 0.75
//	reasoning without it     v = 1/4   CER = 0
//	no reasoning at all                CER = 0 (counted, empty)
//
// ACE = 0.75/3 = 0.25; sample sd = sqrt(((0.5)² + 2·(0.25)²)/2) = sqrt(0.1875);
// SE = sd/√3 = 0.25.
func TestACEHandComputed(t *testing.T) {
	rec := mustRecord(t, weatherRecord)
	f, err := format.Get("reason_tool", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &fakeStudent{calls: map[string]int{}, f: f}
	c := DefaultConfig()
	c.Format, c.Student, c.Similarity = "reason_tool", st, containsSim{}
	a, err := NewACE(c)
	if err != nil {
		t.Fatal(err)
	}
	rt := f.(format.ReasonRenderer)
	ctx := context.Background()
	for _, reasoning := range []string{"The city needs its state, CA.", "I will call the tools.", ""} {
		if err := a.Add(ctx, &rec, rt.RenderWithReason(reasoning, rec.Calls, rec.Tools)); err != nil {
			t.Fatal(err)
		}
	}
	rep := a.Report()
	if rep.N != 3 || rep.Empty != 1 || math.Abs(rep.ACE-0.25) > 1e-12 || math.Abs(rep.SE-0.25) > 1e-12 {
		t.Errorf("ACE %+v, want ace 0.25, se 0.25, n 3, empty 1", rep)
	}
	c.Student = nil
	if _, err := NewACE(c); err == nil {
		t.Errorf("ACE without a student: no error")
	}
}
