package bfclsim

import (
	"strings"
	"testing"
)

// TestMathAPI: each function's result or error, as BFCL's MathAPI gives it.
func TestMathAPI(t *testing.T) {
	w, err := New([]string{"MathAPI"})
	if err != nil {
		t.Fatal(err)
	}
	l := func(xs ...any) []any { return xs }
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"add", map[string]any{"a": 3.0, "b": 4}, `{"result":7}`},
		{"subtract", map[string]any{"a": 3.0, "b": 4.5}, `{"result":-1.5}`},
		{"multiply", map[string]any{"a": 2.5, "b": 4.0}, `{"result":10}`},
		{"divide", map[string]any{"a": 1.0, "b": 4.0}, `{"result":0.25}`},
		{"divide", map[string]any{"a": 1.0, "b": 0.0}, `{"error":"Cannot divide by zero"}`},
		{"power", map[string]any{"base": 2.0, "exponent": 10.0}, `{"result":1024}`},
		{"percentage", map[string]any{"part": 1.0, "whole": 8.0}, `{"result":12.5}`},
		{"percentage", map[string]any{"part": 1.0, "whole": 0.0}, `{"error":"Whole value cannot be zero"}`},
		{"absolute_value", map[string]any{"number": -2.5}, `{"result":2.5}`},
		{"mean", map[string]any{"numbers": l(1.0, 2.0, 6.0)}, `{"result":3}`},
		{"mean", map[string]any{"numbers": l()}, `{"error":"Cannot calculate mean of an empty list"}`},
		{"mean", map[string]any{"numbers": l(1.0, "x")}, `{"error":"All elements in the list must be numbers"}`},
		{"standard_deviation", map[string]any{"numbers": l(2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0)}, `{"result":2}`},
		{"min_value", map[string]any{"numbers": l(3.0, -1.0, 2.0)}, `{"result":-1}`},
		{"max_value", map[string]any{"numbers": l(3.0, -1.0, 2.0)}, `{"result":3}`},
		{"sum_values", map[string]any{"numbers": l(0.5, 0.25)}, `{"result":0.75}`},
		{"logarithm", map[string]any{"value": 8.0, "base": 2.0, "precision": 5.0}, `{"result":3}`},
		{"logarithm", map[string]any{"value": 10.0, "base": 3.0, "precision": 4.0}, `{"result":2.096}`},
		{"square_root", map[string]any{"number": 2.0, "precision": 3.0}, `{"result":1.41}`},
		{"square_root", map[string]any{"number": -4.0, "precision": 3.0}, `{"error":"Cannot calculate square root of a negative number"}`},
		{"round_number", map[string]any{"number": 2.675, "decimal_places": 1.0}, `{"result":2.7}`},
		{"round_number", map[string]any{"number": 0.5}, `{"result":0}`},
		{"round_number", map[string]any{"number": 1.5}, `{"result":2}`},
		{"si_unit_conversion", map[string]any{"value": 1500.0, "unit_in": "m", "unit_out": "km"}, `{"result":1.5}`},
		{"si_unit_conversion", map[string]any{"value": 1.0, "unit_in": "m", "unit_out": "ft"}, `{"error":"Conversion from 'm' to 'ft' is not supported"}`},
		{"imperial_si_conversion", map[string]any{"value": 100.0, "unit_in": "celsius", "unit_out": "fahrenheit"}, `{"result":212}`},
		{"imperial_si_conversion", map[string]any{"value": 2.0, "unit_in": "in", "unit_out": "cm"}, `{"result":5.08}`},
		{"imperial_si_conversion", map[string]any{"value": 2.0, "unit_in": "kg", "unit_out": "kg"}, `{"result":2}`},
		{"add", map[string]any{"a": 1.0}, `{"error":"missing argument \"b\""}`},
		{"add", map[string]any{"a": 1.0, "b": true}, `{"error":"b must be a number"}`},
		{"cd", map[string]any{}, `{"error":"unknown function \"cd\""}`},
	} {
		if got := w.Call(c.name, c.args); got != c.want {
			t.Errorf("%s(%v) = %s, want %s", c.name, c.args, got, c.want)
		}
	}
	if !w.Has("mean") || w.Has("ls") || string(w.State()) != `{"MathAPI":{}}` {
		t.Errorf("Has/State: %v %v %s", w.Has("mean"), w.Has("ls"), w.State())
	}
	if _, err := New([]string{"MathAPI", "GorillaFileSystem"}); err == nil || !strings.Contains(err.Error(), "GorillaFileSystem is not simulated") {
		t.Errorf("GorillaFileSystem: %v", err)
	}
	if !Supported("MathAPI") || Supported("TradingBot") || len(DocFiles) != 8 || strings.Join(Classes(), ",") != "MathAPI" {
		t.Error("Supported / DocFiles / Classes")
	}
}
