package data

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ImportXLAM converts Salesforce's xLAM / APIGen function-calling data
// (xlam_function_calling_60k.json: a JSON array, or JSON Lines, of objects
// with "id", "query", and "tools" and "answers" as JSON-encoded strings).
//
//   - tools: [{"name", "description", "parameters": {param: {"type",
//     "description", "default"}}}] — a flat map from parameter name to a
//     Python-flavoured type ("str", "int", "List[str]", "str, optional").
//     It becomes a JSON schema in the same order: type mapped (str→string,
//     int→integer, float→number, bool→boolean, List[...]→array,
//     Dict[...]→object; unknown types leave "type" out), description and
//     default kept, and "required" = parameters whose type is not marked
//     optional. In xLAM a default is the API's example value, not a sign
//     of optionality: a parameter with one stays required unless the
//     record's answers leave it out (then it is not required in that
//     record; ImportStats.Quirks counts it). A parameter may be named
//     "type" or "properties": the flat map is told from a JSON schema by
//     its values (a schema's "type" is a string, its "properties" maps
//     names to schemas), not by its first key.
//   - answers: [{"name", "arguments"}] → calls ([] → no call).
//   - query → one user message.
func ImportXLAM(path string, opts ImportOptions) ([]Record, ImportStats, error) {
	items, err := readItems(path)
	if err != nil {
		return nil, ImportStats{}, err
	}
	n := 0
	quirks := map[string]int{}
	recs, st, err := convertAll(path, items, opts, func(it item) ([]Record, error) {
		var x struct {
			ID      json.RawMessage `json:"id"`
			Query   string          `json:"query"`
			Tools   json.RawMessage `json:"tools"`
			Answers json.RawMessage `json:"answers"`
		}
		if err := json.Unmarshal(it.Raw, &x); err != nil {
			return nil, err
		}
		id := fmt.Sprintf("xlam-%06d", n)
		n++
		if len(x.ID) > 0 && !isNull(x.ID) {
			var s any
			json.Unmarshal(x.ID, &s)
			switch v := s.(type) {
			case string:
				id = "xlam-" + v
			case float64:
				id = fmt.Sprintf("xlam-%06d", int64(v))
			}
		}
		if x.Tools == nil {
			return nil, fmt.Errorf("%s: missing \"tools\"", id)
		}
		toolsRaw, err := jsonStringOrValue(x.Tools)
		if err != nil {
			return nil, fmt.Errorf("%s: tools: %w", id, err)
		}
		var srcTools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		if err := json.Unmarshal(toolsRaw, &srcTools); err != nil {
			return nil, fmt.Errorf("%s: tools: %w", id, err)
		}
		rec := Record{ID: id, Lang: opts.Lang, Tools: []Tool{}, Calls: []Call{},
			Messages: []Message{{Role: "user", Content: x.Query}}}
		for _, t := range srcTools {
			params, err := xlamSchema(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("%s: tool %q: %w", id, t.Name, err)
			}
			rec.Tools = append(rec.Tools, Tool{Name: t.Name, Description: t.Description, Parameters: params})
		}
		if x.Answers == nil {
			return nil, fmt.Errorf("%s: missing \"answers\"", id)
		}
		ansRaw, err := jsonStringOrValue(x.Answers)
		if err != nil {
			return nil, fmt.Errorf("%s: answers: %w", id, err)
		}
		if err := json.Unmarshal(ansRaw, &rec.Calls); err != nil {
			return nil, fmt.Errorf("%s: answers: %w", id, err)
		}
		if rec.Calls == nil {
			rec.Calls = []Call{}
		}
		for i := range rec.Calls {
			if rec.Calls[i].Arguments == nil {
				rec.Calls[i].Arguments = map[string]any{}
			}
		}
		for _, c := range rec.Calls {
			t, ok := rec.ToolByName(c.Name)
			if !ok {
				continue
			}
			s, _ := t.Schema()
			for _, r := range s.Required {
				if p, _ := s.Property(r); p != nil && p.HasDefault {
					if _, given := c.Arguments[r]; !given {
						quirks[quirkXLAMDefault]++
						dropRequired(t, r)
					}
				}
			}
		}
		return []Record{rec}, nil
	})
	if len(quirks) > 0 {
		st.Quirks = quirks
	}
	return recs, st, err
}

const quirkXLAMDefault = "an answer leaves out a parameter that is not marked optional but has a default: not required in that record"

