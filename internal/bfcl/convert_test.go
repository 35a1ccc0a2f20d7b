package bfcl

import (
	"math/big"
	"testing"
)

// The converters' behaviour, derived from their regular expressions and
// fallbacks (the text itself when no pattern matches).
func TestJavaConvert(t *testing.T) {
	for _, tc := range []struct{ typ, elem, in, want string }{
		{"integer", "", "42", "42"},
		{"integer", "", "42\n", "42"}, // Python's $ matches before a final newline
		{"integer", "", "٤٢", "42"},   // \d and int() take any decimal digit
		{"integer", "", "4.2", "'4.2'"},
		{"long", "", "-7L", "-7"},
		{"long", "", "7", "'7'"},
		{"float", "", "2.5f", "2.5"},
		{"float", "", "1e3F", "1000.0"},
		{"float", "", "2.5", "'2.5'"},
		{"double", "", "2.5", "2.5"},
		{"double", "", "2.5d", "'2.5d'"},
		{"boolean", "", "true", "True"},
		{"boolean", "", "True", "'True'"},
		{"char", "", "'c'", `'\'c\''`}, // the char pattern never matches
		{"String", "", `"quoted"`, `'"quoted"'`},
		{"Array", "integer", "new int[]{1, 2, 3}", "[1, 2, 3]"},
		{"Array", "String", `new String[]{"a", b}`, `['"a"', 'b']`},
		{"Array", "long", "new long[]{1L, 2}", "[1, '2']"},
		{"Array", "integer", "int[] {1}", "'int[] {1}'"},
		{"ArrayList", "String", `new ArrayList<>(Arrays.asList("a", "b"))`, "['a', 'b']"},
		{"ArrayList", "integer", "new ArrayList<Integer>() {{ add(1); add(2); }}", "[1, 2]"},
		{"ArrayList", "any", "new ArrayList<>(Arrays.asList(x, 42))", "['x', '42']"},
		{"ArrayList", "String", "new ArrayList<>()", "[]"},
		{"HashMap", "", `new HashMap<String, Object>() {{ put("a", 1); put("b", "x"); put("c", true); put("d", 2.5f); }}`, "{'a': 1, 'b': 'x', 'c': True, 'd': 2.5}"},
		{"HashMap", "", "new HashMap<>()", "{}"},
		{"HashMap", "", "myMap", "'myMap'"},
		{"any", "", "new Object()", "'new Object()'"},
	} {
		v, err := javaConvert(tc.in, tc.typ, tc.elem)
		if err != nil || repr(v) != tc.want {
			t.Errorf("java %s<%s> %q = %s, %v; want %s", tc.typ, tc.elem, tc.in, repr(v), err, tc.want)
		}
	}
	for _, typ := range []string{"Set", "Hashtable", "Queue", "Stack", "Map"} {
		if _, err := javaConvert("x", typ, ""); err == nil {
			t.Errorf("java %s must raise", typ)
		}
	}
}

