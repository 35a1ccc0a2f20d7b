package data

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/argrl/argrl/data/internal/pylit"
)

// ImportToolACE converts Team-ACE's ToolACE data (data.json: a JSON array,
// or JSON Lines, of {"system", "conversations"}).
//
//   - system: the prompt with the tool list embedded as a JSON array ("Here
//     is a list of functions in JSON format that you can invoke: [...]");
//     the first JSON array of objects with a "name" is taken as the tools
//     (schemas normalized: dict→object, float→number, ...). The prompt's
//     own instructions describe ToolACE's output format, not ours, so the
//     system text itself is not kept.
//   - conversations: [{"from": "user"|"assistant"|"tool", "value"}]
//     ("human"/"gpt"/"function"/"observation" are accepted too). An
//     assistant value that is a Python call list "[f(a=1), g(b='x')]" is a
//     tool-calling turn.
//
// One record is made per decision point: each assistant turn with calls
// (gold = those calls, messages = the conversation before it), and each
// assistant text turn that answers a user message directly (gold = no
// call). Text turns that follow a tool result summarize it and are not
// decision points; they only stay in the history of later records.
func ImportToolACE(path string, opts ImportOptions) ([]Record, ImportStats, error) {
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
			System        string `json:"system"`
			Conversations []struct {
				From  string `json:"from"`
				Value string `json:"value"`
			} `json:"conversations"`
		}
		if err := json.Unmarshal(it.Raw, &x); err != nil {
			return nil, err
		}
		tools, err := toolaceTools(x.System)
		if err != nil {
			return nil, err
		}
		if len(tools) == 0 {
			noTools++
			return nil, nil
		}
		var turns []turn
		for i, c := range x.Conversations {
			role, ok := shareGPTRoles[strings.ToLower(c.From)]
			if !ok {
				return nil, fmt.Errorf("conversations[%d].from: unknown role %q", i, c.From)
			}
			t := turn{role: role, text: c.Value}
			v := strings.TrimSpace(c.Value)
			if role == "assistant" && strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
				calls, err := pythonCalls(v)
				if err != nil {
					return nil, fmt.Errorf("conversations[%d]: assistant call list: %w", i, err)
				}
				t.calls, t.text = calls, ""
			}
			turns = append(turns, t)
		}
		return decisionRecords(fmt.Sprintf("toolace-%06d", idx), opts.Lang, tools, turns), nil
	})
	if noTools > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf("%d conversations without a tool list dropped", noTools))
	}
	return recs, st, err
}

var shareGPTRoles = map[string]string{
	"user": "user", "human": "user", "assistant": "assistant", "gpt": "assistant",
	"tool": "tool", "function": "tool", "observation": "tool", "system": "system",
}

// pythonCalls parses a Python call list into calls.
func pythonCalls(s string) ([]Call, error) {
	pcs, err := pylit.ParseList(s, 0, len(s))
	if err != nil {
		return nil, err
	}
	calls := make([]Call, 0, len(pcs))
	for _, pc := range pcs {
		c := Call{Name: pc.Name, Arguments: make(map[string]any, len(pc.Args))}
		for _, a := range pc.Args {
			c.Arguments[a.Name] = a.Value
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// toolaceTools finds the tool list: the first JSON array in the prompt whose
// elements are objects with a "name".
func toolaceTools(system string) ([]Tool, error) {
	for i := strings.IndexByte(system, '['); i >= 0; {
		dec := json.NewDecoder(strings.NewReader(system[i:]))
		var fns []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if dec.Decode(&fns) == nil && len(fns) > 0 && fns[0].Name != "" {
			tools := make([]Tool, 0, len(fns))
			for _, f := range fns {
				p, err := normalizeSchema(f.Parameters)
				if err != nil {
					return nil, fmt.Errorf("system: tool %q: %w", f.Name, err)
				}
				tools = append(tools, Tool{Name: f.Name, Description: f.Description, Parameters: p})
			}
			return tools, nil
		}
		j := strings.IndexByte(system[i+1:], '[')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return nil, nil
}

// turn is one conversation turn in a source dialogue.
type turn struct {
	role  string
	text  string
	calls []Call
	name  string // tool turns: the tool that answered ("" to read it from text)
}

// decisionRecords makes one record per decision point of a dialogue (see
// ImportToolACE): assistant turns with calls, and assistant text turns that
// directly answer a user turn. Without tools (plain chat) each such text
// turn is the record's response.
func decisionRecords(prefix, lang string, tools []Tool, turns []turn) []Record {
	var out []Record
	var history []Message
	for k, t := range turns {
		if t.role == "assistant" {
			prevUser := len(history) > 0 && history[len(history)-1].Role == "user"
			if len(t.calls) > 0 || prevUser {
				calls := t.calls
				if calls == nil {
					calls = []Call{}
				}
				rec := Record{
					ID:       fmt.Sprintf("%s-t%d", prefix, k),
					Lang:     lang,
					Tools:    tools,
					Messages: append([]Message(nil), history...),
					Calls:    calls,
				}
				if len(tools) == 0 && len(t.calls) == 0 {
					rec.Response = t.text // plain chat: the answer is the target
				}
				out = append(out, rec)
			}
			history = append(history, Message{Role: "assistant", Content: t.text, ToolCalls: t.calls})
			continue
		}
		m := Message{Role: t.role, Content: t.text}
		if t.role == "tool" {
			m.Name = t.name
			if m.Name == "" {
				m.Name = toolResultName(t.text)
			}
		}
		history = append(history, m)
	}
	return out
}

// toolResultName reads the tool name from a result like
// [{"name": "f", "results": {...}}] or {"name": "f", ...}, else "".
func toolResultName(s string) string {
	var one struct {
		Name string `json:"name"`
	}
	var many []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal([]byte(s), &many) == nil && len(many) == 1 {
		return many[0].Name
	}
	if json.Unmarshal([]byte(s), &one) == nil {
		return one.Name
	}
	return ""
}
