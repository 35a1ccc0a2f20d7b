package reward

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
)

var formats = []string{"tool_call", "pythonic", "reason_tool"}

// randomRecord builds a record with 1–3 tools and 0–3 gold calls; gold
// calls carry every required argument.
func randomRecord(r *rand.Rand, i int) data.Record {
	langs := []string{"es", "fr", "it", "nl", "de", "pt", "en"}
	words := []string{"dólares", "dollars", "Madrid", "Londres", "London", "pollo asado", "roast chicken",
		"lunes", "Monday", "rojo", "red", "economy", "económica", "kip", "Brot", "pão", "caffè"}
	rec := data.Record{ID: fmt.Sprintf("r%d", i), Lang: langs[r.IntN(len(langs))],
		Messages: []data.Message{{Role: "user", Content: "please help"}}, Calls: []data.Call{}}
	nt := 1 + r.IntN(3)
	for t := 0; t < nt; t++ {
		np := r.IntN(4)
		var props, req []string
		for p := 0; p < np; p++ {
			typ := []string{"string", "number", "boolean"}[r.IntN(3)]
			props = append(props, fmt.Sprintf(`"p%d": {"type": %q}`, p, typ))
			if r.IntN(2) == 0 {
				req = append(req, fmt.Sprintf(`"p%d"`, p))
			}
		}
		params := fmt.Sprintf(`{"type": "object", "properties": {%s}, "required": [%s]}`, strings.Join(props, ", "), strings.Join(req, ", "))
		rec.Tools = append(rec.Tools, data.Tool{Name: fmt.Sprintf("tool_%d", t), Parameters: []byte(params)})
	}
	nc := r.IntN(4)
	for c := 0; c < nc; c++ {
		tool := rec.Tools[r.IntN(nt)]
		sc, _ := tool.Schema()
		call := data.Call{Name: tool.Name, Arguments: map[string]any{}}
		for _, p := range sc.Properties {
			if !sc.IsRequired(p.Name) && r.IntN(2) == 0 {
				continue
			}
			switch p.Schema.Type[0] {
			case "string":
				call.Arguments[p.Name] = words[r.IntN(len(words))]
			case "number":
				call.Arguments[p.Name] = float64(r.IntN(100))
			default:
				call.Arguments[p.Name] = r.IntN(2) == 0
			}
		}
		rec.Calls = append(rec.Calls, call)
	}
	return rec
}

