package data_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/env"
)

// mathDocs are MathAPI function documents written for this test in the
// layout of BFCL's multi_turn_func_doc files (one JSON object a line).
const mathDocs = `{"name": "add", "description": "Add two numbers.", "parameters": {"type": "dict", "properties": {"a": {"type": "float", "description": "First."}, "b": {"type": "float", "description": "Second."}}, "required": ["a", "b"]}, "response": {"type": "dict", "properties": {"result": {"type": "float"}}}}
{"name": "multiply", "description": "Multiply two numbers.", "parameters": {"type": "dict", "properties": {"a": {"type": "float", "description": "First."}, "b": {"type": "float", "description": "Second."}}, "required": ["a", "b"]}}
{"name": "mean", "description": "Mean of numbers.", "parameters": {"type": "dict", "properties": {"numbers": {"type": "array", "items": {"type": "float"}, "description": "The numbers."}}, "required": ["numbers"]}}
{"name": "power", "description": "Raise to a power.", "parameters": {"type": "dict", "properties": {"base": {"type": "float", "description": "Base."}, "exponent": {"type": "float", "description": "Exponent."}}, "required": ["base", "exponent"]}}
`

// Entries in BFCL's multi-turn question format, and their answers.
const mtQuestions = `{"id": "multi_turn_base_0", "question": [[{"role": "user", "content": "Add 3 and 4."}], [{"role": "user", "content": "Multiply that by 5."}], [{"role": "user", "content": "And the mean of 2, 4 and 9?"}]], "initial_config": {"MathAPI": {}}, "path": ["MathAPI.add", "MathAPI.multiply", "MathAPI.mean"], "involved_classes": ["MathAPI"], "excluded_function": ["power"]}
{"id": "multi_turn_base_1", "question": [[{"role": "user", "content": "Make a folder."}]], "initial_config": {"GorillaFileSystem": {"root": {}}, "MathAPI": {}}, "path": [], "involved_classes": ["MathAPI", "GorillaFileSystem"]}
{"id": "multi_turn_base_2", "question": [[{"role": "user", "content": "Tweet it."}]], "initial_config": {}, "path": [], "involved_classes": ["TwitterAPI", "GorillaFileSystem"]}
{"id": "multi_turn_base_3", "question": [[{"role": "user", "content": "Add 1 and 2."}], [], [{"role": "user", "content": "Divide."}]], "initial_config": {}, "path": [], "involved_classes": ["MathAPI"], "missed_function": {"1": ["divide"]}}
{"id": "multi_turn_base_4", "question": [[{"role": "user", "content": "Add something."}], [{"role": "user", "content": "Add 1 and 2."}, {"role": "user", "content": "Please."}]], "initial_config": {"MathAPI": {}}, "path": [], "involved_classes": ["MathAPI"]}
`

const mtAnswers = `{"id": "multi_turn_base_0", "ground_truth": [["add(a=3,b=4)"], ["multiply(a=7, b=5)"], ["mean([2, 4, 9])"]]}
{"id": "multi_turn_base_1", "ground_truth": [["mkdir(dir_name='x')"]]}
{"id": "multi_turn_base_2", "ground_truth": [["post_tweet(content='x')"]]}
{"id": "multi_turn_base_3", "ground_truth": [["add(a=1,b=2)"], [], ["divide(a=3,b=1)"]]}
{"id": "multi_turn_base_4", "ground_truth": [[], ["add(a=1.0, b=2)"]]}
`

func bfclMultiDir(t *testing.T, questions, answers string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "multi_turn_func_doc"), 0o755)
	os.WriteFile(filepath.Join(dir, "multi_turn_func_doc", "math_api.json"), []byte(mathDocs), 0o644)
	q := filepath.Join(dir, "BFCL_v4_multi_turn_base.json")
	os.WriteFile(q, []byte(questions), 0o644)
	a := filepath.Join(dir, "possible_answer.json")
	os.WriteFile(a, []byte(answers), 0o644)
	return q, a
}