func TestJSConvert(t *testing.T) {
	for _, tc := range []struct{ typ, elem, in, want string }{
		{"String", "", `"a b"`, "'a b'"},
		{"String", "", `'a b'`, "'a b'"},
		{"String", "", `"a b'`, `'"a b\''`},
		{"String", "", `"`, "''"},
		{"integer", "", "-3", "-3"},
		{"integer", "", "3.0", "'3.0'"},
		{"float", "", "3", "3.0"},
		{"float", "", "1e3", "'1e3'"},
		{"Bigint", "", "9n", "9"},
		{"Boolean", "", "false", "False"},
		{"array", "float", "[1, 2.5]", "[1.0, 2.5]"},
		{"array", "String", `["a", 'b', c]`, "['a', 'b', 'c']"},
		{"array", "integer", "new Array(1, 2)", "[1, 2]"},
		{"array", "", `[1, "two", true, 2.5]`, "[1, 'two', True, 2.5]"},
		{"array", "integer", " [ [1, 2], [3] ]", "[[1, 2], [3]]"},
		{"array", "", "[]", "[]"},
		{"array", "", "items", "'items'"},
		{"dict", "", "{a: 1, 'b': 'x', c: [1, 'y'], d: true}", "{'a': 1, 'b': 'x', 'c': [1, 'y'], 'd': True}"},
		{"dict", "", "{url: 'http://x', n: 2}", "{'url': 'http://x', 'n': 2}"},
		{"dict", "", "{}", "{}"},
		{"dict", "", "config", "'config'"},
		{"any", "", "fn()", "'fn()'"},
	} {
		v, err := jsConvert(tc.in, tc.typ, tc.elem)
		if err != nil || repr(v) != tc.want {
			t.Errorf("js %s<%s> %q = %s, %v; want %s", tc.typ, tc.elem, tc.in, repr(v), err, tc.want)
		}
	}
	if _, err := jsConvert("x", "Map", ""); err == nil {
		t.Error("js Map must raise")
	}
}

func TestLiteralRoundTrips(t *testing.T) {
	i := func(n int64) Value { return big.NewInt(n) }
	d := NewDict()
	d.Set("mode", "lru")
	d.Set("shards", i(4))
	d.Set("ratio", 2.0)
	for _, tc := range []struct {
		l         Language
		typ, elem string
		v         Value
		want      string
	}{
		{Java, "long", "", i(5000), "5000L"},
		{Java, "float", "", 0.5, "0.5f"},
		{Java, "double", "", i(20), "20"},
		{Java, "boolean", "", true, "true"},
		{Java, "String", "", "SELECT 1", "SELECT 1"},
		{Java, "Array", "String", []Value{"a", "b"}, "new String[]{a, b}"},
		{Java, "Array", "integer", []Value{i(2), i(7)}, "new int[]{2, 7}"},
		{Java, "ArrayList", "String", []Value{"GC pause"}, `new ArrayList<>(Arrays.asList("GC pause"))`},
		{Java, "ArrayList", "long", []Value{i(1), i(2)}, "new ArrayList<>(Arrays.asList(1L, 2L))"},
		{Java, "ArrayList", "String", []Value{}, "new ArrayList<>()"},
		{Java, "HashMap", "", d, `new HashMap<String, Object>() {{ put("mode", "lru"); put("shards", 4); put("ratio", 2.0); }}`},
		{JavaScript, "String", "", "'quoted'", `"'quoted'"`},
		{JavaScript, "float", "", 1e-5, "0.00001"},
		{JavaScript, "Bigint", "", i(9), "9n"},
		{JavaScript, "array", "float", []Value{i(60), 2.5}, "[60, 2.5]"},
		{JavaScript, "array", "String", []Value{"a b"}, `["a b"]`},
		{JavaScript, "dict", "", d, `{"mode": "lru", "shards": 4, "ratio": 2.0}`},
	} {
		got, ok := Literal(tc.l, tc.typ, tc.elem, tc.v)
		if !ok || got != tc.want {
			t.Errorf("%s %s<%s> %s: %q %v, want %q", tc.l, tc.typ, tc.elem, repr(tc.v), got, ok, tc.want)
		}
	}
	// No literal converts back to these: an ArrayList of any yields text
	// elements only, and an Array of String cannot hold a comma.
	for _, tc := range []struct {
		typ, elem string
		v         Value
	}{
		{"ArrayList", "any", []Value{"id", i(42)}},
		{"Array", "String", []Value{"a,b"}},
	} {
		if got, ok := Literal(Java, tc.typ, tc.elem, tc.v); ok {
			t.Errorf("java %s<%s> %s: %q should have no literal", tc.typ, tc.elem, repr(tc.v), got)
		}
	}
	if _, ok := Literal(Python, "integer", "", i(1)); ok {
		t.Error("Python arguments are values, not literals")
	}
}
