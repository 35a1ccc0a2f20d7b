package serve

import (
	"testing"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/chat"
)

// FuzzDecodeRequest: the request decoders never panic, on any body, and
// what they accept renders with a chat template or fails with an error
// (make fuzz runs it; the seeds run in make test).
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"base","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"base","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":"weather?"},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
			`{"role":"tool","tool_call_id":"c","content":"sunny"}],"tools":[{"type":"function","function":{"name":"get_weather",` +
			`"parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris"]}},"required":["city"]}}}],` +
			`"tool_choice":{"type":"function","function":{"name":"get_weather"}},"n":2,"stop":["x"],"logprobs":true,"top_logprobs":3,"seed":1}`,
		`{"model":"base","prompt":[[1,2],[3]],"max_tokens":3,"logprobs":2}`,
		`{"model":"base","prompt":["a","b"],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":`, `[]`, `null`, `{"messages":{}}`, `{"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"array","items":{}}}}}}]}`,
	} {
		f.Add([]byte(s))
	}
	tmpl, err := chat.Get("qwen2.5")
	if err != nil {
		f.Fatal(err)
	}
	fm, _ := format.Get("tool_call", format.Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, tc, tools, err := decodeChat(body); err == nil {
			msgs, merr := r.messages()
			if merr == nil {
				rec := data.Record{ID: "request", Messages: msgs, Tools: tools}
				if tc.Mode == "none" {
					rec.Tools = nil
				}
				tmpl.Render(rec, fm, false)
			}
		} else if err.Status < 400 || err.Status > 499 || err.Message == "" {
			t.Fatalf("error %+v", err)
		}
		var c completionRequest
		if err := decodeStrict(body, &c); err == nil {
			if cerr := c.check(c.MaxTokens); cerr == nil {
				c.prompts()
			}
		}
	})
}
