package bfcl

import (
	"math"
	"math/big"
	"testing"
)

func mustDecode(t *testing.T, s string) Value {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("DecodeJSON(%s): %v", s, err)
	}
	return v
}

func TestDecodeJSONKeepsPythonTypes(t *testing.T) {
	v := mustDecode(t, `{"b": 10, "a": 10.0, "c": 1e3, "b": -0, "big": 123456789012345678901234567890, "l": [true, null, "x"]}`)
	d := v.(*Dict)
	if got := d.Keys; len(got) != 5 || got[0] != "b" || got[1] != "a" || got[4] != "l" {
		t.Fatalf("key order %v (a repeated key keeps its first place)", got)
	}
	if typeOf(d.Vals["b"]) != tInt || d.Vals["b"].(*big.Int).Sign() != 0 {
		t.Errorf("b = %#v, want the int 0 (last value)", d.Vals["b"])
	}
	if typeOf(d.Vals["a"]) != tFloat || typeOf(d.Vals["c"]) != tFloat {
		t.Errorf("10.0 and 1e3 must be floats: %#v %#v", d.Vals["a"], d.Vals["c"])
	}
	if repr(d.Vals["big"]) != "123456789012345678901234567890" {
		t.Errorf("big int = %s", repr(d.Vals["big"]))
	}
	if repr(d.Vals["l"]) != "[True, None, 'x']" {
		t.Errorf("l = %s", repr(d.Vals["l"]))
	}
	if _, err := DecodeJSON([]byte(`{"a": 1} x`)); err == nil {
		t.Error("trailing data must be an error")
	}
}

func TestEqIsPythonEquality(t *testing.T) {
	one := big.NewInt(1)
	for _, tc := range []struct {
		a, b Value
		want bool
	}{
		{one, 1.0, true},
		{true, one, true},
		{true, 1.0, true},
		{false, 0.0, true},
		{one, "1", false},
		{[]Value{one, "a"}, []Value{1.0, "a"}, true},
		{[]Value{one}, Tuple{one}, false},
		{new(big.Int).Lsh(one, 53), math.Ldexp(1, 53), true},
		{new(big.Int).Add(new(big.Int).Lsh(one, 53), one), math.Ldexp(1, 53), false},
		{math.NaN(), math.NaN(), false},
		{nil, nil, true},
		{nil, "", false},
	} {
		if got := eq(tc.a, tc.b); got != tc.want {
			t.Errorf("%s == %s: %v, want %v", repr(tc.a), repr(tc.b), got, tc.want)
		}
	}
	a := mustDecode(t, `{"x": 1, "y": [1, 2]}`)
	b := mustDecode(t, `{"y": [1.0, 2], "x": true}`)
	if !eq(a, b) {
		t.Error("dicts compare by key, not order")
	}
}

func TestContains(t *testing.T) {
	if ok, _ := contains("abc", ""); !ok {
		t.Error(`"" in "abc" is true in Python`)
	}
	if _, err := contains("abc", big.NewInt(1)); err == nil {
		t.Error("1 in 'abc' raises TypeError")
	}
	if _, err := contains(big.NewInt(3), "x"); err == nil {
		t.Error("'x' in 3 raises TypeError")
	}
	if ok, _ := contains([]Value{1.0, "a"}, big.NewInt(1)); !ok {
		t.Error("1 in [1.0] is true")
	}
}

func TestPythonStrings(t *testing.T) {
	for in, want := range map[string]string{
		"New York, NY":       "newyorkny",
		"O'Hare":             `o"hare`,
		"a_b-c*d^e/f.g":      "abcdefg",
		"ΟΔΟΣ":               "οδος",
		"ΟΔΟΣ ΑΘΗΝΑ":         "οδοσαθηνα", // spaces go first, so Σ is no longer final
		"İstanbul":           "i\u0307stanbul",
		"Tab\there\nnewline": "tab\there\nnewline",
	} {
		if got := standardize(in); got != want {
			t.Errorf("standardize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := pyLower("ΟΔΟΣ ΑΘΗΝΑ"); got != "οδος αθηνα" {
		t.Errorf("final sigma: %q", got)
	}
	for s, want := range map[string]string{" 12 ": "12", "-0": "0", "1_000": "1000", "١٢": "12", "+7": "7"} {
		if i, ok := pyInt(s); !ok || i.String() != want {
			t.Errorf("int(%q) = %v %v, want %s", s, i, ok, want)
		}
	}
	for _, s := range []string{"1.5", "1__0", "_1", "0x10", "", "1 2", "\x1c1"} {
		if _, ok := pyInt(s); ok {
			t.Errorf("int(%q) must fail", s)
		}
	}
	for s, want := range map[string]string{"1.": "1.0", ".5": "0.5", "1e3": "1000.0", "-inf": "-inf", "NaN": "nan", "1e400": "inf", "1_0.5": "10.5"} {
		if f, ok := pyFloat(s); !ok || pyFloatRepr(f) != want {
			t.Errorf("float(%q) = %v %v, want %s", s, f, ok, want)
		}
	}
	for _, s := range []string{"1.5f", ".", "e5", "0x1p3", "1e", "in f"} {
		if _, ok := pyFloat(s); ok {
			t.Errorf("float(%q) must fail", s)
		}
	}
	for f, want := range map[float64]string{0.1: "0.1", 1e16: "1e+16", 1e15: "1000000000000000.0", 1e-5: "1e-05", 0.0001: "0.0001", -2.5e-300: "-2.5e-300", 3: "3.0"} {
		if got := pyFloatRepr(f); got != want {
			t.Errorf("repr(%v) = %s, want %s", f, got, want)
		}
	}
}
