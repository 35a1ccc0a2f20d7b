package data

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func bfcl(cat string) (string, string) {
	return "testdata/bfcl/BFCL_v3_" + cat + ".json", "testdata/bfcl/possible_answer/BFCL_v3_" + cat + ".json"
}

func mustImport(t *testing.T, from, path string, opts ImportOptions) ([]Record, ImportStats) {
	t.Helper()
	recs, st, err := Import(from, path, opts)
	if err != nil {
		t.Fatalf("Import(%s, %s): %v", from, path, err)
	}
	// Whatever an importer returns must write and read back cleanly.
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if err := WriteFile(out, recs); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	back, err := ReadFile(out)
	if err != nil || len(back) != len(recs) {
		t.Fatalf("ReadFile after import: %d records, %v", len(back), err)
	}
	return recs, st
}

func names(calls []Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Name)
	}
	return out
}

func TestImportBFCL(t *testing.T) {
	counts := map[string][2]int{"simple": {3, 1}, "multiple": {2, 1}, "parallel": {2, 2}, "parallel_multiple": {2, 2}}
	for cat, want := range counts {
		q, a := bfcl(cat)
		recs, st := mustImport(t, "bfcl", q, ImportOptions{Answers: a})
		if len(recs) != want[0] || st.Items != want[0] {
			t.Errorf("%s: %d records from %d items", cat, len(recs), st.Items)
		}
		for _, r := range recs {
			if len(r.Calls) != want[1] || len(r.Accept) != len(r.Calls) || r.Lang != "en" {
				t.Errorf("%s %s: %d calls, %d accept", cat, r.ID, len(r.Calls), len(r.Accept))
			}
		}
	}
	q, a := bfcl("simple")
	recs, _ := mustImport(t, "bfcl", q, ImportOptions{Answers: a, Lang: "es"})
	r := recs[2]
	wantArgs := map[string]any{"school": "Lakeside College", "filters": map[string]any{"department": "physics", "min_age": 21.0}, "limit": 10.0}
	if r.ID != "simple_2" || r.Lang != "es" || !reflect.DeepEqual(r.Calls[0].Arguments, wantArgs) {
		t.Errorf("simple_2 gold = %#v", r.Calls[0].Arguments)
	}
	if !reflect.DeepEqual(r.Accept[0]["columns"], []any{"", []any{"name"}}) ||
		!reflect.DeepEqual(r.Accept[0]["filters"], []any{map[string]any{"department": "physics", "min_age": 21.0}}) {
		t.Errorf("simple_2 accept = %#v", r.Accept[0])
	}
	s, _ := r.Tools[0].Schema()
	if f, _ := s.Property("filters"); !f.HasType("object") || !reflect.DeepEqual(f.PropertyNames(), []string{"department", "min_age"}) {
		t.Errorf("dict not normalized to object: %+v", f)
	}
	if c, _ := s.Property("columns"); !c.HasType("array") {
		t.Errorf("tuple not normalized to array")
	}
	// An optional argument whose first acceptable value is "" is omitted,
	// one whose first value is concrete is written.
	pq, pa := bfcl("parallel")
	precs, _ := mustImport(t, "bfcl", pq, ImportOptions{Answers: pa})
	if _, has := precs[1].Calls[0].Arguments["formal"]; has {
		t.Errorf("formal should be omitted: %#v", precs[1].Calls[0].Arguments)
	}
	if got := recs[0].Calls[0].Arguments["cooked"]; got != true {
		t.Errorf("cooked = %#v", got)
	}
	pmq, pma := bfcl("parallel_multiple")
	pm, _ := mustImport(t, "bfcl", pmq, ImportOptions{Answers: pma})
	if !reflect.DeepEqual(names(pm[1].Calls), []string{"flights.search", "hotels.search"}) || pm[1].Messages[0].Role != "system" {
		t.Errorf("parallel_multiple_1 = %+v", pm[1])
	}
	iq, _ := bfcl("irrelevance")
	irr, _ := mustImport(t, "bfcl", iq, ImportOptions{})
	if len(irr) != 2 || len(irr[0].Calls) != 0 || irr[0].Calls == nil {
		t.Errorf("irrelevance = %+v", irr)
	}
}

