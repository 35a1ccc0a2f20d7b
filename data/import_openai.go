package data

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ImportOpenAI converts OpenAI chat-format data: the JSONL of OpenAI's
// fine-tuning API and of most tool-calling datasets, one conversation per
// line (a JSON array of conversations, and parquet with the same columns,
// are read too):
//
//	{"messages": [{"role": "system"|"developer"|"user"|"assistant"|"tool", "content": ...}],
//	 "tools": [{"type": "function", "function": {"name", "description", "parameters"}}]}
//
// In it:
//   - content is a string, null, or a list of parts ({"type": "text",
//     "text"}) whose texts are joined;
//   - an assistant message's "tool_calls" are [{"id", "type": "function",
//     "function": {"name", "arguments"}}], arguments a JSON-encoded string
//     (or an object); the legacy "function_call" {"name", "arguments"} is
//     one call;
//   - a "tool" message answers the call its "tool_call_id" names (the
//     legacy "function" role carries "name");
//   - tools may also be bare {"name", "description", "parameters"}, or the
//     legacy "functions" list.
//
// Records are made per decision point as for ToolACE (ImportToolACE). A
// conversation without tools is plain chat: each assistant text answer to
// a user message becomes a record with no tools and that text as its
// response (SFT on the assistant turns).
func ImportOpenAI(path string, opts ImportOptions) ([]Record, ImportStats, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, ImportStats{}, err
	}
	n := 0
	return convertAll(path, items, opts, func(it item) ([]Record, error) {
		idx := n
		n++
		var x struct {
			Messages  []json.RawMessage `json:"messages"`
			Tools     json.RawMessage   `json:"tools"`
			Functions json.RawMessage   `json:"functions"`
		}
		if err := json.Unmarshal(it.Raw, &x); err != nil {
			return nil, err
		}
		if x.Messages == nil {
			return nil, fmt.Errorf(`messages: missing (an OpenAI chat record is {"messages": [...], "tools": [...]})`)
		}
		toolsRaw := x.Tools
		if len(toolsRaw) == 0 || isNull(toolsRaw) {
			toolsRaw = x.Functions
		}
		tools, err := openAITools(toolsRaw)
		if err != nil {
			return nil, err
		}
		var turns []turn
		callNames := map[string]string{} // tool_call_id → function name
		var errs problems
		for i, raw := range x.Messages {
			t, err := openAIMessage(raw, callNames)
			if err != nil {
				errs.add(fieldErr(fmt.Sprintf("messages[%d]", i), "%v", err))
				continue
			}
			turns = append(turns, t)
		}
		if err := errs.err(); err != nil {
			return nil, err
		}
		return decisionRecords(fmt.Sprintf("openai-%06d", idx), opts.Lang, tools, turns), nil
	})
}

// openAITools reads a tools (or legacy functions) list.
func openAITools(raw json.RawMessage) ([]Tool, error) {
	tools := []Tool{}
	if len(raw) == 0 || isNull(raw) {
		return tools, nil
	}
	raw, err := jsonStringOrValue(raw)
	if err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("tools: must be an array, got %s", kindOf(raw))
	}
	var errs problems
	for i, el := range list {
		var w struct {
			Type     string          `json:"type"`
			Function json.RawMessage `json:"function"`
		}
		if err := json.Unmarshal(el, &w); err != nil {
			errs.add(fieldErr(fmt.Sprintf("tools[%d]", i), "must be an object, got %s", kindOf(el)))
			continue
		}
		fn := el
		if len(w.Function) > 0 && !isNull(w.Function) {
			if w.Type != "" && w.Type != "function" {
				errs.add(fieldErr(fmt.Sprintf("tools[%d].type", i), "only function tools are supported, got %q", w.Type))
				continue
			}
			fn = w.Function
		}
		t, err := sourceTool(fn)
		if err != nil {
			errs.add(fieldErr(fmt.Sprintf("tools[%d]", i), "%v", err))
			continue
		}
		tools = append(tools, t)
	}
	return tools, errs.err()
}

// sourceTool decodes {"name", "description", "parameters"} with the
// parameter schema normalized (dict→object, ...).
func sourceTool(raw json.RawMessage) (Tool, error) {
	var f struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return Tool{}, err
	}
	if f.Name == "" {
		return Tool{}, fmt.Errorf("name: missing")
	}
	p, err := jsonStringOrValue(f.Parameters)
	if err != nil {
		return Tool{}, fmt.Errorf("%s: parameters: %w", f.Name, err)
	}
	if p, err = normalizeSchema(p); err != nil {
		return Tool{}, fmt.Errorf("%s: %w", f.Name, err)
	}
	if p != nil {
		p = compact(p)
	}
	return Tool{Name: f.Name, Description: f.Description, Parameters: p}, nil
}

