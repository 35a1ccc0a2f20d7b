package jsonx

import (
	"strings"
	"testing"
)

func TestEqual(t *testing.T) {
	cases := []struct {
		a, b any
		want bool
	}{
		{2.0, 2, true},
		{int64(3), float32(3), true},
		{int32(-1), -1.0, true},
		{2.5, 2, false},
		{"2", 2.0, false},
		{"a", "a", true},
		{"a", "A", false},
		{true, true, true},
		{true, 1.0, false},
		{nil, nil, true},
		{nil, "", false},
		{nil, []any(nil), false},
		{[]any{}, []any(nil), true},
		{[]any{1.0, "x"}, []any{1, "x"}, true},
		{[]any{1.0, "x"}, []any{"x", 1.0}, false},
		{[]any{1.0}, []any{1.0, 2.0}, false},
		{[]any{1.0}, 1.0, false},
		{map[string]any{"k": []any{2}}, map[string]any{"k": []any{2.0}}, true},
		{map[string]any{"k": 1.0}, map[string]any{"j": 1.0}, false},
		{map[string]any{"k": 1.0}, map[string]any{"k": 1.0, "j": 1.0}, false},
		{map[string]any{}, []any{}, false},
	}
	for _, c := range cases {
		for _, pair := range [][2]any{{c.a, c.b}, {c.b, c.a}} { // both orders: Equal is symmetric
			if got := Equal(pair[0], pair[1]); got != c.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", pair[0], pair[1], got, c.want)
			}
		}
	}
}

func TestEqualFuncLeaf(t *testing.T) {
	fold := func(a, b any) bool {
		x, okx := a.(string)
		y, oky := b.(string)
		return okx && oky && strings.EqualFold(x, y)
	}
	if !EqualFunc(map[string]any{"k": []any{"A", "b"}}, map[string]any{"k": []any{"a", "B"}}, fold) {
		t.Error("the leaf does not decide the strings inside lists and objects")
	}
	if EqualFunc([]any{"a"}, []any{"a", "b"}, fold) || EqualFunc([]any{"a"}, "a", fold) {
		t.Error("lists of other lengths, or a list and a scalar, must differ whatever the leaf says")
	}
	calls := 0
	EqualFunc(map[string]any{"k": "x"}, map[string]any{"j": "x"}, func(a, b any) bool { calls++; return true })
	if calls != 0 {
		t.Errorf("leaf called %d times for objects with different keys", calls)
	}
}

func TestNumber(t *testing.T) {
	for _, v := range []any{1.5, float32(1.5), 2, int64(2), int32(2)} {
		if _, ok := Number(v); !ok {
			t.Errorf("Number(%#v) not a number", v)
		}
	}
	for _, v := range []any{"1", true, nil, uint(1), []any{1.0}} {
		if f, ok := Number(v); ok {
			t.Errorf("Number(%#v) = %v, want not a number", v, f)
		}
	}
}
