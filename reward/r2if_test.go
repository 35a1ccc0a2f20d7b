package reward

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

// fakeStudent is a deterministic student: with a reasoning that mentions
// "CA" every response is the gold call; otherwise (including no
// reasoning) only the first of the k responses is.
type fakeStudent struct {
	mu    sync.Mutex
	calls map[string]int // reasoning → number of Complete calls
	f     format.Format
}

func (s *fakeStudent) Complete(_ context.Context, rec *data.Record, reasoning string, k int) ([]string, error) {
	s.mu.Lock()
	s.calls[reasoning]++
	s.mu.Unlock()
	rt := s.f.(format.ReasonRenderer)
	good := rt.RenderWithReason(reasoning, rec.Calls, rec.Tools)
	bad := rt.RenderWithReason(reasoning, []data.Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}}, rec.Tools)
	out := make([]string, k)
	for i := range out {
		if i == 0 || strings.Contains(reasoning, "CA") {
			out[i] = good
		} else {
			out[i] = bad
		}
	}
	return out, nil
}

// containsSim is a test similarity: 1 when a contains b, else 0.
type containsSim struct{}

func (containsSim) Sim(_ context.Context, a, b string) (float64, error) {
	if b != "" && strings.Contains(a, b) {
		return 1, nil
	}
	return 0, nil
}

const weatherRecord = `{"id": "w1", "lang": "en",
  "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {
     "city": {"type": "string", "description": "City, State"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
     "required": ["city"]}},
   {"name": "get_time", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
  "messages": [{"role": "user", "content": "Weather in San Francisco in fahrenheit, and the time there?"}],
  "calls": [{"name": "get_weather", "arguments": {"city": "San Francisco, CA", "unit": "fahrenheit"}},
            {"name": "get_time", "arguments": {"city": "San Francisco, CA"}}],
  "smv": [{"city": {"spec": "format City, State", "mod": "add the state CA"}, "unit": {"spec": "celsius or fahrenheit", "mod": "user asked fahrenheit"}},
          {"city": {"spec": "format City, State", "mod": "add the state CA"}}]}`

