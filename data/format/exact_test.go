package format

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// plainExact maps an Exact tree back to Arguments' types.
func plainExact(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case *Object:
		m := make(map[string]any, len(x.Keys))
		for _, k := range x.Keys {
			m[k] = plainExact(x.Values[k])
		}
		return m
	case Tuple:
		return plainExact([]any(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainExact(e)
		}
		return out
	}
	return v
}

func TestExactKeepsLiterals(t *testing.T) {
	p := ToolCall{}.Parse(`<tool_call>{"name": "f", "arguments": {"z": 10, "a": 10.0, "m": [1e3, -0, 2.50], "o": {"y": 1, "x": {"k": 5}, "y": 2}}}</tool_call>`)
	if !p.Valid || len(p.Calls) != 1 {
		t.Fatalf("%+v", p)
	}
	e := p.Calls[0].Exact
	if !reflect.DeepEqual(e.Keys, []string{"z", "a", "m", "o"}) {
		t.Errorf("argument order %v", e.Keys)
	}
	if e.Values["z"] != json.Number("10") || e.Values["a"] != json.Number("10.0") {
		t.Errorf("10 and 10.0 must stay apart: %#v %#v", e.Values["z"], e.Values["a"])
	}
	if !reflect.DeepEqual(e.Values["m"], []any{json.Number("1e3"), json.Number("-0"), json.Number("2.50")}) {
		t.Errorf("list %#v", e.Values["m"])
	}
	o := e.Values["o"].(*Object)
	if !reflect.DeepEqual(o.Keys, []string{"y", "x"}) || o.Values["y"] != json.Number("2") {
		t.Errorf("object %#v (a repeated key keeps its first place and its last value)", o)
	}
	if p.Calls[0].Arguments["a"] != 10.0 {
		t.Errorf("Arguments keep float64: %#v", p.Calls[0].Arguments)
	}

	py := Pythonic{}.Parse(`[g(a=10, b=10., c=0x1F, d=1_000, e=-5, f=(1, 2.5), g={'b': 1, 'a': [True, None]}, h=.5e1)]`)
	if !py.Valid {
		t.Fatalf("%+v", py)
	}
	pe := py.Calls[0].Exact
	want := map[string]any{"a": json.Number("10"), "b": json.Number("10."), "c": json.Number("31"), "d": json.Number("1000"),
		"e": json.Number("-5"), "f": Tuple{json.Number("1"), json.Number("2.5")}, "h": json.Number(".5e1")}
	for k, w := range want {
		if !reflect.DeepEqual(pe.Values[k], w) {
			t.Errorf("pythonic %s = %#v, want %#v", k, pe.Values[k], w)
		}
	}
	g := pe.Values["g"].(*Object)
	if !reflect.DeepEqual(g.Keys, []string{"b", "a"}) || !reflect.DeepEqual(g.Values["a"], []any{true, nil}) {
		t.Errorf("pythonic dict %#v", g)
	}
	if !reflect.DeepEqual(pe.Keys, []string{"a", "b", "c", "d", "e", "f", "g", "h"}) || !reflect.DeepEqual(plainExact(pe), py.Calls[0].Arguments) {
		t.Errorf("pythonic Exact %v vs Arguments %v", plainExact(pe), py.Calls[0].Arguments)
	}
	rt, _ := Get("reason_tool", Options{})
	r := rt.Parse(`<reason>x</reason><tool>[{"name": "f", "arguments": {"n": 3}}]</tool>`)
	if !r.Valid || r.Calls[0].Exact.Values["n"] != json.Number("3") {
		t.Errorf("reason_tool Exact %+v", r)
	}
}
