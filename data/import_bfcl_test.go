package data

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testdata/bfcl/v4 holds entries written for these tests in BFCL v4's
// formats, each with one of the official data's quirks.
func bfcl4(t *testing.T, cat string) ([]Record, ImportStats) {
	t.Helper()
	q := "testdata/bfcl/v4/BFCL_v4_" + cat + ".json"
	a := "testdata/bfcl/v4/possible_answer/BFCL_v4_" + cat + ".json"
	opts := ImportOptions{}
	if _, err := os.Stat(a); err == nil {
		opts.Answers = a
	}
	return mustImport(t, "bfcl", q, opts)
}

func TestImportBFCLv4Quirks(t *testing.T) {
	// parallel_multiple_12's quirk: the gold names a parameter its
	// function does not declare, with "" acceptable.
	recs, st := bfcl4(t, "parallel_multiple")
	r := recs[0]
	if _, has := r.Calls[1].Arguments["drag"]; has || r.Accept[1]["drag"] != nil || st.Quirks[quirkUndeclaredOptional] != 1 {
		t.Errorf("undeclared drag: calls %v accept %v quirks %v", r.Calls[1].Arguments, r.Accept[1], st.Quirks)
	}
	if r.BFCL == nil || r.BFCL.Category != "parallel_multiple" || !strings.Contains(string(r.BFCL.GroundTruth), `"drag":["",0.2]`) ||
		!strings.Contains(string(r.BFCL.Functions), `"type":"float"`) {
		t.Errorf("bfcl case not verbatim: %+v", r.BFCL)
	}
	if len(st.Quirks) != 1 {
		t.Errorf("the gold passes the checker once drag is left out: %v", st.Quirks)
	}

	// live_simple_106-63-0's quirk: an empty acceptable list for a required
	// parameter; and a required parameter whose only value is "".
	recs, st = bfcl4(t, "live_simple")
	s, _ := recs[0].Tools[0].Schema()
	if _, has := recs[0].Calls[0].Arguments["farewell_start"]; has || !reflect.DeepEqual(s.Required, []string{"greeting_start"}) {
		t.Errorf("empty list: calls %v, required %v", recs[0].Calls[0].Arguments, s.Required)
	}
	if !strings.Contains(string(recs[0].BFCL.Functions), `"required":["greeting_start","farewell_start"]`) {
		t.Errorf("the checker's document must keep its required list: %s", recs[0].BFCL.Functions)
	}
	if recs[1].Calls[0].Arguments["origin"] != "" || recs[1].Calls[0].Arguments["destination"] != "OSL" || recs[1].Messages[0].Role != "system" {
		t.Errorf("only-\"\" required parameter: %+v", recs[1])
	}
	want := map[string]int{quirkEmptyList: 1, quirkOnlyEmpty: 1, "the gold call fails the checker (simple_function_checker:missing_required)": 1}
	if !reflect.DeepEqual(st.Quirks, want) {
		t.Errorf("live_simple quirks %v, want %v", st.Quirks, want)
	}

	// An answer naming an undeclared parameter without "", and lacking a
	// required one (live_multiple_964-207-0's quirk).
	recs, st = bfcl4(t, "live_multiple")
	s, _ = recs[0].Tools[1].Schema()
	if len(recs[0].Calls[0].Arguments) != 0 || len(s.Required) != 0 || st.Quirks[quirkUndeclared] != 1 || st.Quirks[quirkRequiredMissing] != 1 {
		t.Errorf("live_multiple: calls %v required %v quirks %v", recs[0].Calls, s.Required, st.Quirks)
	}

	// Whole numbers in a float list read back as ints.
	_, st = bfcl4(t, "simple_python")
	if st.Quirks[quirkWholeFloats] != 1 || st.Quirks["the gold call fails the checker (type_error:nested)"] != 1 {
		t.Errorf("simple_python quirks %v", st.Quirks)
	}
}