func TestR2IF(t *testing.T) {
	rec := mustRecord(t, weatherRecord)
	f, err := format.Get("reason_tool", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &fakeStudent{calls: map[string]int{}, f: f}
	r := getReward(t, "r2if", func(c *Config) {
		c.Format = "reason_tool"
		c.Student = st
		c.Similarity = containsSim{}
	})
	ctx := context.Background()
	rt := f.(format.ReasonRenderer)

	// Reasoning covering city's spec and mod, and unit's spec only; the
	// snippet of an argument is the sentences that name it.
	reasoning := "For the city, format City, State is needed; for the city I add the state CA. The unit is celsius or fahrenheit."
	full := rt.RenderWithReason(reasoning, rec.Calls, rec.Tools)
	res, err := r.Score(ctx, &rec, full)
	if err != nil {
		t.Fatal(err)
	}
	// CER: v = 4/4 (reasoning mentions CA), v_base = 1/4.
	// SMV: get_weather: city (1+1+1)/3, unit (1+0+1)/3 → 5/6; get_time: city 1 → mean (5/6+1)/2.
	wantSMV := (5.0/6 + 1) / 2
	if !near(res.Parts["binary"], 1) || !near(res.Parts["cer"], 0.75) || !near(res.Parts["smv"], wantSMV) {
		t.Errorf("parts %v, want binary 1, cer 0.75, smv %v", res.Parts, wantSMV)
	}
	if want := 3 + 0.75 + wantSMV; !near(res.Reward, want) {
		t.Errorf("reward %v, want %v", res.Reward, want)
	}
	// The terms (adv.per_part) are the weighted parts: w_binary 3, w_cer 1, w_smv 1.
	if tm := res.Terms; len(tm) != 3 || !near(tm["binary"], 3) || !near(tm["cer"], 0.75) || !near(tm["smv"], wantSMV) {
		t.Errorf("terms %v, want binary 3, cer 0.75, smv %v", tm, wantSMV)
	}

	// One gold call missing: not correct; SMV counts the missing call 0.
	half := rt.RenderWithReason(reasoning, rec.Calls[:1], rec.Tools)
	res, err = r.Score(ctx, &rec, half)
	if err != nil {
		t.Fatal(err)
	}
	if !near(res.Parts["binary"], 0) || !near(res.Parts["smv"], 5.0/12) || !near(res.Reward, 0.75+5.0/12) {
		t.Errorf("half: reward %v parts %v, want binary 0, smv %v", res.Reward, res.Parts, 5.0/12)
	}

	// A reasoning that does not help the student: CER = 1/4 − 1/4 = 0.
	res, err = r.Score(ctx, &rec, rt.RenderWithReason("I will call the tools.", rec.Calls, rec.Tools))
	if err != nil {
		t.Fatal(err)
	}
	if !near(res.Parts["cer"], 0) || !near(res.Parts["smv"], 1.0/3) {
		t.Errorf("unhelpful: parts %v, want cer 0, smv 1/3", res.Parts)
	}
	// v_base was computed once for the record, then cached.
	if st.calls[""] != 1 {
		t.Errorf("student ran without reasoning %d times, want 1 (v_base cached)", st.calls[""])
	}

	// Irrelevance: SMV is sim(reasoning, reject_reason); correct only with
	// the rejection string.
	irr := mustRecord(t, `{"id": "irr", "lang": "en", "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
	  "messages": [{"role": "user", "content": "Sing a song"}], "calls": [], "reject_reason": "no tool sings"}`)
	res, err = r.Score(ctx, &irr, rt.RenderWithReason("Sadly no tool sings songs.", nil, irr.Tools))
	if err != nil {
		t.Fatal(err)
	}
	if !near(res.Parts["binary"], 1) || !near(res.Parts["smv"], 1) {
		t.Errorf("irrelevance: parts %v, want binary 1, smv 1", res.Parts)
	}
	res, err = r.Score(ctx, &irr, `<reason>no tool sings</reason><tool>[]</tool>`)
	if err != nil {
		t.Fatal(err)
	}
	if !near(res.Parts["binary"], 0) {
		t.Errorf("irrelevance answered with [] instead of the rejection string: binary %v, want 0", res.Parts["binary"])
	}
}

func TestR2IFNeedsStudent(t *testing.T) {
	c := DefaultConfig()
	c.Format = "reason_tool"
	if _, err := Get("r2if", c); err == nil || !strings.Contains(err.Error(), "student") {
		t.Fatalf("r2if without a student: err %v, want one naming the student", err)
	}
	c.R2IF.WCER = 0
	if _, err := Get("r2if", c); err != nil {
		t.Fatalf("r2if with w_cer 0: %v", err)
	}
}

func TestGetUnknown(t *testing.T) {
	_, err := Get("rm4", DefaultConfig())
	if err == nil {
		t.Fatal("no error for an unknown reward")
	}
	for _, n := range []string{"binary", "decomposed", "r2if", "rm1", "rm2", "rm3"} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
	c := DefaultConfig()
	c.Judge = "oracle"
	if _, err := Get("rm3", c); err == nil || !strings.Contains(err.Error(), "builtin") {
		t.Errorf("unknown judge: err %v, want one listing builtin", err)
	}
	c = DefaultConfig()
	c.Format = "xml"
	if _, err := Get("rm3", c); err == nil || !strings.Contains(err.Error(), "tool_call") {
		t.Errorf("unknown format: err %v, want one listing tool_call", err)
	}
}

// r2if reads the <reason> block: another format would score every response
// without its reasoning, so it is refused.
func TestR2IFNeedsReasonTool(t *testing.T) {
	for _, f := range []string{"", "tool_call", "pythonic"} {
		c := DefaultConfig()
		c.Format, c.R2IF.WCER = f, 0
		_, err := Get("r2if", c)
		if err == nil || !strings.Contains(err.Error(), "reason_tool") {
			t.Errorf("format %q: err %v, want one naming reason_tool", f, err)
		}
	}
}
