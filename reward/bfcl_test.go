package reward

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
)

// bfclRecords imports one category of data/testdata/bfcl/v4 (entries
// written in BFCL v4's formats for the importer's tests).
func bfclRecords(t *testing.T, cat string, answers bool) map[string]*data.Record {
	t.Helper()
	opts := data.ImportOptions{}
	if answers {
		opts.Answers = "../data/testdata/bfcl/v4/possible_answer/BFCL_v4_" + cat + ".json"
	}
	recs, _, err := data.Import("bfcl", "../data/testdata/bfcl/v4/BFCL_v4_"+cat+".json", opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*data.Record{}
	for i := range recs {
		out[recs[i].ID] = &recs[i]
	}
	return out
}

func TestBFCLReward(t *testing.T) {
	recs := map[string]*data.Record{}
	for cat, answers := range map[string]bool{"simple_python": true, "simple_java": true, "parallel_multiple": true, "irrelevance": false, "live_relevance": false} {
		for id, r := range bfclRecords(t, cat, answers) {
			recs[id] = r
		}
	}
	tc := func(s string) string { return "<tool_call>" + s + "</tool_call>" }
	cases := []struct {
		format, id, text, gate string // gate "valid" or the checker's error type
	}{
		// JSON numbers keep int vs float from the text: a float list needs floats.
		{"tool_call", "simple_python_0", tc(`{"name": "weighted_mean", "arguments": {"values": [1.0, 2.5, 4.0], "digits": 2}}`), "valid"},
		{"tool_call", "simple_python_0", tc(`{"name": "weighted_mean", "arguments": {"values": [1, 2.5, 4]}}`), "type_error:nested"},
		{"tool_call", "simple_python_0", tc(`{"name": "weighted_mean", "arguments": {"values": [1.0, 2.5, 4.0], "digits": 2.0}}`), "type_error:simple"},
		{"tool_call", "simple_python_0", tc(`{"name": "weighted_mean", "arguments": {"values": [1.0, 2.5, 4.0], "digits": "2"}}`), "type_error:simple"},
		// pythonic keeps Python's types too: a tuple only where a tuple is declared.
		{"pythonic", "simple_python_0", `[weighted_mean(values=[1.0, 2.5, 4.0], weights=(0.2, 0.3, 0.5))]`, "valid"},
		{"pythonic", "simple_python_0", `[weighted_mean(values=(1.0, 2.5, 4.0))]`, "type_error:simple"},
		{"tool_call", "simple_python_0", tc(`{"name": "weighted_mean", "arguments": {"values": [1.0, 2.5, 4.0]`), "ast_decoder:decoder_failed"},
		{"tool_call", "simple_python_0", "The mean is 3.", "simple_function_checker:wrong_count"},
		// Java arguments are Java literals in strings.
		{"tool_call", "simple_java_0", tc(`{"name": "CacheConfig.build", "arguments": {"name": "users", "maxEntries": "5000L", "loadFactor": "0.75f", "persistent": "true", "options": "new HashMap<>() {{ put(\"shards\", 4); put(\"eviction\", \"lru\"); }}", "regions": "new ArrayList<>(Arrays.asList(\"eu\", \"us\"))", "keys": "new String[]{id}", "owner": "authService"}}`), "valid"},
		{"tool_call", "simple_java_0", tc(`{"name": "CacheConfig.build", "arguments": {"name": "users", "maxEntries": 5000}}`), "type_error:java"},
		// parallel_multiple_12's quirk, as the checker has it.
		{"reason_tool", "parallel_multiple_0", `<reason>r</reason><tool>[{"name": "compute_escape", "arguments": {"mass": 6e24, "radius": 6400000.0}}, {"name": "compute_orbit", "arguments": {"mass": 6e24, "radius": 7e6}}]</tool>`, "valid"},
		{"tool_call", "parallel_multiple_0", tc(`[{"name": "compute_orbit", "arguments": {"mass": 6e24, "radius": 7e6}}, {"name": "compute_escape", "arguments": {"mass": 6e24, "radius": 6.4e6, "drag": 0.2}}]`), "parallel_function_checker_no_order:cannot_find_match"},
		{"tool_call", "irrelevance_0", "Lima.", "valid"},
		{"tool_call", "irrelevance_0", tc(`{"name": "weighted_mean", "arguments": {}}`), "irrelevance_error:decoder_success"},
		{"tool_call", "live_relevance_0-0-0", tc(`{"name": "search_flights", "arguments": {"origin": "BGO"}}`), "valid"},
		{"tool_call", "live_relevance_0-0-0", "Sure!", "relevance_error:decoder_failed"},
	}
	for _, c := range cases {
		rw, err := Get("bfcl", Config{Format: c.format})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rw.Score(context.Background(), recs[c.id], c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		want := 0.0
		if c.gate == "valid" {
			want = 1
		}
		if res.Reward != want || res.Gate != c.gate || res.Parts["valid"] != want || (want == 0 && res.Parts[c.gate] != 1) ||
			len(res.Terms) != 1 || res.Terms["valid"] != want {
			t.Errorf("%s %s %q: reward %v gate %q parts %v terms %v, want %v %q", c.format, c.id, c.text, res.Reward, res.Gate, res.Parts, res.Terms, want, c.gate)
		}
	}
	// The gold calls, rendered, pass: the whole point of the Java literals.
	rw, _ := Get("bfcl", Config{})
	s, _ := NewScorer(Config{Format: "tool_call"})
	gold := recs["simple_java_0"]
	if res, _ := rw.Score(context.Background(), gold, s.Format.Render(gold.Calls, gold.Tools)); res.Reward != 1 {
		t.Errorf("rendered Java gold: %+v", res)
	}
	plain := &data.Record{ID: "x", Lang: "en", Tools: []data.Tool{}, Messages: []data.Message{{Role: "user", Content: "hi"}}, Calls: []data.Call{}}
	if _, err := rw.Score(context.Background(), plain, "hi"); err == nil || !strings.Contains(err.Error(), "bfcl") {
		t.Errorf("a record without a bfcl case: %v", err)
	}
}

func TestBFCLSummaryColumns(t *testing.T) {
	var a BFCLAggregate
	add := func(cat string, correct, total int) {
		for i := 0; i < total; i++ {
			v := BFCLVerdict{Valid: i < correct}
			if !v.Valid {
				v.ErrorType = "value_error:string"
			}
			a.Add(cat, v)
		}
	}
	add("simple_python", 3, 4)     // 0.75
	add("simple_java", 1, 2)       // 0.5
	add("simple_javascript", 1, 1) // 1
	add("multiple", 1, 2)          // 0.5
	add("parallel", 2, 2)          // 1
	add("parallel_multiple", 0, 1) // 0
	add("live_simple", 1, 2)
	add("live_multiple", 5, 6)
	add("live_parallel", 0, 1)
	add("live_parallel_multiple", 1, 1)
	add("irrelevance", 1, 4)      // 0.25
	add("live_irrelevance", 3, 4) // 0.75
	add("live_relevance", 1, 2)
	r := a.Report()
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-12 }
	simple := (0.75 + 0.5 + 1) / 3
	if !near(r.Summary.NonLiveSimple, simple) || !near(r.Summary.NonLive, (simple+0.5+1+0)/4) {
		t.Errorf("non-live: %v %v", *r.Summary.NonLiveSimple, *r.Summary.NonLive)
	}
	if !near(r.Summary.Live, 7.0/10) { // weighted by size: (1+5+0+1)/(2+6+1+1)
		t.Errorf("live: %v", *r.Summary.Live)
	}
	if !near(r.Summary.Irrelevance, 0.5) || !near(r.Summary.Relevance, 0.5) {
		t.Errorf("irrelevance %v relevance %v", *r.Summary.Irrelevance, *r.Summary.Relevance)
	}
	if s := r.Categories["simple_python"]; s.Correct != 3 || s.Total != 4 || s.Errors["value_error:string"] != 1 {
		t.Errorf("simple_python: %+v", s)
	}
	tab := r.Table()
	for _, w := range []string{"simple_python", "75.00%", "Non-Live AST Acc", "Live Acc", "70.00%", "Irrelevance Detection", "Relevance Detection"} {
		if !strings.Contains(tab, w) {
			t.Errorf("table lacks %q:\n%s", w, tab)
		}
	}
	// A missing category leaves its summary columns empty (N/A).
	var b BFCLAggregate
	b.Add("simple_python", BFCLVerdict{Valid: true})
	rb := b.Report()
	if rb.Summary.NonLive != nil || rb.Summary.Live != nil || rb.Summary.Irrelevance != nil || !strings.Contains(rb.Table(), "N/A") {
		t.Errorf("partial summary %+v", rb.Summary)
	}
	// ... and the table says why, with the value over what was evaluated
	// (simple_python alone is not "N/A" with nothing said).
	tb := rb.Table()
	for _, w := range []string{
		"Non-Live Simple AST", "N/A  (not evaluated: simple_java, simple_javascript; over the categories evaluated: 100.00%)",
		"(not evaluated: live_simple, live_multiple, live_parallel, live_parallel_multiple)",
	} {
		if !strings.Contains(tb, w) {
			t.Errorf("partial table lacks %q:\n%s", w, tb)
		}
	}
	if m := rb.Missing["non_live_simple"]; strings.Join(m, ",") != "simple_java,simple_javascript" || rb.Partial["non_live_simple"] != 1 {
		t.Errorf("missing %v partial %v", rb.Missing, rb.Partial)
	}
	if _, ok := rb.Partial["live"]; ok || len(r.Missing) != 0 {
		t.Errorf("partial %v; the complete report's missing %v", rb.Partial, r.Missing)
	}
}