// mutate returns a random prediction derived from the gold calls.
func mutate(r *rand.Rand, rec *data.Record) []data.Call {
	words := []string{"dólares", "dollars", "Madrid", "Londres", "pollo", "chicken", "lunes", "Monday", "Rojo", "ROJO"}
	var out []data.Call
	for _, g := range rec.Calls {
		if r.IntN(6) == 0 {
			continue // drop the call
		}
		c := data.Call{Name: g.Name, Arguments: map[string]any{}}
		if r.IntN(8) == 0 {
			c.Name = rec.Tools[r.IntN(len(rec.Tools))].Name
		}
		for k, v := range g.Arguments {
			switch r.IntN(8) {
			case 0: // drop
			case 1:
				c.Arguments[k] = words[r.IntN(len(words))]
			case 2:
				c.Arguments[k] = fmt.Sprint(v) // numeric string / stringified bool
			case 3:
				if s, ok := v.(string); ok {
					c.Arguments[k] = strings.ToUpper(s)
				} else {
					c.Arguments[k] = v
				}
			default:
				c.Arguments[k] = v
			}
		}
		if r.IntN(8) == 0 {
			c.Arguments["extra"] = "x"
		}
		out = append(out, c)
	}
	if r.IntN(8) == 0 {
		out = append(out, data.Call{Name: rec.Tools[0].Name, Arguments: map[string]any{}})
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestHierarchyProperty: over many random predictions, in every format,
// FCM ≤ ALC ≤ ACA ≤ TSA ≤ TID turn by turn, FCM agrees with paper 001's
// exact match, and every reward stays in its range.
func TestHierarchyProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	rewards := map[string]Reward{}
	counts := map[string]int{}
	for _, fname := range formats {
		for _, name := range []string{"rm1", "rm2", "rm3", "decomposed", "binary"} {
			rewards[fname+"/"+name] = getReward(t, name, func(c *Config) { c.Format = fname })
		}
	}
	const n = 3000
	for i := 0; i < n; i++ {
		rec := randomRecord(r, i)
		fname := formats[r.IntN(len(formats))]
		f, err := format.Get(fname, format.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var text string
		switch r.IntN(10) {
		case 0:
			text = "<tool_call>{" // malformed in every format
		case 1:
			text = f.Render(rec.Calls, rec.Tools) // the gold itself
		default:
			text = f.Render(mutate(r, &rec), rec.Tools)
		}
		res, err := rewards[fname+"/rm3"].Score(ctx, &rec, text)
		if err != nil {
			t.Fatal(err)
		}
		o := res.Outcome
		l := o.Levels
		if (l.FCM && !l.ALC) || (l.ALC && !l.ACA) || (l.ACA && !l.TSA) || (l.TSA && !l.TID) {
			t.Fatalf("record %d (%s): hierarchy broken %+v for %q", i, fname, l, text)
		}
		if l.FCM != o.Exact {
			t.Fatalf("record %d (%s): FCM %v but exact match %v for %q", i, fname, l.FCM, o.Exact, text)
		}
		for _, lv := range []struct {
			name string
			ok   bool
		}{{"tid", l.TID}, {"tsa", l.TSA}, {"aca", l.ACA}, {"alc", l.ALC}, {"fcm", l.FCM}} {
			if lv.ok {
				counts[lv.name]++
			}
		}
		for _, name := range []string{"rm1", "rm2", "decomposed", "binary"} {
			rr, err := rewards[fname+"/"+name].Score(ctx, &rec, text)
			if err != nil {
				t.Fatal(err)
			}
			if !inRange(name, rr.Reward) {
				t.Fatalf("record %d: %s = %v out of range", i, name, rr.Reward)
			}
			if rr.Metrics != l {
				t.Fatalf("record %d: %s metrics %+v differ from rm3's %+v", i, name, rr.Metrics, l)
			}
			checkTerms(t, i, name, rr)
		}
		if !inRange("rm3", res.Reward) {
			t.Fatalf("record %d: rm3 = %v out of range", i, res.Reward)
		}
		checkTerms(t, i, "rm3", res)
	}
	t.Logf("%d random turns: TID %d TSA %d ACA %d ALC %d FCM %d", n, counts["tid"], counts["tsa"], counts["aca"], counts["alc"], counts["fcm"])
	for _, k := range []string{"tid", "tsa", "aca", "alc", "fcm"} {
		if counts[k] == 0 || counts[k] == n {
			t.Errorf("level %s passed on %d of %d turns: the generator does not exercise it", k, counts[k], n)
		}
	}
}

// checkTerms: a reward's Terms add up to it (adv.per_part), and the rm
// rewards put it in "gate" exactly when ACA fails, in "args" when it passes.
func checkTerms(t *testing.T, i int, name string, r *Result) {
	t.Helper()
	keys := map[string][]string{"rm1": {"args", "gate"}, "rm2": {"args", "gate"}, "rm3": {"args", "gate"},
		"decomposed": {"args", "extra_calls", "fmt", "name", "rest"}, "binary": {"exact"}}[name]
	var sum float64
	for _, k := range keys {
		v, ok := r.Terms[k]
		if !ok {
			t.Fatalf("record %d: %s: term %q missing from %v", i, name, k, r.Terms)
		}
		sum += v
	}
	if len(r.Terms) != len(keys) || math.Abs(sum-r.Reward) > 1e-12 {
		t.Fatalf("record %d: %s: terms %v sum to %v, reward %v", i, name, r.Terms, sum, r.Reward)
	}
	if len(keys) == 2 && keys[1] == "gate" {
		if want := map[bool]string{true: "args", false: "gate"}[r.Metrics.ACA]; r.Terms[want] != r.Reward {
			t.Fatalf("record %d: %s: ACA %v but terms %v (reward %v)", i, name, r.Metrics.ACA, r.Terms, r.Reward)
		}
	}
}

func inRange(name string, v float64) bool {
	switch name {
	case "rm1":
		return v == 2 || v == 0 || v == -1
	case "rm2":
		return v == -1 || v == -0.5 || v == 0.5 || v == 1 || v == 1.5 || v == 2
	case "rm3":
		return v == -1 || v == -0.5 || v == 0.5 || (v >= 1 && v <= 2.5)
	case "binary":
		return v == 0 || v == 1
	}
	return v >= 0 && v <= 1
}

// TestBFCLConversion feeds each converted BFCL sample record its own gold
// calls, rendered in each output format: FCM = 1.0 on all. Changing one
// argument value, or dropping one call, fails FCM for that record only.
func TestBFCLConversion(t *testing.T) {
	dir := filepath.Join("..", "data", "testdata", "bfcl")
	var recs []data.Record
	for _, cat := range []string{"simple", "multiple", "parallel", "parallel_multiple", "irrelevance"} {
		q := filepath.Join(dir, "BFCL_v3_"+cat+".json")
		opts := data.ImportOptions{Lang: "en"}
		if cat != "irrelevance" {
			opts.Answers = filepath.Join(dir, "possible_answer", "BFCL_v3_"+cat+".json")
		}
		rs, _, err := data.ImportBFCL(q, opts)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rs...)
	}
	if len(recs) < 5 {
		t.Fatalf("only %d BFCL records", len(recs))
	}
	ctx := context.Background()
	for _, fname := range formats {
		c := DefaultConfig()
		c.Format = fname
		s, err := NewScorer(c)
		if err != nil {
			t.Fatal(err)
		}
		texts := make([]string, len(recs))
		for i := range recs {
			texts[i] = s.Format.Render(recs[i].Calls, recs[i].Tools)
		}
		rep, outs, err := s.Evaluate(ctx, recs, texts)
		if err != nil {
			t.Fatal(err)
		}
		if rep.FCM != 1 || rep.ExactMatch != 1 {
			for i, o := range outs {
				if !o.Levels.FCM {
					t.Errorf("%s: %s gold rendered as %q fails at %s", fname, recs[i].ID, texts[i], o.Gate)
				}
			}
			t.Fatalf("%s: gold predictions give FCM %v, exact %v", fname, rep.FCM, rep.ExactMatch)
		}
		for i := range recs {
			if len(recs[i].Calls) == 0 {
				continue
			}
			for _, kind := range []string{"value", "drop"} {
				calls := cloneCalls(recs[i].Calls)
				switch kind {
				case "value":
					if !changeOneValue(calls) {
						continue
					}
				case "drop":
					calls = calls[1:]
				}
				mod := append([]string(nil), texts...)
				mod[i] = s.Format.Render(calls, recs[i].Tools)
				_, outs, err := s.Evaluate(ctx, recs, mod)
				if err != nil {
					t.Fatal(err)
				}
				for j, o := range outs {
					if want := j != i; o.Levels.FCM != want {
						t.Errorf("%s: %s of %s: record %s FCM %v, want %v", fname, kind, recs[i].ID, recs[j].ID, o.Levels.FCM, want)
					}
				}
			}
		}
	}
}

func cloneCalls(cs []data.Call) []data.Call {
	out := make([]data.Call, len(cs))
	for i, c := range cs {
		out[i] = data.Call{Name: c.Name, Arguments: map[string]any{}}
		for k, v := range c.Arguments {
			out[i].Arguments[k] = v
		}
	}
	return out
}

// changeOneValue alters the first argument (by name) of the first call
// that has one, to a value no accept list holds.
func changeOneValue(cs []data.Call) bool {
	for _, c := range cs {
		for _, k := range sortedKeys(c.Arguments) {
			switch v := c.Arguments[k].(type) {
			case string:
				c.Arguments[k] = v + " (changed)"
			case float64:
				c.Arguments[k] = v*7 + 13
			case bool:
				c.Arguments[k] = !v
			default:
				c.Arguments[k] = "changed"
			}
			return true
		}
	}
	return false
}