// TestImportBFCLMultiTurn: entries whose classes argrl simulates import as
// multi-turn records, the others are counted by reason; the records run
// on the bfcl environment, where a later call uses an earlier result.
func TestImportBFCLMultiTurn(t *testing.T) {
	q, a := bfclMultiDir(t, mtQuestions, mtAnswers)
	recs, st, err := data.Import("bfcl", q, data.ImportOptions{Answers: a})
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != 5 || st.Records != 2 || len(recs) != 2 || recs[0].ID != "multi_turn_base_0" || recs[1].ID != "multi_turn_base_4" {
		t.Fatalf("%d items → %d records %v", st.Items, st.Records, recs)
	}
	notes := strings.Join(st.Notes, "\n")
	for _, want := range []string{
		"1 items left out: involves GorillaFileSystem, which argrl does not simulate",
		"1 items left out: involves GorillaFileSystem, TwitterAPI, which argrl does not simulate",
		"1 items left out: withholds functions until a later turn (miss_func)",
		"2 multi-turn records (env bfcl)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if st.Quirks["a gold call passes an argument by position: named after the function document's parameter order"] != 1 {
		t.Errorf("quirks %v", st.Quirks)
	}
	r := recs[0]
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "add,multiply,mean" || !strings.Contains(r.Tools[0].Description, "Python 3 syntax") {
		t.Errorf("tools %v (power is excluded)", names)
	}
	var shape []string
	for _, tu := range r.Turns {
		s := tu.User + "|"
		for _, c := range tu.Calls {
			s += c.Name
		}
		shape = append(shape, s)
	}
	if got := strings.Join(shape, " "); got != "|add | Multiply that by 5.|multiply | And the mean of 2, 4 and 9?|mean |" {
		t.Errorf("turns %q", got)
	}
	if r.Messages[0].Content != "Add 3 and 4." || r.Calls[0].Name != "add" || r.Turns[4].Calls[0].Arguments["numbers"].([]any)[2] != 9.0 {
		t.Errorf("record %+v", r)
	}
	if r.Env == nil || r.Env.Name != "bfcl" || string(r.Env.Config) != `{"initial_config":{"MathAPI":{}},"involved_classes":["MathAPI"]}` {
		t.Errorf("env %+v", r.Env)
	}
	if shape := recs[1].Turns; len(shape) != 3 || len(shape[0].Calls) != 0 || shape[1].User != "Add 1 and 2.\n\nPlease." || shape[1].Calls[0].Arguments["a"] != 1.0 {
		t.Errorf("record 4 turns %+v", shape)
	}
	// The records survive writing and reading.
	out := filepath.Join(t.TempDir(), "mt.jsonl")
	if err := data.WriteFile(out, recs); err != nil {
		t.Fatal(err)
	}
	back, err := data.ReadFile(out)
	if err != nil || len(back[0].Turns) != 6 {
		t.Fatalf("read back: %v", err)
	}
	// Playing the gold on the bfcl environment: 3 + 4 = 7, then 7 · 5.
	ctx := context.Background()
	ep, err := env.Start(ctx, env.BFCL{}, &back[0], "gold")
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, tu := range back[0].Turns {
		st, err := ep.Step(ctx, env.Calls(tu.Calls))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range st.Messages {
			results = append(results, m.Role+":"+m.Content)
		}
	}
	want := `tool:{"result":7} user:Multiply that by 5. tool:{"result":35} user:And the mean of 2, 4 and 9? tool:{"result":5}`
	if got := strings.Join(results, " "); got != want || !ep.Done() {
		t.Errorf("gold episode:\n%s\nwant\n%s (done %v)", got, want, ep.Done())
	}
}

// TestImportBFCLMultiTurnErrors: bad entries fail with file and line.
func TestImportBFCLMultiTurnErrors(t *testing.T) {
	first := strings.SplitAfter(mtQuestions, "\n")[0]
	for _, c := range []struct{ name, q, a, want string }{
		{"unknown function", first, `{"id": "multi_turn_base_0", "ground_truth": [["add(a=3,b=4)"], ["cd(folder='x')"], ["mean([2])"]]}`, "ground_truth[1][0] \"cd(folder='x')\": function cd is not among the tools"},
		{"turn count", first, `{"id": "multi_turn_base_0", "ground_truth": [["add(a=3,b=4)"]]}`, "3 user turns, 1 ground-truth turns"},
		{"too many positional", first, `{"id": "multi_turn_base_0", "ground_truth": [["add(1, 2, 3)"], [], []]}`, "argument 3 has no parameter"},
		{"missing required", first, `{"id": "multi_turn_base_0", "ground_truth": [["add(a=1, b=2)"], ["multiply(a=3)"], []]}`, "turns[2].calls[0].arguments.b: required"},
		{"broken call", first, `{"id": "multi_turn_base_0", "ground_truth": [["add(a='1)"], [], []]}`, "unterminated"},
		{"no answer", first, `{"id": "other", "ground_truth": [[]]}`, "no possible answer"},
	} {
		q, a := bfclMultiDir(t, c.q, c.a)
		_, _, err := data.Import("bfcl", q, data.ImportOptions{Answers: a})
		if err == nil || !strings.HasPrefix(err.Error(), q+":1: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %s:1: ... %q", c.name, err, q, c.want)
		}
	}
	// Without the function documents next to the questions.
	q, a := bfclMultiDir(t, first, strings.SplitAfter(mtAnswers, "\n")[0])
	os.RemoveAll(filepath.Join(filepath.Dir(q), "multi_turn_func_doc"))
	if _, _, err := data.Import("bfcl", q, data.ImportOptions{Answers: a}); err == nil || !strings.Contains(err.Error(), "multi_turn_func_doc must be next to the question file") {
		t.Errorf("no docs: %v", err)
	}
}
