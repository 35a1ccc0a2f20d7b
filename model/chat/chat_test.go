package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/model/tokenizer/tokenizertest"
)

func mustFormat(t *testing.T, name string) format.Format {
	t.Helper()
	f, err := format.Get(name, format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustTemplate(t *testing.T, name string) Template {
	t.Helper()
	tpl, err := Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// The prompts must equal what Qwen3's own chat template renders
// (testdata/gen_golden.mjs, Jinja run by @huggingface/jinja).
func TestGoldenQwen3(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "golden_qwen3.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []struct {
			Record data.Record `json:"record"`
			Prompt string      `json:"prompt"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 5 {
		t.Fatalf("only %d golden cases", len(g.Cases))
	}
	tpl := mustTemplate(t, "qwen3")
	for _, c := range g.Cases {
		r, err := tpl.Render(c.Record, mustFormat(t, "tool_call"), false)
		if err != nil {
			t.Fatalf("%s: %v", c.Record.ID, err)
		}
		if r.Prompt != c.Prompt || r.Text != c.Prompt || r.Target != "" {
			t.Errorf("%s: prompt differs from Qwen3's template\n got %q\nwant %q", c.Record.ID, r.Prompt, c.Prompt)
		}
	}
}

var sample = data.Record{
	ID:   "es-1",
	Lang: "es",
	Tools: []data.Tool{{
		Name:        "get_conversion_cost",
		Description: "Convierte moneda",
		Parameters:  json.RawMessage(`{"type": "object", "properties": {"amount": {"type": "number"}, "to_currency": {"type": "string"}}, "required": ["amount", "to_currency"]}`),
	}},
	Messages: []data.Message{
		{Role: "user", Content: "¿Cuánto es 15000 euros en dólares? y 200 libras"},
		{Role: "assistant", ToolCalls: []data.Call{{Name: "get_conversion_cost", Arguments: map[string]any{"amount": 1.5, "to_currency": "dólares"}}}},
		{Role: "tool", Name: "get_conversion_cost", Content: `{"cost": 1.6}`},
		{Role: "user", Content: "Ahora las dos, por favor."},
	},
	Calls: []data.Call{
		{Name: "get_conversion_cost", Arguments: map[string]any{"amount": 15000.0, "to_currency": "dólares"}},
		{Name: "get_conversion_cost", Arguments: map[string]any{"amount": 200.0, "to_currency": "dólares"}},
	},
}

var (
	tokMu sync.Mutex
	toks  = map[string]*tokenizer.Tokenizer{}
)

func realTokenizer(t *testing.T, name string) *tokenizer.Tokenizer {
	t.Helper()
	dir := tokenizertest.ModelDir(t, name)
	tokMu.Lock()
	defer tokMu.Unlock()
	if tok, ok := toks[name]; ok {
		return tok
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	toks[name] = tok
	return tok
}

// The SFT mask covers exactly the target tokens, which end with the
// end-of-turn token; prompt + target tokens equal the tokens of the whole text.
func TestMaskCoversTarget(t *testing.T) {
	for _, c := range []struct{ tpl, tok, eot string }{
		{"qwen3", "qwen3", "<|im_end|>"},
		{"qwen2.5", "qwen3", "<|im_end|>"}, // Qwen2.5 and Qwen3 share the tokenizer
		{"llama3", "llama3_1", "<|eot_id|>"},
	} {
		tok := realTokenizer(t, c.tok)
		tpl := mustTemplate(t, c.tpl)
		eot, ok := tok.TokenID(c.eot)
		if !ok {
			t.Fatalf("%s has no %s", c.tok, c.eot)
		}
		for _, fname := range format.Names() {
			f := mustFormat(t, fname)
			for _, rec := range []data.Record{sample, {ID: "nocall", Tools: sample.Tools, Messages: sample.Messages[:1]}} {
				r, err := tpl.Render(rec, f, true)
				if err != nil {
					t.Fatalf("%s/%s: %v", c.tpl, fname, err)
				}
				e := r.Encode(tok)
				whole, _ := tok.Encode(r.Text, false)
				if !equalIDs(e.IDs, whole) {
					t.Errorf("%s/%s/%s: prompt+target ids differ from the ids of the whole text", c.tpl, fname, rec.ID)
				}
				pIDs, _ := tok.Encode(r.Prompt, false)
				if e.PromptLen != len(pIDs) || !equalIDs(e.IDs[:e.PromptLen], pIDs) {
					t.Errorf("%s/%s: PromptLen %d, prompt has %d tokens", c.tpl, fname, e.PromptLen, len(pIDs))
				}
				var masked []int32
				for i, m := range e.AssistantMask {
					if m != (i >= e.PromptLen) {
						t.Fatalf("%s/%s: mask[%d] = %v with PromptLen %d", c.tpl, fname, i, m, e.PromptLen)
					}
					if m {
						masked = append(masked, e.IDs[i])
					}
				}
				if got := tok.Decode(masked, false); got != r.Target {
					t.Errorf("%s/%s: masked tokens decode to %q, target is %q", c.tpl, fname, got, r.Target)
				}
				if len(masked) == 0 || masked[len(masked)-1] != eot {
					t.Errorf("%s/%s: target does not end with %s", c.tpl, fname, c.eot)
				}
				if want := f.Render(rec.Calls, rec.Tools) + c.eot; r.Target != want {
					t.Errorf("%s/%s: target %q, want %q", c.tpl, fname, r.Target, want)
				}
				for i, o := range e.Offsets {
					if tok.Decode(e.IDs[i:i+1], false) != r.Text[o[0]:o[1]] && !strings.ContainsRune(tok.Decode(e.IDs[i:i+1], false), '\uFFFD') {
						t.Fatalf("%s/%s: token %d offsets %v do not hold its text", c.tpl, fname, i, o)
					}
				}
			}
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQwenLayout(t *testing.T) {
	f := mustFormat(t, "tool_call")
	r, err := mustTemplate(t, "qwen2").Render(sample, f, true)
	if err != nil {
		t.Fatal(err)
	}
	wantStart := "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
	if !strings.HasPrefix(r.Prompt, wantStart) {
		t.Errorf("qwen2.5 prompt starts %q", r.Prompt[:min(len(r.Prompt), 120)])
	}
	history := "<|im_start|>assistant\n" + f.Render(sample.Messages[1].ToolCalls, sample.Tools) + "<|im_end|>\n" +
		"<|im_start|>user\n<tool_response>\n{\"cost\": 1.6}\n</tool_response><|im_end|>\n"
	if !strings.Contains(r.Prompt, history) {
		t.Errorf("history not rendered as %q:\n%s", history, r.Prompt)
	}
	if !strings.HasSuffix(r.Prompt, "<|im_start|>user\nAhora las dos, por favor.<|im_end|>\n<|im_start|>assistant\n") {
		t.Errorf("qwen2.5 prompt ends %q", r.Prompt[len(r.Prompt)-80:])
	}
	// No tools: Qwen2.5 keeps its default system turn, Qwen3 has none.
	plain := data.Record{ID: "p", Messages: []data.Message{{Role: "user", Content: "hi"}}}
	r, _ = mustTemplate(t, "qwen2.5").Render(plain, f, false)
	if r.Prompt != "<|im_start|>system\n"+qwen25System+"<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
		t.Errorf("qwen2.5 plain prompt %q", r.Prompt)
	}
	tpl, _ := New("qwen3", Options{System: "S", Instructions: "CALL LIKE THIS"})
	r, _ = tpl.Render(data.Record{ID: "o", Tools: sample.Tools, Messages: plain.Messages}, f, false)
	if !strings.HasPrefix(r.Prompt, "<|im_start|>system\nS\n\n# Tools") || !strings.Contains(r.Prompt, "</tools>\n\nCALL LIKE THIS<|im_end|>") {
		t.Errorf("options not applied: %q", r.Prompt)
	}
}

func TestLlamaLayout(t *testing.T) {
	rec := data.Record{ID: "l", Tools: []data.Tool{{Name: "f", Description: "d",
		Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"},"e":{}},"required":["a"]}`)}},
		Messages: []data.Message{{Role: "system", Content: " Be brief. "}, {Role: "user", Content: " Hallo \n"}, {Role: "assistant", Content: "ok"}, {Role: "tool", Content: " raw "}}}
	f := mustFormat(t, "tool_call")
	r, err := mustTemplate(t, "llama3.1").Render(rec, f, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" +
		"Environment: ipython\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nBe brief.<|eot_id|>" +
		"<|start_header_id|>user<|end_header_id|>\n\n" +
		"Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\n" +
		FormatInstructions("llama", f) + "\n\n" +
		"{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"f\",\n        \"description\": \"d\",\n" +
		"        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n" +
		"                \"a\": {\n                    \"type\": \"string\"\n                },\n                \"e\": {}\n            },\n" +
		"            \"required\": [\n                \"a\"\n            ]\n        }\n    }\n}\n\n" +
		"Hallo<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nok<|eot_id|>" +
		"<|start_header_id|>ipython<|end_header_id|>\n\n raw <|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
	if r.Prompt != want {
		t.Errorf("llama prompt\n got %q\nwant %q", r.Prompt, want)
	}
	if want := f.Render(nil, rec.Tools) + "<|eot_id|>"; r.Target != want {
		t.Errorf("llama target %q, want %q", r.Target, want)
	}
	// Without tools there is no Environment line and the user turn is plain.
	r, _ = mustTemplate(t, "llama").Render(data.Record{ID: "n", Messages: rec.Messages[1:2]}, f, false)
	if r.Prompt != "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHallo<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n" {
		t.Errorf("llama no-tools prompt %q", r.Prompt)
	}
}

