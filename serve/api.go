package serve

// The wire types of the OpenAI API subset served (docs/serve.md) and the
// request decoder: strict JSON (unknown keys refused), every value checked
// before any work, every failure an *apiError with a 4xx status.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/argrl/argrl/data"
)

// apiError is an OpenAI-style error: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func badRequest(param, code, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}

func withStatus(status int, typ, code, format string, args ...any) *apiError {
	e := &apiError{Status: status, Message: fmt.Sprintf(format, args...), Type: typ}
	if code != "" {
		e.Code = &code
	}
	return e
}

// sampling holds the fields chat and completions requests share.
type sampling struct {
	Model            string          `json:"model"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	MaxTokens        *int            `json:"max_tokens"`
	Seed             *int64          `json:"seed"`
	Stop             json.RawMessage `json:"stop"`
	N                *int            `json:"n"`
	Stream           bool            `json:"stream"`
	StreamOptions    *streamOptions  `json:"stream_options"`
	User             string          `json:"user"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	// Extensions (docs/serve.md).
	TopK           int    `json:"top_k"`
	ReturnTokenIDs bool   `json:"return_token_ids"`
	SampleID       string `json:"sample_id"`
	IgnoreEOS      bool   `json:"ignore_eos"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	sampling
	Messages            []chatMessage   `json:"messages"`
	Tools               []toolDef       `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Logprobs            bool            `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type toolDef struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

type toolCall struct {
	Index    *int         `json:"index,omitempty"` // stream deltas only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	sampling
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
}

// Limits on request values, checked before any work.
const (
	maxN           = 64
	maxTopLogprobs = 20
	maxStops       = 4
	maxStopBytes   = 256
	maxPrompts     = 256
)

// decodeStrict decodes one JSON object into v: unknown keys, trailing data
// and wrong types are 400s naming the key.
func decodeStrict(body []byte, v any) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return badRequest(te.Field, "invalid_type", "key %q: want %s, got a JSON %s", te.Field, te.Type, te.Value)
		case errors.As(err, &se):
			return badRequest("", "invalid_json", "malformed JSON at byte %d: %v", se.Offset, err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			k := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return badRequest(k, "unknown_parameter", "unknown key %q (docs/serve.md lists the keys served)", k)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("", "invalid_json", "malformed JSON: the body is empty or truncated")
		}
		return badRequest("", "invalid_json", "malformed JSON: %v", err)
	}
	if dec.More() {
		return badRequest("", "invalid_json", "malformed JSON: data after the request object")
	}
	return nil
}

// checkSampling validates the shared fields; maxTokens is the resolved
// max_tokens (nil: the rest of the context).
func (s *sampling) check(maxTokens *int) *apiError {
	if s.Model == "" {
		return badRequest("model", "missing_required_parameter", "key \"model\": missing (GET /v1/models lists the names served)")
	}
	if t := s.Temperature; t != nil && (!(*t >= 0 && *t <= 2) || math.IsNaN(*t)) {
		return badRequest("temperature", "invalid_value", "key \"temperature\": %v; want a value in [0, 2]", *t)
	}
	if p := s.TopP; p != nil && !(*p > 0 && *p <= 1) {
		return badRequest("top_p", "invalid_value", "key \"top_p\": %v; want a value in (0, 1]", *p)
	}
	if m := maxTokens; m != nil && *m < 1 {
		return badRequest("max_tokens", "invalid_value", "key \"max_tokens\": %d; want ≥ 1", *m)
	}
	if n := s.N; n != nil && (*n < 1 || *n > maxN) {
		return badRequest("n", "invalid_value", "key \"n\": %d; want 1..%d", *n, maxN)
	}
	if s.TopK < 0 {
		return badRequest("top_k", "invalid_value", "key \"top_k\": %d; want ≥ 0 (0: off)", s.TopK)
	}
	for _, kv := range []struct {
		k string
		v *float64
	}{{"presence_penalty", s.PresencePenalty}, {"frequency_penalty", s.FrequencyPenalty}} {
		if kv.v != nil && *kv.v != 0 {
			return badRequest(kv.k, "unsupported_parameter", "key %q: %v; only 0 is supported (the sampled tokens stay the policy's)", kv.k, *kv.v)
		}
	}
	if s.StreamOptions != nil && !s.Stream {
		return badRequest("stream_options", "invalid_value", "key \"stream_options\": only with \"stream\": true")
	}
	if _, err := s.stops(); err != nil {
		return err
	}
	return nil
}

// stops decodes "stop": a string or a list of up to 4 non-empty strings.
func (s *sampling) stops() ([]string, *apiError) {
	raw := bytes.TrimSpace(s.Stop)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, badRequest("stop", "invalid_value", "key \"stop\": empty string")
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "invalid_type", "key \"stop\": want a string or a list of strings")
	}
	if len(many) > maxStops {
		return nil, badRequest("stop", "invalid_value", "key \"stop\": %d strings; at most %d", len(many), maxStops)
	}
	for i, x := range many {
		if x == "" || len(x) > maxStopBytes {
			return nil, badRequest("stop", "invalid_value", "key \"stop\"[%d]: want 1..%d bytes, got %d", i, maxStopBytes, len(x))
		}
	}
	return many, nil
}

// toolChoice is the decoded tool_choice: "auto", "none", "required", or
// "function" with Name.
type toolChoice struct {
	Mode string
	Name string
}

// decodeChat decodes and checks a chat request up to the point where the
// model is needed (rendering and lengths are checked by the server).
func decodeChat(body []byte) (*chatRequest, *toolChoice, []data.Tool, *apiError) {
	var r chatRequest
	if err := decodeStrict(body, &r); err != nil {
		return nil, nil, nil, err
	}
	if r.MaxTokens == nil {
		r.MaxTokens = r.MaxCompletionTokens
	}
	if err := r.check(r.MaxTokens); err != nil {
		return nil, nil, nil, err
	}
	if r.TopLogprobs != nil {
		if !r.Logprobs {
			return nil, nil, nil, badRequest("top_logprobs", "invalid_value", "key \"top_logprobs\": needs \"logprobs\": true")
		}
		if *r.TopLogprobs < 0 || *r.TopLogprobs > maxTopLogprobs {
			return nil, nil, nil, badRequest("top_logprobs", "invalid_value", "key \"top_logprobs\": %d; want 0..%d", *r.TopLogprobs, maxTopLogprobs)
		}
	}
	if len(r.Messages) == 0 {
		return nil, nil, nil, badRequest("messages", "missing_required_parameter", "key \"messages\": missing or empty")
	}
	tools, err := r.tools()
	if err != nil {
		return nil, nil, nil, err
	}
	tc, err := r.toolChoice(tools)
	if err != nil {
		return nil, nil, nil, err
	}
	return &r, tc, tools, nil
}

// tools converts the request's tools, checking each schema as training
// data's are checked (data.Record.Validate's rules).
func (r *chatRequest) tools() ([]data.Tool, *apiError) {
	out := make([]data.Tool, 0, len(r.Tools))
	seen := map[string]bool{}
	for i, t := range r.Tools {
		p := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, badRequest(p+".type", "invalid_value", "key %q: %q; want \"function\"", p+".type", t.Type)
		}
		f := t.Function
		if why := data.ValidName(f.Name); why != "" {
			return nil, badRequest(p+".function.name", "invalid_value", "key %q: invalid function name %q: %s", p+".function.name", f.Name, why)
		}
		if seen[f.Name] {
			return nil, badRequest(p+".function.name", "invalid_value", "key %q: duplicate function %q", p+".function.name", f.Name)
		}
		seen[f.Name] = true
		dt := data.Tool{Name: f.Name, Description: f.Description}
		if ps := bytes.TrimSpace(f.Parameters); len(ps) > 0 && string(ps) != "null" {
			if ps[0] != '{' {
				return nil, badRequest(p+".function.parameters", "invalid_function_parameters", "key %q: want a JSON-schema object", p+".function.parameters")
			}
			var c bytes.Buffer
			if err := json.Compact(&c, ps); err != nil {
				return nil, badRequest(p+".function.parameters", "invalid_function_parameters", "key %q: %v", p+".function.parameters", err)
			}
			dt.Parameters = c.Bytes()
		}
		s, err := dt.Schema()
		if err != nil {
			return nil, badRequest(p+".function.parameters", "invalid_function_parameters", "key %q: %v", p+".function.parameters", err)
		}
		if len(dt.Parameters) > 0 && len(s.Type) > 0 && !s.HasType("object") {
			return nil, badRequest(p+".function.parameters.type", "invalid_function_parameters", "key %q: must be \"object\", got %q", p+".function.parameters.type", s.Type)
		}
		for _, prop := range s.Properties {
			if why := data.ValidArgName(prop.Name); why != "" {
				return nil, badRequest(p+".function.parameters.properties", "invalid_function_parameters", "key %q: invalid parameter name %q: %s", p+".function.parameters.properties", prop.Name, why)
			}
		}
		out = append(out, dt)
	}
	return out, nil
}

// toolChoice decodes tool_choice: "auto" (the default with tools), "none"
// (the default without), "required", or {"type":"function","function":{"name"}}.
func (r *chatRequest) toolChoice(tools []data.Tool) (*toolChoice, *apiError) {
	raw := bytes.TrimSpace(r.ToolChoice)
	tc := &toolChoice{Mode: "auto"}
	if len(tools) == 0 {
		tc.Mode = "none"
	}
	if len(raw) == 0 || string(raw) == "null" {
		return tc, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		switch s {
		case "auto", "none", "required":
			tc.Mode = s
		default:
			return nil, badRequest("tool_choice", "invalid_value", "key \"tool_choice\": %q; want \"auto\", \"none\", \"required\" or a named function", s)
		}
	} else {
		var named struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&named); err != nil || named.Type != "function" || named.Function.Name == "" {
			return nil, badRequest("tool_choice", "invalid_value", "key \"tool_choice\": want a string or {\"type\": \"function\", \"function\": {\"name\": ...}}")
		}
		tc.Mode, tc.Name = "function", named.Function.Name
	}
	if tc.Mode != "none" && len(tools) == 0 {
		return nil, badRequest("tool_choice", "invalid_value", "key \"tool_choice\": %q needs \"tools\"", tc.Mode)
	}
	if tc.Mode == "function" {
		found := false
		for _, t := range tools {
			found = found || t.Name == tc.Name
		}
		if !found {
			return nil, badRequest("tool_choice", "invalid_value", "key \"tool_choice\": function %q is not among the tools", tc.Name)
		}
	}
	return tc, nil
}

// messages converts the chat messages into argrl's conversation layout
// (data.Message): content strings or text parts, assistant tool calls with
// JSON-object arguments, tool results.
func (r *chatRequest) messages() ([]data.Message, *apiError) {
	out := make([]data.Message, 0, len(r.Messages))
	for i, m := range r.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		switch role {
		case "system", "user", "assistant", "tool":
		default:
			return nil, badRequest(p+".role", "invalid_value", "key %q: %q; want system, developer, user, assistant or tool", p+".role", m.Role)
		}
		text, err := contentText(m.Content, p+".content")
		if err != nil {
			return nil, err
		}
		dm := data.Message{Role: role, Content: text, Name: m.Name}
		if len(m.ToolCalls) > 0 && role != "assistant" {
			return nil, badRequest(p+".tool_calls", "invalid_value", "key %q: only assistant messages carry tool calls", p+".tool_calls")
		}
		for j, c := range m.ToolCalls {
			q := fmt.Sprintf("%s.tool_calls[%d].function", p, j)
			if data.ValidName(c.Function.Name) != "" {
				return nil, badRequest(q+".name", "invalid_value", "key %q: invalid function name %q", q+".name", c.Function.Name)
			}
			args := map[string]any{}
			if a := strings.TrimSpace(c.Function.Arguments); a != "" {
				if err := json.Unmarshal([]byte(a), &args); err != nil {
					return nil, badRequest(q+".arguments", "invalid_value", "key %q: want a JSON object in a string: %v", q+".arguments", err)
				}
				if args == nil {
					args = map[string]any{}
				}
			}
			dm.ToolCalls = append(dm.ToolCalls, data.Call{Name: c.Function.Name, Arguments: args})
		}
		out = append(out, dm)
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or a list of
// {"type": "text", "text"} parts (concatenated).
func contentText(raw json.RawMessage, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest(param, "invalid_type", "key %q: want a string or a list of text parts", param)
	}
	var b strings.Builder
	for i, pt := range parts {
		if pt.Type != "text" {
			return "", badRequest(param, "invalid_value", "key %q[%d]: part type %q; only \"text\" is served", param, i, pt.Type)
		}
		b.WriteString(pt.Text)
	}
	return b.String(), nil
}

// completionPrompts decodes "prompt": a string, a list of token ids, or a
// list of either (one choice set per prompt).
func (r *completionRequest) prompts() (texts []string, ids [][]int32, err *apiError) {
	raw := bytes.TrimSpace(r.Prompt)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, badRequest("prompt", "missing_required_parameter", "key \"prompt\": missing")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil, checkPromptCount(1)
	}
	var one []int64
	if json.Unmarshal(raw, &one) == nil {
		p, err := tokenIDs(one, "prompt")
		return nil, [][]int32{p}, err
	}
	var strs []string
	if json.Unmarshal(raw, &strs) == nil {
		return strs, nil, checkPromptCount(len(strs))
	}
	var many [][]int64
	if json.Unmarshal(raw, &many) == nil {
		if err := checkPromptCount(len(many)); err != nil {
			return nil, nil, err
		}
		for i, m := range many {
			p, err := tokenIDs(m, fmt.Sprintf("prompt[%d]", i))
			if err != nil {
				return nil, nil, err
			}
			ids = append(ids, p)
		}
		return nil, ids, nil
	}
	return nil, nil, badRequest("prompt", "invalid_type", "key \"prompt\": want a string, a list of token ids, or a list of either")
}

func checkPromptCount(n int) *apiError {
	if n < 1 || n > maxPrompts {
		return badRequest("prompt", "invalid_value", "key \"prompt\": %d prompts; want 1..%d", n, maxPrompts)
	}
	return nil
}

// tokenIDs checks ids are int32-sized and non-negative (the vocabulary is
// checked by the server).
func tokenIDs(xs []int64, param string) ([]int32, *apiError) {
	if len(xs) == 0 {
		return nil, badRequest(param, "invalid_value", "key %q: empty prompt (a prompt needs at least one token)", param)
	}
	out := make([]int32, len(xs))
	for i, x := range xs {
		if x < 0 || x > math.MaxInt32 {
			return nil, badRequest(param, "invalid_value", "key %q[%d]: %d is not a token id", param, i, x)
		}
		out[i] = int32(x)
	}
	return out, nil
}
