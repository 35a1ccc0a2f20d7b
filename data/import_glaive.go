package data

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ImportGlaive converts Glaive's function-calling-v2 data
// (glaive-function-calling-v2.json: a JSON array, or JSON Lines, of
// {"system", "chat"}).
//
//   - system: "SYSTEM: You are a helpful assistant with access to the
//     following functions. Use them if required -" followed by one or more
//     JSON function objects ({"name", "description", "parameters"}), one
//     after the other. Conversations whose system prompt lists no function
//     are dropped (counted in the notes). The prompt text itself is not
//     kept.
//   - chat: a transcript of "USER: ...", "ASSISTANT: ..." and "FUNCTION
//     RESPONSE: ..." turns; turns end with "<|endoftext|>". An assistant
//     turn holding "<functioncall> {"name": "f", "arguments": '{...}'}"
//     calls f; the arguments are a single-quoted JSON string (not valid
//     JSON as a whole), or a JSON object.
//
// Records are made per decision point as for ToolACE (see ImportToolACE).
func ImportGlaive(path string, opts ImportOptions) ([]Record, ImportStats, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, ImportStats{}, err
	}
	n := 0
	noTools := 0
	recs, st, err := convertAll(path, items, opts, func(it item) ([]Record, error) {
		idx := n
		n++
		var x struct {
			System string `json:"system"`
			Chat   string `json:"chat"`
		}
		if err := json.Unmarshal(it.Raw, &x); err != nil {
			return nil, err
		}
		tools, err := glaiveTools(x.System)
		if err != nil {
			return nil, fmt.Errorf("system: %w", err)
		}
		if len(tools) == 0 {
			noTools++
			return nil, nil
		}
		turns, err := glaiveTurns(x.Chat)
		if err != nil {
			return nil, fmt.Errorf("chat: %w", err)
		}
		return decisionRecords(fmt.Sprintf("glaive-%06d", idx), opts.Lang, tools, turns), nil
	})
	if noTools > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d conversations without functions dropped", noTools))
	}
	return recs, st, err
}

// glaiveTools decodes the consecutive JSON objects after the first '{'.
func glaiveTools(system string) ([]Tool, error) {
	i := strings.IndexByte(system, '{')
	if i < 0 {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(system[i:]))
	var tools []Tool
	for dec.More() {
		var f struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("function %d: %w", len(tools)+1, err)
		}
		p, err := normalizeSchema(f.Parameters)
		if err != nil {
			return nil, fmt.Errorf("function %q: %w", f.Name, err)
		}
		tools = append(tools, Tool{Name: f.Name, Description: f.Description, Parameters: p})
	}
	return tools, nil
}

var glaiveTurn = regexp.MustCompile(`(?m)^(USER|ASSISTANT|FUNCTION RESPONSE):[ \t]?`)

var glaiveCall = regexp.MustCompile(`(?s)^\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*'(.*)'\s*\}$`)

func glaiveTurns(chat string) ([]turn, error) {
	locs := glaiveTurn.FindAllStringSubmatchIndex(chat, -1)
	if len(locs) == 0 {
		return nil, fmt.Errorf("no USER:/ASSISTANT: turns")
	}
	var turns []turn
	for k, loc := range locs {
		end := len(chat)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		body := strings.TrimSpace(chat[loc[1]:end])
		body = strings.TrimSpace(strings.TrimSuffix(body, "<|endoftext|>"))
		switch chat[loc[2]:loc[3]] {
		case "USER":
			turns = append(turns, turn{role: "user", text: body})
		case "FUNCTION RESPONSE":
			turns = append(turns, turn{role: "tool", text: body})
		case "ASSISTANT":
			t := turn{role: "assistant", text: body}
			if i := strings.Index(body, "<functioncall>"); i >= 0 {
				c, err := glaiveFunctionCall(strings.TrimSpace(body[i+len("<functioncall>"):]))
				if err != nil {
					return nil, fmt.Errorf("turn %d: %w", k, err)
				}
				t.calls = []Call{c}
				t.text = strings.TrimSpace(body[:i])
			}
			turns = append(turns, t)
		}
	}
	return turns, nil
}

// glaiveFunctionCall decodes {"name": "f", "arguments": '{"a": 1}'} (or the
// same with a JSON object or JSON string as arguments).
func glaiveFunctionCall(s string) (Call, error) {
	s = strings.TrimSpace(strings.TrimSuffix(s, "<|endoftext|>"))
	var c Call
	var std struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var args json.RawMessage
	if json.Unmarshal([]byte(s), &std) == nil {
		c.Name = std.Name
		args = std.Arguments
		if kindOf(args) == "string" {
			var inner string
			json.Unmarshal(args, &inner)
			args = json.RawMessage(inner)
		}
	} else if m := glaiveCall.FindStringSubmatch(s); m != nil {
		if err := json.Unmarshal([]byte(m[1]), &c.Name); err != nil {
			return c, fmt.Errorf("<functioncall> name: %w", err)
		}
		args = json.RawMessage(m[2])
	} else {
		return c, fmt.Errorf("<functioncall> is neither JSON nor {\"name\": ..., \"arguments\": '...'}: %.80q", s)
	}
	c.Arguments = map[string]any{}
	if len(args) > 0 && !isNull(args) {
		if err := json.Unmarshal(args, &c.Arguments); err != nil {
			return c, fmt.Errorf("<functioncall> %s arguments: %w", c.Name, err)
		}
	}
	if c.Arguments == nil {
		c.Arguments = map[string]any{}
	}
	return c, nil
}