var openAIRoles = map[string]string{"system": "system", "developer": "system", "user": "user",
	"assistant": "assistant", "tool": "tool", "function": "tool"}

// openAIMessage converts one message; callNames maps the ids of the calls
// made so far to their function names (for tool replies).
func openAIMessage(raw json.RawMessage, callNames map[string]string) (turn, error) {
	var m struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		FunctionCall *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function_call"`
		ToolCallID string `json:"tool_call_id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return turn{}, err
	}
	role, ok := openAIRoles[m.Role]
	if !ok {
		return turn{}, fmt.Errorf("role: must be system, developer, user, assistant or tool, got %q", m.Role)
	}
	text, err := contentText(m.Content)
	if err != nil {
		return turn{}, fmt.Errorf("content: %w", err)
	}
	t := turn{role: role, text: text}
	var errs problems
	for j, tc := range m.ToolCalls {
		if role != "assistant" {
			return turn{}, fmt.Errorf("tool_calls: only assistant messages make calls (role %q)", m.Role)
		}
		if tc.Type != "" && tc.Type != "function" {
			errs.add(fieldErr(fmt.Sprintf("tool_calls[%d].type", j), "only function calls are supported, got %q", tc.Type))
			continue
		}
		c, err := sourceCall(tc.Function.Name, tc.Function.Arguments)
		if err != nil {
			errs.add(fieldErr(fmt.Sprintf("tool_calls[%d].function", j), "%v", err))
			continue
		}
		if tc.ID != "" {
			callNames[tc.ID] = c.Name
		}
		t.calls = append(t.calls, c)
	}
	if m.FunctionCall != nil {
		c, err := sourceCall(m.FunctionCall.Name, m.FunctionCall.Arguments)
		if err != nil {
			errs.add(fieldErr("function_call", "%v", err))
		} else {
			t.calls = append(t.calls, c)
		}
	}
	if err := errs.err(); err != nil {
		return turn{}, err
	}
	if role == "tool" {
		t.name = m.Name
		if n, ok := callNames[m.ToolCallID]; ok {
			t.name = n
		}
	}
	return t, nil
}

// sourceCall decodes a call whose arguments are a JSON object or a string
// holding one (OpenAI's form).
func sourceCall(name string, args json.RawMessage) (Call, error) {
	if name == "" {
		return Call{}, fmt.Errorf("name: missing")
	}
	c := Call{Name: name, Arguments: map[string]any{}}
	if len(args) == 0 || isNull(args) {
		return c, nil
	}
	a, err := jsonStringOrValue(args)
	if err != nil {
		return c, fmt.Errorf("%s: arguments: %w", name, err)
	}
	if strings.TrimSpace(string(a)) == "" {
		return c, nil
	}
	if kindOf(a) != "object" {
		return c, fmt.Errorf("%s: arguments: must be a JSON object, got %s", name, kindOf(a))
	}
	if err := json.Unmarshal(a, &c.Arguments); err != nil {
		return c, fmt.Errorf("%s: arguments: %w", name, err)
	}
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	return c, nil
}

// contentText reads message content: a string, null, or a list of parts
// whose "text" fields are joined.
func contentText(raw json.RawMessage) (string, error) {
	switch kindOf(raw) {
	case "nothing", "null":
		return "", nil
	case "string":
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case "array":
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", err
		}
		var b strings.Builder
		for i, p := range parts {
			if p.Text == nil {
				return "", fmt.Errorf("part %d (type %q) has no text: only text content is supported", i, p.Type)
			}
			b.WriteString(*p.Text)
		}
		return b.String(), nil
	default:
		return "", fmt.Errorf("must be a string, null or a list of text parts, got %s", kindOf(raw))
	}
}

// ImportShareGPT converts ShareGPT conversations, plain or with function
// calls (LLaMA-Factory's sharegpt layout), one per line or in an array
// (parquet with the same columns is read too):
//
//	{"conversations": [{"from": "system"|"human"|"gpt"|"function_call"|"observation", "value": "..."}],
//	 "system": "...", "tools": "[{\"name\", \"description\", \"parameters\"}]"}
//
// In it:
//   - "human"/"user" are user turns, "gpt"/"assistant" assistant text
//     turns; "function_call" is an assistant turn whose value is a JSON
//     call {"name", "arguments"} or a list of them; "observation"/"tool"/
//     "function" are tool results;
//   - "system" (key or first turn) is kept as the system message;
//   - "tools" is a JSON array or a string holding one (absent: plain chat).
//
// Records are made per decision point as for ImportOpenAI.
func ImportShareGPT(path string, opts ImportOptions) ([]Record, ImportStats, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, ImportStats{}, err
	}
	n := 0
	return convertAll(path, items, opts, func(it item) ([]Record, error) {
		idx := n
		n++
		var x struct {
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
			System string          `json:"system"`
			Tools  json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(it.Raw, &x); err != nil {
			return nil, err
		}
		if x.Conversations == nil {
			return nil, fmt.Errorf(`conversations: missing (a ShareGPT record is {"conversations": [{"from", "value"}], "tools": ...})`)
		}
		var turns []turn
		if x.System != "" {
			turns = append(turns, turn{role: "system", text: x.System})
		}
		var errs problems
		for i, c := range x.Conversations {
			p := fmt.Sprintf("conversations[%d]", i)
			from := strings.ToLower(c.From)
			if from == "function_call" {
				calls, err := shareGPTCalls(c.Value)
				if err != nil {
					errs.add(fieldErr(p+".value", "%v", err))
					continue
				}
				if k := len(turns) - 1; k >= 0 && turns[k].role == "assistant" && len(turns[k].calls) == 0 {
					turns[k].calls = calls // a thought, then its call
				} else {
					turns = append(turns, turn{role: "assistant", calls: calls})
				}
				continue
			}
			role, ok := shareGPTRoles[from]
			if !ok {
				errs.add(fieldErr(p+".from", "unknown role %q (valid: system, human, gpt, function_call, observation)", c.From))
				continue
			}
			t := turn{role: role, text: c.Value}
			if role == "tool" {
				t.name = toolResultName(c.Value)
			}
			turns = append(turns, t)
		}
		tools, err := openAITools(x.Tools)
		errs.add(err)
		if err := errs.err(); err != nil {
			return nil, err
		}
		return decisionRecords(fmt.Sprintf("sharegpt-%06d", idx), opts.Lang, tools, turns), nil
	})
}

// shareGPTCalls decodes a function_call value: one {"name", "arguments"}
// or a list of them.
func shareGPTCalls(v string) ([]Call, error) {
	var raws []json.RawMessage
	trimmed := strings.TrimSpace(v)
	if strings.HasPrefix(trimmed, "[") {
		if err := json.Unmarshal([]byte(trimmed), &raws); err != nil {
			return nil, fmt.Errorf("not a JSON list of calls: %w", err)
		}
	} else {
		raws = []json.RawMessage{json.RawMessage(trimmed)}
	}
	var calls []Call
	for _, r := range raws {
		var c struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(r, &c); err != nil {
			return nil, fmt.Errorf("not a JSON call {\"name\", \"arguments\"}: %w", err)
		}
		call, err := sourceCall(c.Name, c.Arguments)
		if err != nil {
			return nil, err
		}
		calls = append(calls, call)
	}
	return calls, nil
}

// ReadTools reads a JSON file holding a list of tools, in argrl's form
// ({"name", "description", "parameters"}) or OpenAI's ({"type":
// "function", "function": {...}}); names must be valid and unique.
func ReadTools(path string) ([]Tool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if !json.Valid(b) {
		var v any
		return nil, &Error{File: path, Msg: fmt.Sprintf("not valid JSON: %v", json.Unmarshal(b, &v))}
	}
	tools, err := openAITools(b)
	if err != nil {
		return nil, at(err, path, 0)
	}
	seen := map[string]bool{}
	for i, t := range tools {
		if why := ValidName(t.Name); why != "" {
			return nil, &Error{File: path, Field: fmt.Sprintf("[%d].name", i), Msg: fmt.Sprintf("invalid tool name %q: %s", t.Name, why)}
		}
		if seen[t.Name] {
			return nil, &Error{File: path, Field: fmt.Sprintf("[%d].name", i), Msg: fmt.Sprintf("duplicate tool %q", t.Name)}
		}
		seen[t.Name] = true
	}
	return tools, nil
}
