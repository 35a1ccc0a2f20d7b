// Package jsonx compares decoded JSON values: the trees of map[string]any,
// []any and scalars that encoding/json produces, possibly holding Go
// numbers written by code. It is the one deep-equal behind record
// validation (data) and the normalized value match of metrics and rewards
// (reward).
package jsonx

import "reflect"

// Number returns v as a float64 when it is a number: float64, float32,
// int, int64 or int32.
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}

// Equal reports whether a and b are the same JSON value: lists ([]any)
// element by element, objects (map[string]any) over the same keys, numbers
// as float64 (so 2 and 2.0 match), anything else by reflect.DeepEqual.
func Equal(a, b any) bool { return EqualFunc(a, b, exactLeaf) }

func exactLeaf(a, b any) bool {
	if fa, ok := Number(a); ok {
		fb, ok := Number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// EqualFunc is Equal with leaf deciding every pair in which a is neither a
// list nor an object. A list or an object in a matches only the same in b.
func EqualFunc(a, b any, leaf func(a, b any) bool) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualFunc(x[i], y[i], leaf) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !EqualFunc(xv, yv, leaf) {
				return false
			}
		}
		return true
	}
	return leaf(a, b)
}
