package serve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/argrl/argrl/serve"
	"github.com/argrl/argrl/serve/servetest"
)

const weatherTools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`

func post(t *testing.T, url, key, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestErrors is the malformed-request table: every 4xx path answers its
// status with an OpenAI error object {"error": {"message", "type", "param",
// "code"}} and the expected code, before any generation.
func TestErrors(t *testing.T) {
	s := servetest.Start(t, servetest.BaseModel(), serve.Options{APIKey: "sk-test", MaxBody: 64 << 10, Batch: 8})
	user := `"messages":[{"role":"user","content":"hi"}]`
	long := `"messages":[{"role":"user","content":"` + strings.Repeat("weather ", 3000) + `"}]`
	chat, comp := s.URL+"/v1/chat/completions", s.URL+"/v1/completions"
	cases := []struct {
		name, url, method, key, body string
		status                       int
		code                         string
	}{
		{"malformed JSON", chat, "POST", "sk-test", `{"model":`, 400, "invalid_json"},
		{"syntax error", chat, "POST", "sk-test", `{bad}`, 400, "invalid_json"},
		{"empty body", chat, "POST", "sk-test", ``, 400, "invalid_json"},
		{"trailing data", chat, "POST", "sk-test", `{"model":"base",` + user + `} {}`, 400, "invalid_json"},
		{"unknown key", chat, "POST", "sk-test", `{"model":"base",` + user + `,"temprature":0}`, 400, "unknown_parameter"},
		{"wrong type", chat, "POST", "sk-test", `{"model":"base",` + user + `,"temperature":"hot"}`, 400, "invalid_type"},
		{"missing model", chat, "POST", "sk-test", `{` + user + `}`, 400, "missing_required_parameter"},
		{"unknown model", chat, "POST", "sk-test", `{"model":"gpt-4",` + user + `}`, 404, "model_not_found"},
		{"no messages", chat, "POST", "sk-test", `{"model":"base","messages":[]}`, 400, "missing_required_parameter"},
		{"bad role", chat, "POST", "sk-test", `{"model":"base","messages":[{"role":"robot","content":"x"}]}`, 400, "invalid_value"},
		{"image part", chat, "POST", "sk-test", `{"model":"base","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "invalid_value"},
		{"content object", chat, "POST", "sk-test", `{"model":"base","messages":[{"role":"user","content":{"a":1}}]}`, 400, "invalid_type"},
		{"tool_calls on user", chat, "POST", "sk-test", `{"model":"base","messages":[{"role":"user","content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, 400, "invalid_value"},
		{"call arguments not JSON", chat, "POST", "sk-test", `{"model":"base","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`, 400, "invalid_value"},
		{"tool schema type", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}]}`, 400, "invalid_function_parameters"},
		{"tool schema not object", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, 400, "invalid_function_parameters"},
		{"tool schema bad properties", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":[1]}}}]}`, 400, "invalid_function_parameters"},
		{"tool bad name", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tools":[{"type":"function","function":{"name":"f(x)"}}]}`, 400, "invalid_value"},
		{"tool duplicate", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, 400, "invalid_value"},
		{"tool type", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tools":[{"type":"retrieval","function":{"name":"f"}}]}`, 400, "invalid_value"},
		{"tool_choice unknown function", chat, "POST", "sk-test", `{"model":"base",` + user + `,` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, 400, "invalid_value"},
		{"tool_choice bad string", chat, "POST", "sk-test", `{"model":"base",` + user + `,` + weatherTools + `,"tool_choice":"always"}`, 400, "invalid_value"},
		{"tool_choice without tools", chat, "POST", "sk-test", `{"model":"base",` + user + `,"tool_choice":"required"}`, 400, "invalid_value"},
		{"over-long prompt", chat, "POST", "sk-test", `{"model":"base",` + long + `}`, 400, "context_length_exceeded"},
		{"max_tokens past the context", chat, "POST", "sk-test", `{"model":"base",` + user + `,"max_tokens":1020}`, 400, "context_length_exceeded"},
		{"max_tokens 0", chat, "POST", "sk-test", `{"model":"base",` + user + `,"max_tokens":0}`, 400, "invalid_value"},
		{"n 0", chat, "POST", "sk-test", `{"model":"base",` + user + `,"n":0}`, 400, "invalid_value"},
		{"n over the batch", chat, "POST", "sk-test", `{"model":"base",` + user + `,"n":9,"max_tokens":2}`, 400, "invalid_value"},
		{"temperature", chat, "POST", "sk-test", `{"model":"base",` + user + `,"temperature":3}`, 400, "invalid_value"},
		{"top_p", chat, "POST", "sk-test", `{"model":"base",` + user + `,"top_p":0}`, 400, "invalid_value"},
		{"top_k", chat, "POST", "sk-test", `{"model":"base",` + user + `,"top_k":-1}`, 400, "invalid_value"},
		{"top_logprobs alone", chat, "POST", "sk-test", `{"model":"base",` + user + `,"top_logprobs":2}`, 400, "invalid_value"},
		{"top_logprobs 21", chat, "POST", "sk-test", `{"model":"base",` + user + `,"logprobs":true,"top_logprobs":21}`, 400, "invalid_value"},
		{"stop empty", chat, "POST", "sk-test", `{"model":"base",` + user + `,"stop":""}`, 400, "invalid_value"},
		{"stop five", chat, "POST", "sk-test", `{"model":"base",` + user + `,"stop":["a","b","c","d","e"]}`, 400, "invalid_value"},
		{"stop number", chat, "POST", "sk-test", `{"model":"base",` + user + `,"stop":3}`, 400, "invalid_type"},
		{"presence_penalty", chat, "POST", "sk-test", `{"model":"base",` + user + `,"presence_penalty":1}`, 400, "unsupported_parameter"},
		{"stream_options without stream", chat, "POST", "sk-test", `{"model":"base",` + user + `,"stream_options":{"include_usage":true}}`, 400, "invalid_value"},
		{"completion no prompt", comp, "POST", "sk-test", `{"model":"base"}`, 400, "missing_required_parameter"},
		{"completion prompt object", comp, "POST", "sk-test", `{"model":"base","prompt":{"a":1}}`, 400, "invalid_type"},
		{"completion negative id", comp, "POST", "sk-test", `{"model":"base","prompt":[1,-2]}`, 400, "invalid_value"},
		{"completion id past the vocabulary", comp, "POST", "sk-test", `{"model":"base","prompt":[1,99999]}`, 400, "invalid_value"},
		{"completion empty ids", comp, "POST", "sk-test", `{"model":"base","prompt":[[]]}`, 400, "invalid_value"},
		{"completion empty text", comp, "POST", "sk-test", `{"model":"base","prompt":""}`, 400, "invalid_value"},
		{"completion echo", comp, "POST", "sk-test", `{"model":"base","prompt":"x","echo":true}`, 400, "unsupported_value"},
		{"completion logprobs 6", comp, "POST", "sk-test", `{"model":"base","prompt":"x","logprobs":6}`, 400, "invalid_value"},
		{"completion unknown model", comp, "POST", "sk-test", `{"model":"nope","prompt":"x"}`, 404, "model_not_found"},
		{"no key", chat, "POST", "", `{"model":"base",` + user + `}`, 401, "invalid_api_key"},
		{"wrong key", chat, "POST", "sk-wrong", `{"model":"base",` + user + `}`, 401, "invalid_api_key"},
		{"metrics without key", s.URL + "/metrics", "GET", "", ``, 401, "invalid_api_key"},
		{"wrong method", chat, "GET", "sk-test", ``, 405, "method_not_allowed"},
		{"models by POST", s.URL + "/v1/models", "POST", "sk-test", `{}`, 405, "method_not_allowed"},
		{"unknown path", s.URL + "/v1/embeddings", "POST", "sk-test", `{}`, 404, "not_found"},
		{"body too large", chat, "POST", "sk-test", `{"model":"base",` + `"messages":[{"role":"user","content":"` + strings.Repeat("x", 70<<10) + `"}]}`, 413, "request_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, c.url, strings.NewReader(c.body))
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e struct {
				Error *struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
				t.Fatalf("status %d, body %q: not an error object (%v)", resp.StatusCode, b, err)
			}
			if resp.StatusCode != c.status || e.Error.Code == nil || *e.Error.Code != c.code || e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("got %d %s, want %d code %q", resp.StatusCode, b, c.status, c.code)
			}
			if strings.Contains(string(b), "sk-test") {
				t.Errorf("the API key appears in the answer: %s", b)
			}
		})
	}
	// Nothing was generated: every case failed before the engine.
	resp, err := http.Get(s.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	_, m := getWithKey(t, s.URL+"/metrics", "sk-test")
	if !strings.Contains(string(m), "argrl_completion_tokens_total 0\n") {
		t.Errorf("a failed request generated tokens:\n%s", m)
	}
}

func getWithKey(t *testing.T, url, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