func TestImportBFCLErrors(t *testing.T) {
	q, _ := bfcl("simple")
	_, _, err := Import("bfcl", q, ImportOptions{})
	if err == nil || !strings.HasPrefix(err.Error(), q+":1: ") || !strings.Contains(err.Error(), "--answers") {
		t.Errorf("no answers: %v", err)
	}
	// An answer file lacking one id.
	dir := t.TempDir()
	_, a := bfcl("simple")
	raw, _ := os.ReadFile(a)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	short := filepath.Join(dir, "ans.json")
	os.WriteFile(short, []byte(lines[0]+"\n"+lines[2]+"\n"), 0o644)
	_, _, err = Import("bfcl", q, ImportOptions{Answers: short})
	if err == nil || !strings.HasPrefix(err.Error(), q+":2: ") || !strings.Contains(err.Error(), "simple_1: no possible answer") {
		t.Errorf("missing answer: %v", err)
	}
	recs, st, err := Import("bfcl", q, ImportOptions{Answers: short, SkipBad: true})
	if err != nil || len(recs) != 2 || len(st.Skipped) != 1 || !strings.Contains(st.Skipped[0], ":2: ") {
		t.Errorf("SkipBad: %d records, skipped %v, %v", len(recs), st.Skipped, err)
	}
	mt := filepath.Join(dir, "BFCL_v3_multi_turn_base.json")
	os.WriteFile(mt, []byte(`{"id": "multi_turn_base_0", "question": [[{"role": "user", "content": "cd"}]], "initial_config": {}, "function": []}`+"\n"), 0o644)
	if _, _, err := Import("bfcl", mt, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "multi-turn") {
		t.Errorf("multi-turn: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"id": "simple_9", "question": [[{"role": "user", "content": "x"}]], "function": []}`+"\n{oops\n"), 0o644)
	if _, _, err := Import("bfcl", bad, ImportOptions{}); err == nil || !strings.HasPrefix(err.Error(), bad+":2: not valid JSON") {
		t.Errorf("bad JSON: %v", err)
	}
	if _, _, err := Import("nope", q, ImportOptions{}); err == nil || !strings.Contains(err.Error(), "bfcl, glaive, openai, sharegpt, toolace, xlam") {
		t.Errorf("unknown source: %v", err)
	}
	if _, _, err := Import("bfcl", q, ImportOptions{Lang: "EN"}); err == nil || !strings.Contains(err.Error(), "ISO 639-1") {
		t.Errorf("bad lang: %v", err)
	}
}

func TestImportXLAM(t *testing.T) {
	recs, _ := mustImport(t, "xlam", "testdata/xlam/xlam_sample.json", ImportOptions{})
	if len(recs) != 3 || recs[0].ID != "xlam-000001" || recs[0].Messages[0].Content != "What are the last 5 tweets from @nasa and the weather in Houston?" {
		t.Fatalf("records: %+v", recs)
	}
	if !reflect.DeepEqual(names(recs[0].Calls), []string{"social.user_tweets", "weather_now"}) || recs[0].Calls[0].Arguments["count"] != 5.0 {
		t.Errorf("calls %+v", recs[0].Calls)
	}
	s, _ := recs[0].Tools[0].Schema()
	if !reflect.DeepEqual(s.PropertyNames(), []string{"username", "count", "include_replies"}) || !reflect.DeepEqual(s.Required, []string{"username", "count"}) {
		t.Errorf("tweets schema: %v required %v (an xLAM default does not make a parameter optional; the optional marker does)", s.PropertyNames(), s.Required)
	}
	if p, _ := s.Property("include_replies"); !p.HasType("boolean") {
		t.Errorf("bool, optional → boolean: %+v", p)
	}
	w, _ := recs[0].Tools[1].Schema()
	if u, _ := w.Property("units"); !reflect.DeepEqual(w.Required, []string{"location"}) || !u.HasType("string") {
		t.Errorf("weather schema required %v units %+v", w.Required, u)
	}
	n, _ := recs[1].Tools[0].Schema()
	if p, _ := n.Property("numbers"); !p.HasType("array") || !p.Items.HasType("number") {
		t.Errorf("List[float] → array of number: %+v", p)
	}
	if len(recs[2].Calls) != 0 {
		t.Errorf("empty answers should be no call")
	}
	// The same data as JSON Lines gives the same records.
	var arr []json.RawMessage
	raw, _ := os.ReadFile("testdata/xlam/xlam_sample.json")
	json.Unmarshal(raw, &arr)
	var jl strings.Builder
	for _, a := range arr {
		var c bytes.Buffer
		json.Compact(&c, a)
		jl.WriteString(c.String() + "\n")
	}
	p := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(p, []byte(jl.String()), 0o644)
	again, _ := mustImport(t, "xlam", p, ImportOptions{})
	if !reflect.DeepEqual(again, recs) {
		t.Errorf("JSONL input differs from array input")
	}
}

func TestImportToolACE(t *testing.T) {
	recs, _ := mustImport(t, "toolace", "testdata/toolace/toolace_sample.json", ImportOptions{})
	if len(recs) != 3 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	r := recs[0]
	want := []Call{{Name: "Get Stock Price", Arguments: map[string]any{"symbol": "AAPL", "exchange": "NASDAQ"}},
		{Name: "currency.convert", Arguments: map[string]any{"amount": 100.0, "to": "EUR"}}}
	if r.ID != "toolace-000000-t1" || !reflect.DeepEqual(r.Calls, want) || len(r.Messages) != 1 {
		t.Errorf("first record %+v", r)
	}
	// The text answer after a tool result is not a decision point; the
	// direct answer to the follow-up question is (gold: no call).
	r = recs[1]
	if r.ID != "toolace-000000-t5" || len(r.Calls) != 0 || len(r.Messages) != 5 || r.Messages[2].Role != "tool" ||
		r.Messages[2].Name != "" || len(r.Messages[1].ToolCalls) != 2 {
		t.Errorf("second record %+v", r)
	}
	s, _ := recs[2].Tools[0].Schema()
	if d, _ := s.Property("days"); !d.HasType("integer") || !reflect.DeepEqual(s.Required, []string{"city"}) {
		t.Errorf("int→integer and undeclared required dropped: %+v %v", d, s.Required)
	}
}

func TestImportGlaive(t *testing.T) {
	recs, st := mustImport(t, "glaive", "testdata/glaive/glaive_sample.json", ImportOptions{})
	ids := []string{}
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if !reflect.DeepEqual(ids, []string{"glaive-000000-t1", "glaive-000000-t5", "glaive-000000-t7", "glaive-000002-t1"}) {
		t.Errorf("ids %v", ids)
	}
	if len(st.Notes) != 1 || !strings.Contains(st.Notes[0], "1 conversations without functions") {
		t.Errorf("notes %v", st.Notes)
	}
	if got := recs[2].Calls[0].Arguments; !reflect.DeepEqual(got, map[string]any{"bill_amount": 85.0, "tip_percentage": 18.0}) {
		t.Errorf("tip call %v", got)
	}
	if len(recs[1].Calls) != 0 || recs[1].Messages[len(recs[1].Messages)-1].Content != "Can you also book me a flight to Osaka?" {
		t.Errorf("refusal record %+v", recs[1])
	}
	if got := recs[3].Calls[0].Arguments["body"]; got != "I'm running late." {
		t.Errorf("apostrophe inside single-quoted arguments: %q", got)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "g.json")
	os.WriteFile(bad, []byte(`[{"system": "SYSTEM: functions -\n{\"name\": \"f\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}",
  "chat": "USER: hi\n\n\nASSISTANT: <functioncall> {name: f} <|endoftext|>"}]`), 0o644)
	if _, _, err := Import("glaive", bad, ImportOptions{}); err == nil || !strings.HasPrefix(err.Error(), bad+":1: ") || !strings.Contains(err.Error(), "<functioncall>") {
		t.Errorf("bad functioncall: %v", err)
	}
}
