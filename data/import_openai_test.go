package data

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// openAIConv is one conversation exactly as OpenAI's fine-tuning API takes
// it: a system prompt, a user request, an assistant turn with two parallel
// tool_calls (arguments as JSON strings, content null), the two tool
// replies by tool_call_id, the assistant's summary, then a follow-up
// answered in text (content as a list of parts).
const openAIConv = `{"messages": [{"role": "system", "content": "You are a travel assistant."}, {"role": "user", "content": "Weather in Paris and Rome?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "call_a1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}, {"id": "call_b2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]}, {"role": "tool", "tool_call_id": "call_a1", "content": "18 C, cloudy"}, {"role": "tool", "tool_call_id": "call_b2", "content": "24 C, sunny"}, {"role": "assistant", "content": "Paris: 18 C and cloudy; Rome: 24 C and sunny."}, {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]}, {"role": "assistant", "content": "You are welcome.", "weight": 1}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}], "parallel_tool_calls": true}
{"messages": [{"role": "user", "content": "Say hi in French."}, {"role": "assistant", "content": "Bonjour !"}]}
`

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportOpenAI(t *testing.T) {
	recs, st, err := Import("openai", writeFile(t, "ft.jsonl", openAIConv), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != 2 || len(recs) != 3 {
		t.Fatalf("%d items, %d records (%+v); want 2 items, 3 records", st.Items, len(recs), recs)
	}
	call := recs[0]
	if call.ID != "openai-000000-t2" || len(call.Messages) != 2 || call.Messages[0].Role != "system" ||
		call.Messages[0].Content != "You are a travel assistant." || call.Messages[1].Content != "Weather in Paris and Rome?" {
		t.Errorf("record 0: %+v", call)
	}
	want := []Call{{Name: "get_weather", Arguments: map[string]any{"city": "Paris", "unit": "celsius"}},
		{Name: "get_weather", Arguments: map[string]any{"city": "Rome"}}}
	if !reflect.DeepEqual(call.Calls, want) {
		t.Errorf("calls %+v, want %+v", call.Calls, want)
	}
	if len(call.Tools) != 1 || call.Tools[0].Name != "get_weather" || call.Tools[0].Description != "Current weather in a city." ||
		!strings.Contains(string(call.Tools[0].Parameters), `"required":["city"]`) {
		t.Errorf("tools %+v", call.Tools)
	}
	// The follow-up is a no-call decision point whose history holds the
	// calls and the tool replies named by tool_call_id.
	follow := recs[1]
	if follow.ID != "openai-000000-t7" || len(follow.Calls) != 0 || len(follow.Messages) != 7 {
		t.Fatalf("record 1: %+v", follow)
	}
	m := follow.Messages
	if !reflect.DeepEqual(m[2].ToolCalls, want) || m[3].Role != "tool" || m[3].Name != "get_weather" || m[3].Content != "18 C, cloudy" ||
		m[5].Content != "Paris: 18 C and cloudy; Rome: 24 C and sunny." || m[6].Content != "Thanks!" {
		t.Errorf("history %+v", m)
	}
	if follow.Response != "" {
		t.Errorf("a record with tools got a response %q (the format renders its no-call answer)", follow.Response)
	}
	// No tools: plain chat, the answer is the response.
	chat := recs[2]
	if len(chat.Tools) != 0 || chat.Response != "Bonjour !" || !chat.PlainChat() || chat.Messages[0].Content != "Say hi in French." {
		t.Errorf("plain chat record %+v", chat)
	}
}

func TestImportOpenAIErrors(t *testing.T) {
	bad := `{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{not json"}}]}, {"role": "robot", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}]}
{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}], "tools": [{"type": "function", "function": {"name": "f"}}]}
`
	_, _, err := Import("openai", writeFile(t, "bad.jsonl", bad), ImportOptions{})
	if err == nil {
		t.Fatal("bad conversations were accepted")
	}
	msg := err.Error()
	for _, w := range []string{"bad.jsonl:1: messages[1]: tool_calls[0].function: f: arguments:", "; messages[2]: role: must be system", "bad.jsonl:2: record openai-000001-t1:", `unknown tool "g"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
	for _, empty := range []string{"", "\n\n", "[]"} {
		_, _, err := Import("openai", writeFile(t, "empty.jsonl", empty), ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), "no openai items: the file is empty") {
			t.Errorf("empty input %q: %v", empty, err)
		}
	}
}

// shareGPTConv: LLaMA-Factory's sharegpt layout with function calls (tools
// as a JSON string, function_call and observation turns), then a plain
// ShareGPT chat (human/gpt only).
const shareGPTConv = `[
 {"conversations": [{"from": "human", "value": "Book a table for 2 at Nino."}, {"from": "function_call", "value": "{\"name\": \"book\", \"arguments\": {\"restaurant\": \"Nino\", \"people\": 2}}"}, {"from": "observation", "value": "{\"name\": \"book\", \"ok\": true}"}, {"from": "gpt", "value": "Booked."}],
  "system": "You book restaurants.",
  "tools": "[{\"name\": \"book\", \"description\": \"Book a table.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"restaurant\": {\"type\": \"string\"}, \"people\": {\"type\": \"integer\"}}, \"required\": [\"restaurant\", \"people\"]}}]"},
 {"conversations": [{"from": "human", "value": "What is 2+2?"}, {"from": "gpt", "value": "4."}, {"from": "human", "value": "And 3+3?"}, {"from": "gpt", "value": "6."}]}
]`

func TestImportShareGPT(t *testing.T) {
	recs, st, err := Import("sharegpt", writeFile(t, "sg.json", shareGPTConv), ImportOptions{Lang: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != 2 || len(recs) != 3 {
		t.Fatalf("%d items, %d records: %+v", st.Items, len(recs), recs)
	}
	b := recs[0]
	if b.Messages[0].Role != "system" || b.Messages[0].Content != "You book restaurants." || b.Messages[1].Content != "Book a table for 2 at Nino." ||
		!reflect.DeepEqual(b.Calls, []Call{{Name: "book", Arguments: map[string]any{"restaurant": "Nino", "people": 2.0}}}) || b.Tools[0].Name != "book" {
		t.Errorf("booking record %+v", b)
	}
	if recs[1].Response != "4." || recs[2].Response != "6." || len(recs[2].Messages) != 3 || recs[2].Messages[1].Content != "4." || !recs[2].PlainChat() {
		t.Errorf("plain chat records %+v %+v", recs[1], recs[2])
	}
}

// Parquet input for every source: an xLAM file as Hugging Face stores it
// (string columns) and a ShareGPT file with a list-of-structs column,
// written here with the library.
func TestImportParquet(t *testing.T) {
	type xlamRow struct {
		ID      int64  `parquet:"id"`
		Query   string `parquet:"query"`
		Tools   string `parquet:"tools"`
		Answers string `parquet:"answers"`
	}
	p := filepath.Join(t.TempDir(), "xlam.parquet")
	rows := []xlamRow{
		{ID: 7, Query: "Convert 10 EUR to USD.", Tools: `[{"name": "convert", "description": "Convert money.", "parameters": {"amount": {"type": "float", "description": "How much."}, "to": {"type": "str", "description": "Target."}}}]`, Answers: `[{"name": "convert", "arguments": {"amount": 10, "to": "USD"}}]`},
		{ID: 8, Query: "Hello", Tools: `[{"name": "convert", "description": "Convert money.", "parameters": {"amount": {"type": "float", "description": "How much."}}}]`, Answers: `[]`},
	}
	if err := parquet.WriteFile(p, rows); err != nil {
		t.Fatal(err)
	}
	recs, st, err := Import("xlam", p, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Items != 2 || len(recs) != 2 || recs[0].ID != "xlam-000007" || recs[0].Messages[0].Content != "Convert 10 EUR to USD." ||
		!reflect.DeepEqual(recs[0].Calls, []Call{{Name: "convert", Arguments: map[string]any{"amount": 10.0, "to": "USD"}}}) || len(recs[1].Calls) != 0 {
		t.Errorf("xlam parquet: %d items, %+v", st.Items, recs)
	}

	type turnRow struct {
		From  string `parquet:"from"`
		Value string `parquet:"value"`
	}
	type sgRow struct {
		Conversations []turnRow `parquet:"conversations,list"`
	}
	p = filepath.Join(t.TempDir(), "sharegpt.parquet")
	if err := parquet.WriteFile(p, []sgRow{{Conversations: []turnRow{{"human", "Hi"}, {"gpt", "Hello!"}}}}); err != nil {
		t.Fatal(err)
	}
	recs, _, err = Import("sharegpt", p, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Response != "Hello!" || recs[0].Messages[0].Content != "Hi" {
		t.Errorf("sharegpt parquet: %+v", recs)
	}
	// A parquet file whose rows are not of the source's shape: the row is named.
	_, _, err = Import("openai", p, ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "sharegpt.parquet:1: messages: missing") {
		t.Errorf("openai on a sharegpt parquet: %v", err)
	}
}
