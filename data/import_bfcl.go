package data

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ImportBFCL converts a Berkeley Function Calling Leaderboard question file
// (BFCL_v3_<category>.json: one object per line with "id", "question" and
// "function") together with its possible_answer file (opts.Answers: "id" and
// "ground_truth", a list of {function_name: {param: [acceptable values]}}).
//
//   - question: a list of turns, each a list of {"role", "content"} messages
//     (all turns are kept in order); a plain string is one user message.
//   - function: the tool list (a single object is accepted); parameter
//     schemas are normalized to JSON schema (dict→object, float→number,
//     tuple→array, ...), keeping key order.
//   - accept: the possible answers verbatim per argument, with nested dicts
//     (whose values are themselves option lists) reduced to their first
//     choices.
//   - calls: per argument the first acceptable value ("" first means the
//     argument is omitted), or the first non-"" one for a required
//     argument.
//   - irrelevance categories (ids containing "irrelevance") have no
//     possible answers and become calls=[].
//
// Multi-turn categories (execution-trace answers) and live_relevance (no
// gold call) are refused with an error. Answers are matched by id, or by
// position when the files carry no ids.
func ImportBFCL(path string, opts ImportOptions) ([]Record, ImportStats, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, ImportStats{}, err
	}
	answers := map[string]json.RawMessage{}
	var byPos []json.RawMessage
	if opts.Answers != "" {
		aitems, err := readItems(opts.Answers)
		if err != nil {
			return nil, ImportStats{}, err
		}
		for _, a := range aitems {
			var head struct {
				ID          string          `json:"id"`
				GroundTruth json.RawMessage `json:"ground_truth"`
			}
			if err := json.Unmarshal(a.Raw, &head); err != nil {
				return nil, ImportStats{}, &Error{File: opts.Answers, Line: a.Line, Msg: err.Error()}
			}
			if head.GroundTruth == nil {
				return nil, ImportStats{}, &Error{File: opts.Answers, Line: a.Line, Field: "ground_truth", Msg: "missing"}
			}
			if head.ID != "" {
				answers[head.ID] = head.GroundTruth
			}
			byPos = append(byPos, head.GroundTruth)
		}
	}
	pos := 0
	return convertAll(path, items, opts, func(it item) ([]Record, error) {
		var q struct {
			ID            string          `json:"id"`
			Question      json.RawMessage `json:"question"`
			Function      json.RawMessage `json:"function"`
			InitialConfig json.RawMessage `json:"initial_config"`
		}
		if err := json.Unmarshal(it.Raw, &q); err != nil {
			return nil, err
		}
		idx := pos
		pos++
		id := q.ID
		if id == "" {
			id = fmt.Sprintf("bfcl-%06d", idx)
		}
		if strings.HasPrefix(id, "multi_turn") || q.InitialConfig != nil {
			return nil, fmt.Errorf("%s: BFCL multi-turn categories are not supported (their answers are execution traces)", id)
		}
		rec := Record{ID: id, Lang: opts.Lang, Calls: []Call{}}
		var err error
		if rec.Messages, err = bfclMessages(q.Question); err != nil {
			return nil, fmt.Errorf("%s: question: %w", id, err)
		}
		if rec.Tools, err = bfclTools(q.Function); err != nil {
			return nil, fmt.Errorf("%s: function: %w", id, err)
		}
		gt, ok := answers[q.ID]
		if !ok && q.ID == "" && idx < len(byPos) {
			gt, ok = byPos[idx], true
		}
		switch {
		case strings.Contains(id, "irrelevance"):
			return []Record{rec}, nil
		case strings.Contains(id, "relevance"):
			return nil, fmt.Errorf("%s: live_relevance has no gold call to convert", id)
		case !ok && opts.Answers == "":
			return nil, fmt.Errorf("%s: no possible answer (pass the possible_answer file with --answers)", id)
		case !ok:
			return nil, fmt.Errorf("%s: no possible answer in %s", id, opts.Answers)
		}
		if err := bfclGold(&rec, gt); err != nil {
			return nil, fmt.Errorf("%s: ground_truth: %w", id, err)
		}
		return []Record{rec}, nil
	})
}

