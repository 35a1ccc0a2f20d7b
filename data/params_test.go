package data

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestSchema(t *testing.T) {
	tool := Tool{Name: "f", Parameters: json.RawMessage(`{"type": "object",
		"properties": {"zeta": {"type": "string", "enum": ["a", "b"], "description": "Z"},
		               "alpha": {"type": ["integer", "null"], "default": 3},
		               "mode": {"enum": ["x", "y"]},
		               "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}, "a": {}}}},
		               "opts": {"type": "object", "properties": {"b": {"type": "boolean"}, "a": {"type": "number"}}, "required": ["b"]}},
		"required": ["zeta", "opts"]}`)}
	s, err := tool.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.PropertyNames(); !reflect.DeepEqual(got, []string{"zeta", "alpha", "mode", "tags", "opts"}) {
		t.Errorf("property order %v", got)
	}
	if !s.IsRequired("zeta") || !s.IsRequired("opts") || s.IsRequired("alpha") {
		t.Errorf("required %v", s.Required)
	}
	z, _ := s.Property("zeta")
	if !z.IsTextual() || !reflect.DeepEqual(z.Enum, []any{"a", "b"}) || z.Description != "Z" {
		t.Errorf("zeta = %+v", z)
	}
	a, _ := s.Property("alpha")
	if a.IsTextual() || !a.HasType("integer") || !a.HasType("null") || !a.HasDefault || a.Default != 3.0 {
		t.Errorf("alpha = %+v", a)
	}
	if m, _ := s.Property("mode"); !m.IsTextual() {
		t.Errorf("an untyped enum of strings is textual")
	}
	tags, _ := s.Property("tags")
	if tags.Items == nil || !reflect.DeepEqual(tags.Items.PropertyNames(), []string{"k", "a"}) {
		t.Errorf("items = %+v", tags.Items)
	}
	o, _ := s.Property("opts")
	if !reflect.DeepEqual(o.PropertyNames(), []string{"b", "a"}) || !o.IsRequired("b") {
		t.Errorf("opts = %+v", o)
	}
	if _, ok := s.Property("nope"); ok {
		t.Errorf("unknown property found")
	}
	empty, err := Tool{Name: "g"}.Schema()
	if err != nil || empty.HasProperties || len(empty.Required) != 0 {
		t.Errorf("no parameters: %+v %v", empty, err)
	}
	for _, bad := range []string{`[]`, `{"properties": []}`, `{"type": 3}`, `{"required": [1]}`, `{"properties": {"a": 5}}`, `{"enum": 1}`} {
		if _, err := ParseSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseSchema(%s) should fail", bad)
		}
	}
}

func TestNormalizeSchemaKeepsOrder(t *testing.T) {
	out, err := normalizeSchema(json.RawMessage(`{"type": "dict", "properties": {"z": {"type": "float"}, "a": {"type": "tuple", "items": {"type": "dict", "properties": {"q": {"type": "int"}}}}, "m": {"type": ["str", "null"]}}, "required": ["z", "ghost"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type": "object", "properties": {"z": {"type": "number"}, "a": {"type": "array", "items": {"type": "object", "properties": {"q": {"type": "integer"}}}}, "m": {"type": ["string", "null"]}}, "required": ["z"]}`
	if string(out) != want {
		t.Errorf("normalizeSchema:\n got %s\nwant %s", out, want)
	}
}