// xlamIsSchema tells a JSON-schema parameters object from xLAM's flat map
// of parameter name to {type, description, default}: a schema's "type" is
// a string (or a list), and its "properties" maps names to schemas rather
// than being one parameter's {type: "str", description: ...}.
func xlamIsSchema(keys []string, vals []json.RawMessage) bool {
	for i, k := range keys {
		switch k {
		case "type":
			if kind := kindOf(vals[i]); kind == "string" || kind == "array" {
				return true
			}
		case "properties":
			pk, pv, err := orderedObject(vals[i])
			if err != nil {
				continue
			}
			spec := false
			for j, name := range pk {
				spec = spec || (name == "type" || name == "description") && kindOf(pv[j]) == "string"
			}
			if !spec {
				return true
			}
		}
	}
	return false
}

// jsonStringOrValue unwraps a JSON string holding JSON (xLAM's encoding);
// a value that is already an array or object passes through.
func jsonStringOrValue(raw json.RawMessage) (json.RawMessage, error) {
	if kindOf(raw) != "string" {
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("the string does not hold valid JSON")
	}
	return json.RawMessage(s), nil
}

var xlamList = regexp.MustCompile(`^(?i)(list|tuple|set|sequence|array)(\[(.*)\])?$`)

// xlamType maps a Python-flavoured type to a JSON-schema type ("" if
// unknown) and the item type of lists.
func xlamType(t string) (string, string) {
	t = strings.TrimSpace(t)
	if m := xlamList.FindStringSubmatch(t); m != nil {
		item, _ := xlamType(m[3])
		return "array", item
	}
	base := strings.ToLower(t)
	if i := strings.IndexByte(base, '['); i >= 0 {
		base = base[:i]
	}
	switch base {
	case "str", "string":
		return "string", ""
	case "int", "integer":
		return "integer", ""
	case "float", "number", "double":
		return "number", ""
	case "bool", "boolean":
		return "boolean", ""
	case "dict", "object", "mapping":
		return "object", ""
	}
	return "", ""
}

func xlamSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || isNull(raw) {
		return json.RawMessage(`{"type": "object", "properties": {}}`), nil
	}
	keys, vals, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if xlamIsSchema(keys, vals) {
		return normalizeSchema(raw)
	}
	props := &onode{kind: '{'}
	required := &onode{kind: '['}
	for i, name := range keys {
		var p struct {
			Type        string          `json:"type"`
			Description string          `json:"description"`
			Default     json.RawMessage `json:"default"`
		}
		if err := json.Unmarshal(vals[i], &p); err != nil {
			return nil, fmt.Errorf("parameters.%s: %w", name, err)
		}
		typ, optional := xlamOptional(p.Type)
		js, item := xlamType(typ)
		node := &onode{kind: '{'}
		add := func(k string, v any) {
			b, _ := marshalNoEscape(v)
			kind := byte('s')
			if _, ok := v.(string); ok {
				kind = '"'
			}
			node.keys = append(node.keys, k)
			node.vals = append(node.vals, &onode{kind: kind, raw: b})
		}
		if js != "" {
			add("type", js)
		}
		if item != "" {
			node.keys = append(node.keys, "items")
			ib, _ := marshalNoEscape(item)
			node.vals = append(node.vals, &onode{kind: '{', keys: []string{"type"}, vals: []*onode{{kind: '"', raw: ib}}})
		}
		if p.Description != "" {
			add("description", p.Description)
		}
		if p.Default != nil {
			node.keys = append(node.keys, "default")
			node.vals = append(node.vals, &onode{kind: 's', raw: p.Default})
		}
		props.keys = append(props.keys, name)
		props.vals = append(props.vals, node)
		if !optional {
			nb, _ := marshalNoEscape(name)
			required.vals = append(required.vals, &onode{kind: '"', raw: nb})
		}
	}
	root := &onode{kind: '{', keys: []string{"type", "properties", "required"},
		vals: []*onode{{kind: '"', raw: json.RawMessage(`"object"`)}, props, required}}
	return root.marshal(), nil
}

// xlamOptional strips an optional marker: "str, optional", "Optional[str]",
// "optional str".
func xlamOptional(t string) (string, bool) {
	lower := strings.ToLower(strings.TrimSpace(t))
	t = strings.TrimSpace(t)
	switch {
	case strings.HasPrefix(lower, "optional[") && strings.HasSuffix(lower, "]"):
		return t[len("optional[") : len(t)-1], true
	case strings.Contains(lower, "optional"):
		i := strings.Index(lower, "optional")
		return strings.Trim(t[:i]+t[i+len("optional"):], " ,"), true
	}
	return t, false
}