func TestPyJSON(t *testing.T) {
	// Python: json.dumps(json.loads(s), ensure_ascii=False)
	cases := map[string]string{
		`{"b":1,"a":[1.0,1e-5,0.0001,1e16,1.5e16,123456789.125,-0.0,2E3,10,-7],"c":{}}`: `{"b": 1, "a": [1.0, 1e-05, 0.0001, 1e+16, 1.5e+16, 123456789.125, -0.0, 2000.0, 10, -7], "c": {}}`,
		`["\u00e9\u2028","<\/x>","\u001f\u007f","\"\\\b\f\n\r\t",true,false,null,[]]`:   "[\"é\u2028\", \"</x>\", \"\\u001f\u007f\", \"\\\"\\\\\\b\\f\\n\\r\\t\", true, false, null, []]",
		`{"k":1,"k":2,"j":3}`: `{"k": 2, "j": 3}`,
	}
	for in, want := range cases {
		v, err := parsePy([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		var b strings.Builder
		v.write(&b, 0, 0)
		if b.String() != want {
			t.Errorf("%s\n got %s\nwant %s", in, b.String(), want)
		}
	}
	for _, bad := range []string{`{"a":`, `[1,]`, `{"a":1} x`, ``} {
		if _, err := parsePy([]byte(bad)); err == nil {
			t.Errorf("parsePy(%q) succeeded", bad)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := Get("gpt2"); err == nil || !strings.Contains(err.Error(), "qwen3") {
		t.Errorf("unknown template: %v", err)
	}
	f := mustFormat(t, "tool_call")
	for _, name := range []string{"qwen3", "llama3"} {
		tpl := mustTemplate(t, name)
		bad := data.Record{ID: "r1", Messages: []data.Message{{Role: "robot", Content: "x"}}}
		if _, err := tpl.Render(bad, f, true); err == nil || !strings.Contains(err.Error(), `"r1"`) || !strings.Contains(err.Error(), "messages[0]") {
			t.Errorf("%s: bad role: %v", name, err)
		}
		broken := data.Record{ID: "r2", Tools: []data.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":`)}}, Messages: []data.Message{{Role: "user", Content: "x"}}}
		if _, err := tpl.Render(broken, f, true); err == nil || !strings.Contains(err.Error(), `"r2"`) {
			t.Errorf("%s: broken parameters: %v", name, err)
		}
		if _, err := tpl.Render(sample, nil, true); err == nil {
			t.Errorf("%s: nil format accepted", name)
		}
	}
	noUser := data.Record{ID: "r3", Tools: sample.Tools, Messages: []data.Message{{Role: "assistant", Content: "x"}}}
	if _, err := mustTemplate(t, "llama3").Render(noUser, f, true); err == nil || !strings.Contains(err.Error(), "first user message") {
		t.Errorf("llama without user: %v", err)
	}
}

func TestDebug(t *testing.T) {
	f := mustFormat(t, "pythonic")
	s, err := Debug(mustTemplate(t, "qwen3"), sample, f)
	if err != nil {
		t.Fatal(err)
	}
	target := f.Render(sample.Calls, sample.Tools) + "<|im_end|>"
	if !strings.Contains(s, "----- target (loss) -----\n"+target+"\n") || !strings.Contains(s, "Ahora las dos") {
		t.Errorf("debug output:\n%s", s)
	}
}
