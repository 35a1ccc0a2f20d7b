// Package norm is the one value comparison behind every metric and reward
// (REFERENCE §3): numeric strings equal numbers, strings compare
// case-insensitively after trimming, lists element-wise, objects key-wise.
package norm

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Canon returns v's canonical form: float64 for numbers and numeric
// strings, bool for booleans and "true"/"false" strings, a trimmed
// lower-cased string for other strings, and the same recursively for
// lists ([]any) and objects (map[string]any). nil stays nil.
func Canon(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		s := strings.ToLower(strings.TrimSpace(x))
		if f, ok := number(s); ok {
			return f
		}
		switch s {
		case "true":
			return true
		case "false":
			return false
		}
		return s
	case bool:
		return x
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return string(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Canon(e)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Canon(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Canon(e)
		}
		return out
	default:
		return x
	}
}

// number parses a finite decimal number ("15000", "2.5", "-3e2").
func number(s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	c := s[0]
	if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.') {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// Equal reports whether a and b are the same value after normalization.
func Equal(a, b any) bool { return canonEqual(Canon(a), Canon(b)) }

func canonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)))
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !canonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !canonEqual(e, f) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// Omittable reports whether an accept list allows leaving the argument out
// (BFCL possible-answer style: the list contains "").
func Omittable(accept []any) bool {
	for _, a := range accept {
		if s, ok := a.(string); ok && s == "" {
			return true
		}
	}
	return false
}

// In reports whether v equals any non-empty member of accept. The ""
// member means "may be omitted" and matches only an empty string value.
func In(v any, accept []any) bool {
	for _, a := range accept {
		if Equal(v, a) {
			return true
		}
	}
	return false
}

// String renders a value as the text a judge compares: strings as they are,
// numbers in their shortest form, anything else as compact JSON.
func String(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
