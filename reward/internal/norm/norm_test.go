package norm

import (
	"encoding/json"
	"testing"
)

func TestEqual(t *testing.T) {
	cases := []struct {
		a, b any
		want bool
	}{
		{"15000", 15000.0, true},
		{"15000.0", 15000, true},
		{" 2.5 ", 2.5, true},
		{json.Number("3"), "3", true},
		{"Madrid", " madrid ", true},
		{"dólares", "DÓLARES", true},
		{"dólares", "dolares", false},
		{"15.000", 15000.0, false},
		{"true", true, true},
		{"False", false, true},
		{true, 1.0, false},
		{nil, nil, true},
		{nil, "", false},
		{[]any{"A", 1.0}, []any{"a", "1"}, true},
		{[]any{"a", "b"}, []any{"b", "a"}, false},
		{map[string]any{"x": "Y"}, map[string]any{"x": "y"}, true},
		{map[string]any{"x": "y"}, map[string]any{"x": "y", "z": 1.0}, false},
		{"1e3", 1000.0, true},
		{"NaN", "nan", true},
		{"abc", 0.0, false},
	}
	for _, c := range cases {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Equal(c.b, c.a); got != c.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

func TestAccept(t *testing.T) {
	acc := []any{"", "USD", "dollars"}
	if !Omittable(acc) || Omittable([]any{"USD"}) {
		t.Error("Omittable")
	}
	if !In("usd", acc) || !In(" Dollars", acc) || In("euro", acc) {
		t.Error("In")
	}
	if String(15000.0) != "15000" || String("x") != "x" || String(true) != "true" || String([]any{"a"}) != `["a"]` {
		t.Error("String")
	}
}
