// Package norm is the one value comparison behind every metric and reward
// (docs/contracts.md §3): numeric strings equal numbers, strings compare
// case-insensitively after trimming, lists element-wise, objects key-wise.
package norm

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/argrl/argrl/internal/jsonx"
)

// Canon returns v's canonical form: float64 for numbers and numeric
// strings, bool for booleans and "true"/"false" strings, a trimmed
// lower-cased string for other strings, and the same recursively for
// lists ([]any) and objects (map[string]any). nil stays nil.
func Canon(v any) any {
	if f, ok := jsonx.Number(v); ok {
		return f
	}
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
// Lists compare element-wise and objects key-wise (jsonx.EqualFunc).
func Equal(a, b any) bool { return jsonx.EqualFunc(Canon(a), Canon(b), canonLeaf) }

// canonLeaf compares two canonical scalars: numbers within a relative
// 1e-9, booleans, strings and nil exactly.
func canonLeaf(a, b any) bool {
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
	}
	return false
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
