package data

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Schema is the part of a JSON-schema node argrl uses: types, enum,
// required names and properties in the order the source wrote them (prompt
// rendering and gold rendering both preserve that order).
type Schema struct {
	Type        []string // "type" as a list ("string" becomes ["string"]); nil when absent
	Description string
	Enum        []any
	Default     any  // "default", nil when absent
	HasDefault  bool // whether "default" was present (its value may be null)
	Required    []string
	Properties  []Property // "properties" in source order
	// HasProperties tells whether the node has a "properties" key at all
	// (an empty "properties" still restricts argument names).
	HasProperties bool
	Items         *Schema // "items" when it is a single schema object
}

// Property is one named entry of a schema's "properties".
type Property struct {
	Name   string
	Schema *Schema
}

// Schema parses the tool's parameters. A tool without parameters has an
// empty schema (no properties declared, nothing required).
func (t Tool) Schema() (*Schema, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return &Schema{}, nil
	}
	return ParseSchema(t.Parameters)
}

// ParseSchema parses a JSON-schema object. Unknown keywords are ignored;
// wrong shapes of the keywords above are errors naming the path inside the
// schema (e.g. "properties.amount.type").
func ParseSchema(raw json.RawMessage) (*Schema, error) {
	return parseSchema(raw, "")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func parseSchema(raw json.RawMessage, path string) (*Schema, error) {
	keys, vals, err := orderedObject(raw)
	if err != nil {
		if path == "" {
			return nil, fmt.Errorf("schema: %w", err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Schema{}
	for i, k := range keys {
		v := vals[i]
		switch k {
		case "type":
			switch kindOf(v) {
			case "string":
				var t string
				json.Unmarshal(v, &t)
				s.Type = []string{t}
			case "array":
				if err := json.Unmarshal(v, &s.Type); err != nil {
					return nil, fmt.Errorf("%s: must be a string or a list of strings", join(path, k))
				}
			default:
				return nil, fmt.Errorf("%s: must be a string or a list of strings, got %s", join(path, k), kindOf(v))
			}
		case "description":
			if kindOf(v) == "string" {
				json.Unmarshal(v, &s.Description)
			}
		case "enum":
			if err := json.Unmarshal(v, &s.Enum); err != nil || kindOf(v) != "array" {
				return nil, fmt.Errorf("%s: must be an array, got %s", join(path, k), kindOf(v))
			}
		case "default":
			s.HasDefault = true
			json.Unmarshal(v, &s.Default)
		case "required":
			if kindOf(v) != "array" {
				return nil, fmt.Errorf("%s: must be an array of strings, got %s", join(path, k), kindOf(v))
			}
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return nil, fmt.Errorf("%s: must be an array of strings", join(path, k))
			}
		case "properties":
			pk, pv, err := orderedObject(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", join(path, k), err)
			}
			s.HasProperties = true
			s.Properties = make([]Property, 0, len(pk))
			for j, name := range pk {
				ps, err := parseSchema(pv[j], join(join(path, k), name))
				if err != nil {
					return nil, err
				}
				s.Properties = append(s.Properties, Property{Name: name, Schema: ps})
			}
		case "items":
			if kindOf(v) == "object" {
				it, err := parseSchema(v, join(path, k))
				if err != nil {
					return nil, err
				}
				s.Items = it
			}
		}
	}
	return s, nil
}

// orderedObject decodes a JSON object into its keys (source order) and raw
// values. A repeated key keeps its first position and its last value.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if k := kindOf(raw); k != "object" {
		return nil, nil, fmt.Errorf("must be an object, got %s", k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	var keys []string
	var vals []json.RawMessage
	pos := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if i, ok := pos[k]; ok {
			vals[i] = v
			continue
		}
		pos[k] = len(keys)
		keys = append(keys, k)
		vals = append(vals, v)
	}
	return keys, vals, nil
}

// Property returns the schema of the named property.
func (s *Schema) Property(name string) (*Schema, bool) {
	if s == nil {
		return nil, false
	}
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema, true
		}
	}
	return nil, false
}

// PropertyNames lists the property names in source order.
func (s *Schema) PropertyNames() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Properties))
	for i, p := range s.Properties {
		out[i] = p.Name
	}
	return out
}

// IsRequired tells whether name is listed in "required".
func (s *Schema) IsRequired(name string) bool {
	if s == nil {
		return false
	}
	for _, r := range s.Required {
		if r == name {
			return true
		}
	}
	return false
}

// HasType tells whether t is among the node's types.
func (s *Schema) HasType(t string) bool {
	if s == nil {
		return false
	}
	for _, x := range s.Type {
		if x == t {
			return true
		}
	}
	return false
}

// IsTextual tells whether an argument with this schema is textual
// (string-valued) in the sense of docs/contracts.md §3: its type includes "string",
// or it has no type and an enum made only of strings.
func (s *Schema) IsTextual() bool {
	if s == nil {
		return false
	}
	if s.HasType("string") {
		return true
	}
	if len(s.Type) == 0 && len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// ToolByName returns the record's tool with that name.
func (r *Record) ToolByName(name string) (*Tool, bool) {
	for i := range r.Tools {
		if r.Tools[i].Name == name {
			return &r.Tools[i], true
		}
	}
	return nil, false
}