func TestImportBFCLv4Languages(t *testing.T) {
	recs, st := bfcl4(t, "simple_java")
	r := recs[0]
	if !strings.HasSuffix(r.Tools[0].Description, " Note that the provided function is in Java 8 SDK syntax.") {
		t.Errorf("description %q", r.Tools[0].Description)
	}
	s, _ := r.Tools[0].Schema()
	for _, p := range s.Properties {
		if !p.Schema.HasType("string") || p.Schema.Items != nil {
			t.Errorf("Java parameter %s must be a string without items: %+v", p.Name, p.Schema)
		}
	}
	if ml, _ := s.Property("maxEntries"); !strings.HasSuffix(ml.Description, "This is Java long type parameter in string representation.") {
		t.Errorf("long description %q", ml.Description)
	}
	wantArgs := map[string]any{"name": "users", "maxEntries": "5000L", "loadFactor": "0.75f", "persistent": "true",
		"options": `new HashMap<String, Object>() {{ put("eviction", "LRU"); put("shards", 4); }}`,
		"regions": `new ArrayList<>(Arrays.asList("eu", "us"))`,
		"keys":    "new String[]{id}", // the checker keeps quotes in Array elements
		"owner":   "authService"}
	if !reflect.DeepEqual(r.Calls[0].Arguments, wantArgs) {
		t.Errorf("Java gold %#v", r.Calls[0].Arguments)
	}
	if got := r.Accept[0]["options"]; len(got) != 1 {
		t.Errorf("options accept %v (both first choices give one literal)", got)
	}
	if st.Quirks[quirkNoLiteral] != 1 || st.Quirks["the gold call fails the checker (value_error:list/tuple)"] != 1 || len(st.Quirks) != 2 {
		t.Errorf("java quirks %v (only simple_java_1's mixed ArrayList<any> has no literal)", st.Quirks)
	}

	recs, st = bfcl4(t, "simple_javascript")
	wantJS := map[string]any{"title": "Sales", "points": "[3.0, 4.5, 6.0]", "style": `{"color": "red"}`, "seed": "7n"}
	if !reflect.DeepEqual(recs[0].Calls[0].Arguments, wantJS) || len(st.Quirks) != 0 {
		t.Errorf("JavaScript gold %#v quirks %v", recs[0].Calls[0].Arguments, st.Quirks)
	}
	if !strings.HasSuffix(recs[0].Tools[0].Description, "in JavaScript syntax.") {
		t.Errorf("description %q", recs[0].Tools[0].Description)
	}
	js, _ := recs[0].Tools[0].Schema()
	if st, _ := js.Property("style"); !strings.Contains(st.Description, `following schema; they are not in string representation. {"color": {"type": "String", "description": "Color."}}`) || st.HasProperties {
		t.Errorf("dict schema moves into the description: %+v", st)
	}

	recs, st = bfcl4(t, "live_relevance")
	if len(recs) != 1 || len(recs[0].Calls) != 0 || recs[0].BFCL.Category != "live_relevance" || len(st.Notes) != 1 {
		t.Errorf("live_relevance: %+v %v", recs, st.Notes)
	}
	recs, _ = bfcl4(t, "live_irrelevance")
	if recs[0].BFCL.Category != "live_irrelevance" || recs[0].BFCL.GroundTruth != nil {
		t.Errorf("live_irrelevance: %+v", recs[0].BFCL)
	}
	py, _ := bfcl4(t, "irrelevance")
	if !strings.HasSuffix(py[0].Tools[0].Description, " Note that the provided function is in Python 3 syntax.") {
		t.Errorf("description %q", py[0].Tools[0].Description)
	}
}

func TestImportBFCLMalformed(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join(dir, "BFCL_v4_simple_python.json")
	a := filepath.Join(dir, "answers.json")
	fn := `"function": [{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {"x": {"type": "integer", "description": "x"}}, "required": ["x"]}}]`
	os.WriteFile(q, []byte(`{"id": "simple_python_0", "question": [[{"role": "user", "content": "a"}]], `+fn+`}`+"\n"+
		`{"id": "simple_python_1", "question": [[{"role": "user", "content": "b"}]], `+fn+`}`+"\n"), 0o644)
	os.WriteFile(a, []byte(`{"id": "simple_python_0", "ground_truth": [{"f": {"x": [1]}}]}`+"\n"+
		`{"id": "simple_python_1", "ground_truth": [{"f": {"x": 2}}]}`+"\n"), 0o644)
	_, _, err := Import("bfcl", q, ImportOptions{Answers: a})
	if err == nil || !strings.HasPrefix(err.Error(), q+":2: ") || !strings.Contains(err.Error(), "list of acceptable values") {
		t.Errorf("an answer that is not a list: %v", err)
	}
	recs, st, err := Import("bfcl", q, ImportOptions{Answers: a, SkipBad: true})
	if err != nil || len(recs) != 1 || len(st.Skipped) != 1 {
		t.Errorf("SkipBad: %d records, skipped %v, %v", len(recs), st.Skipped, err)
	}
	if c := bfclCategory("", "/x/BFCL_v4_live_simple.json"); c != "live_simple" {
		t.Errorf("category from the file name: %q", c)
	}
}

// xLAM's first record (xlam_function_calling_60k.json, id 0): the tool's
// only parameter is named "type", and it has a default.
const xlamFirst = `[{"id": 0, "query": "Where can I find live giveaways for beta access and games?", "answers": "[{\"name\": \"live_giveaways_by_type\", \"arguments\": {\"type\": \"beta\"}}, {\"name\": \"live_giveaways_by_type\", \"arguments\": {\"type\": \"game\"}}]", "tools": "[{\"name\": \"live_giveaways_by_type\", \"description\": \"Retrieve live giveaways from the GamerPower API based on the specified type.\", \"parameters\": {\"type\": {\"description\": \"The type of giveaways to retrieve (e.g., game, loot, beta).\", \"type\": \"str\", \"default\": \"game\"}}}]"}]`