func bfclMessages(raw json.RawMessage) ([]Message, error) {
	if kindOf(raw) == "string" {
		var s string
		json.Unmarshal(raw, &s)
		return []Message{{Role: "user", Content: s}}, nil
	}
	var turns []json.RawMessage
	if err := json.Unmarshal(raw, &turns); err != nil {
		return nil, fmt.Errorf("must be a string or a list of turns")
	}
	var out []Message
	for _, t := range turns {
		var msgs []Message
		if kindOf(t) == "object" { // a flat list of messages
			var m Message
			if err := json.Unmarshal(t, &m); err != nil {
				return nil, err
			}
			msgs = []Message{m}
		} else if err := json.Unmarshal(t, &msgs); err != nil {
			return nil, fmt.Errorf("a turn must be a list of {role, content} messages")
		}
		out = append(out, msgs...)
	}
	return out, nil
}

// bfclTools decodes BFCL's function list (name, description, parameters).
func bfclTools(raw json.RawMessage) ([]Tool, error) {
	var fns []json.RawMessage
	if kindOf(raw) == "object" {
		fns = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &fns); err != nil {
		return nil, fmt.Errorf("must be a list of functions")
	}
	tools := make([]Tool, 0, len(fns))
	for i, f := range fns {
		var fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(f, &fn); err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		params, err := normalizeSchema(fn.Parameters)
		if err != nil {
			return nil, fmt.Errorf("[%d] (%s) parameters: %w", i, fn.Name, err)
		}
		tools = append(tools, Tool{Name: fn.Name, Description: fn.Description, Parameters: params})
	}
	return tools, nil
}

// bfclGold fills calls and accept from a ground_truth list.
func bfclGold(rec *Record, raw json.RawMessage) error {
	var gts []json.RawMessage
	if kindOf(raw) == "object" {
		gts = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &gts); err != nil {
		return fmt.Errorf("must be a list of {function: {param: [values]}}")
	}
	rec.Accept = make([]map[string][]any, 0, len(gts))
	for i, g := range gts {
		keys, vals, err := orderedObject(g)
		if err != nil || len(keys) != 1 {
			return fmt.Errorf("[%d]: must be an object with exactly one function name", i)
		}
		name := keys[0]
		var params map[string]any
		if err := json.Unmarshal(vals[0], &params); err != nil || params == nil {
			return fmt.Errorf("[%d] %s: must map parameters to lists of values", i, name)
		}
		var schema *Schema
		if t, ok := rec.ToolByName(name); ok {
			schema, _ = t.Schema()
		}
		call := Call{Name: name, Arguments: map[string]any{}}
		accept := map[string][]any{}
		for _, p := range sortedKeys(params) {
			opts, ok := params[p].([]any)
			if !ok || len(opts) == 0 {
				return fmt.Errorf("[%d] %s.%s: must be a non-empty list of acceptable values", i, name, p)
			}
			conc := make([]any, len(opts))
			for j, o := range opts {
				conc[j] = firstChoices(o)
			}
			accept[p] = conc
			pick := conc[0]
			if schema.IsRequired(p) {
				pick = nil
				for _, o := range conc {
					if o != "" {
						pick = o
						break
					}
				}
				if pick == nil {
					return fmt.Errorf("[%d] %s.%s: required but only \"\" is acceptable", i, name, p)
				}
			}
			if pick != "" {
				call.Arguments[p] = pick
			}
		}
		rec.Calls = append(rec.Calls, call)
		rec.Accept = append(rec.Accept, accept)
	}
	return nil
}

// firstChoices turns a BFCL possible-answer value into a concrete value:
// inside dicts every key maps to a list of options, of which the first is
// taken ("" first means the key is omitted); lists are taken element-wise.
func firstChoices(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, opts := range x {
			list, ok := opts.([]any)
			if !ok {
				out[k] = firstChoices(opts)
				continue
			}
			if len(list) == 0 || list[0] == "" {
				continue
			}
			out[k] = firstChoices(list[0])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = firstChoices(el)
		}
		return out
	}
	return v
}