func TestImportXLAMParameterNamedType(t *testing.T) {
	p := filepath.Join(t.TempDir(), "xlam.json")
	os.WriteFile(p, []byte(xlamFirst), 0o644)
	recs, st := mustImport(t, "xlam", p, ImportOptions{})
	if len(recs) != 1 || len(recs[0].Calls) != 2 || recs[0].Calls[1].Arguments["type"] != "game" || len(st.Quirks) != 0 {
		t.Fatalf("records %+v quirks %v", recs, st.Quirks)
	}
	s, _ := recs[0].Tools[0].Schema()
	tp, _ := s.Property("type")
	if !reflect.DeepEqual(s.PropertyNames(), []string{"type"}) || !tp.HasType("string") || tp.Default != "game" {
		t.Errorf("parameter type: %+v", tp)
	}
	if !reflect.DeepEqual(s.Required, []string{"type"}) {
		t.Errorf("required %v: a default does not make an xLAM parameter optional", s.Required)
	}
	// A parameter named "properties", a JSON schema, and an answer that
	// leaves out a defaulted parameter (which then stops being required).
	two := `[{"id": 1, "query": "q", "answers": "[{\"name\": \"f\", \"arguments\": {}}]", "tools": "[{\"name\": \"f\", \"parameters\": {\"properties\": {\"description\": \"Fields to return.\", \"type\": \"str\", \"default\": \"all\"}}}]"},
{"id": 2, "query": "q", "answers": "[{\"name\": \"g\", \"arguments\": {\"type\": \"x\"}}]", "tools": "[{\"name\": \"g\", \"parameters\": {\"properties\": {\"type\": {\"type\": \"string\"}}, \"required\": [\"type\"]}}]"}]`
	os.WriteFile(p, []byte(two), 0o644)
	recs, st = mustImport(t, "xlam", p, ImportOptions{})
	f, _ := recs[0].Tools[0].Schema()
	g, _ := recs[1].Tools[0].Schema()
	if !reflect.DeepEqual(f.PropertyNames(), []string{"properties"}) || len(f.Required) != 0 || st.Quirks[quirkXLAMDefault] != 1 {
		t.Errorf("parameter named properties: %v required %v quirks %v", f.PropertyNames(), f.Required, st.Quirks)
	}
	if !reflect.DeepEqual(g.PropertyNames(), []string{"type"}) || !reflect.DeepEqual(g.Required, []string{"type"}) {
		t.Errorf("JSON schema with a property named type: %v %v", g.PropertyNames(), g.Required)
	}
}

func TestBFCLCaseInRecords(t *testing.T) {
	line := `{"id": "simple_python_0", "lang": "en", "tools": [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "number"}}}}],
 "messages": [{"role": "user", "content": "q"}], "calls": [{"name": "f", "arguments": {"x": 1}}],
 "bfcl": {"category": "simple_python", "functions": [{"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {"x": {"type": "float", "description": "x"}}, "required": []}}],
  "ground_truth": [{"f": {"x": [1.0]}}]}}`
	recs, err := Read(strings.NewReader(strings.ReplaceAll(line, "\n", "")+"\n"), "r.jsonl")
	if err != nil || recs[0].BFCL == nil || !strings.Contains(string(recs[0].BFCL.GroundTruth), "1.0") {
		t.Fatalf("read: %v %+v", err, recs)
	}
	b, _ := MarshalRecord(&recs[0])
	if !strings.Contains(string(b), `"ground_truth":[{"f":{"x":[1.0]}}]`) {
		t.Errorf("the ground truth must keep 1.0 verbatim: %s", b)
	}
	for _, tc := range []struct{ old, new, want string }{
		{`"category": "simple_python"`, `"category": ""`, "bfcl: empty category"},
		{`"ground_truth": [{"f": {"x": [1.0]}}]`, `"ground_truth": [{"f": {"x": 1.0}}]`, "list of acceptable values"},
		{`"category": "simple_python",`, `"category": "simple_python", "extra": 1,`, "bfcl.extra: unknown field"},
		{`"category": "simple_python"`, `"category": "irrelevance"`, ""},
		{`"calls": [{"name": "f", "arguments": {"x": 1}}]`, `"calls": [{"name": "f", "arguments": {"x": 1}}], "x": 0`, "unknown field"},
	} {
		l := strings.ReplaceAll(strings.Replace(line, tc.old, tc.new, 1), "\n", "")
		_, err := Read(strings.NewReader(l+"\n"), "r.jsonl")
		if tc.want == "" {
			// An irrelevance case with a gold call contradicts itself.
			if err == nil || !strings.Contains(err.Error(), "no gold call") {
				t.Errorf("irrelevance with a call: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "r.jsonl:1: ") {
			t.Errorf("%s: %v, want %q", tc.new, err, tc.want)
		}
	}
}
