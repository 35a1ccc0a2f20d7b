package bfcl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
)

// A Value is a Python value as BFCL's checker holds it after json.loads or
// after its Java and JavaScript converters: string (str), bool, nil (None),
// *big.Int (int), float64 (float), []Value (list), Tuple (tuple) or *Dict
// (dict). A JSON number is an int when its text has no fraction and no
// exponent ("10"), else a float ("10.0", "1e3"), as Python's json decides.
type Value = any

// Tuple is a Python tuple (from Python-literal output only; JSON has none).
type Tuple []Value

// Dict is a Python dict with string keys in insertion order. Setting an
// existing key keeps its place and replaces its value, as Python does.
type Dict struct {
	Keys []string
	Vals map[string]Value
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{Vals: map[string]Value{}} }

// Get returns the value under k.
func (d *Dict) Get(k string) (Value, bool) {
	if d == nil {
		return nil, false
	}
	v, ok := d.Vals[k]
	return v, ok
}

// Set stores v under k.
func (d *Dict) Set(k string, v Value) {
	if _, ok := d.Vals[k]; !ok {
		d.Keys = append(d.Keys, k)
	}
	d.Vals[k] = v
}

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.Keys) }

// Number turns a JSON number's text into a Python int or float.
func Number(lit string) (Value, error) {
	if strings.ContainsAny(lit, ".eE") {
		f, ok := pyFloat(lit)
		if !ok {
			return nil, fmt.Errorf("bad number %q", lit)
		}
		return f, nil
	}
	i, ok := new(big.Int).SetString(lit, 10)
	if !ok {
		return nil, fmt.Errorf("bad number %q", lit)
	}
	return i, nil
}

// DecodeJSON decodes one JSON value into a Value, keeping object key order
// and the int/float distinction of numbers.
func DecodeJSON(b []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				d.Set(k, v)
			}
			_, err := dec.Token()
			return d, err
		case '[':
			out := []Value{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return Number(t.String())
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// pyType is a Python type the checker compares with type(x) == T.
type pyType int

const (
	tNone pyType = iota
	tStr
	tInt
	tFloat
	tBool
	tList
	tTuple
	tDict
	tSet // only named by Java's type table; no value has it
)

var typeNames = [...]string{"NoneType", "str", "int", "float", "bool", "list", "tuple", "dict", "set"}

func (t pyType) String() string { return typeNames[t] }

// typeOf is Python's type(v).
func typeOf(v Value) pyType {
	switch v.(type) {
	case string:
		return tStr
	case bool:
		return tBool
	case *big.Int:
		return tInt
	case float64:
		return tFloat
	case []Value:
		return tList
	case Tuple:
		return tTuple
	case *Dict:
		return tDict
	}
	return tNone
}

// number returns a numeric value (bool counts as 0 or 1, as in Python's
// comparisons) as an int or a float.
func number(v Value) (i *big.Int, f float64, isFloat, ok bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewInt(1), 0, false, true
		}
		return big.NewInt(0), 0, false, true
	case *big.Int:
		return x, 0, false, true
	case float64:
		return nil, x, true, true
	}
	return nil, 0, false, false
}

// intEqFloat compares an int and a float exactly, as Python does.
func intEqFloat(i *big.Int, f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	return new(big.Float).SetInt(i).Cmp(big.NewFloat(f)) == 0
}

// eq is Python's a == b over Values.
func eq(a, b Value) bool {
	if ai, af, aFloat, ok := number(a); ok {
		bi, bf, bFloat, ok := number(b)
		switch {
		case !ok:
			return false
		case aFloat && bFloat:
			return af == bf
		case aFloat:
			return intEqFloat(bi, af)
		case bFloat:
			return intEqFloat(ai, bf)
		}
		return ai.Cmp(bi) == 0
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []Value:
		y, ok := b.([]Value)
		return ok && seqEq(x, y)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && seqEq(x, y)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.Keys {
			yv, ok := y.Vals[k]
			if !ok || !eq(x.Vals[k], yv) {
				return false
			}
		}
		return true
	}
	return false
}

func seqEq(x, y []Value) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !eq(x[i], y[i]) {
			return false
		}
	}
	return true
}

// pyErr is an exception the checker would raise on these inputs (the
// leaderboard run stops there; the scorer reports it as a failed check).
type pyErr struct{ exc, msg string }

func (e *pyErr) Error() string { return e.exc + ": " + e.msg }

func raise(exc, format string, args ...any) error {
	return &pyErr{exc: exc, msg: fmt.Sprintf(format, args...)}
}

// contains is Python's item in container for a list, tuple, str (substring)
// or dict (key).
func contains(container, item Value) (bool, error) {
	switch c := container.(type) {
	case []Value:
		return seqContains(c, item), nil
	case Tuple:
		return seqContains(c, item), nil
	case string:
		s, ok := item.(string)
		if !ok {
			return false, raise("TypeError", "'in <string>' requires string as left operand, not %s", typeOf(item))
		}
		return strings.Contains(c, s), nil
	case *Dict:
		switch k := item.(type) {
		case string:
			_, ok := c.Vals[k]
			return ok, nil
		case []Value, *Dict:
			return false, raise("TypeError", "unhashable type: '%s'", typeOf(item))
		}
		return false, nil // a non-string key is never among JSON's string keys
	}
	return false, raise("TypeError", "argument of type '%s' is not iterable", typeOf(container))
}

func seqContains(s []Value, item Value) bool {
	for _, e := range s {
		if eq(e, item) {
			return true
		}
	}
	return false
}

// items is what Python yields for x[i], i in range(len(x)): the elements of
// a list or tuple, or the characters of a str.
func items(v Value) ([]Value, error) {
	switch x := v.(type) {
	case []Value:
		return x, nil
	case Tuple:
		return x, nil
	case string:
		out := make([]Value, 0, len(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case *Dict:
		if x.Len() == 0 {
			return nil, nil
		}
		return nil, raise("KeyError", "0")
	}
	return nil, raise("TypeError", "object of type '%s' has no len()", typeOf(v))
}

// pyLen is Python's len(v).
func pyLen(v Value) (int, error) {
	if d, ok := v.(*Dict); ok {
		return d.Len(), nil
	}
	it, err := items(v)
	return len(it), err
}

// repr renders a value roughly as Python would, for error messages.
func repr(v Value) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return "'" + strings.ReplaceAll(x, "'", `\'`) + "'"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case *big.Int:
		return x.String()
	case float64:
		return pyFloatRepr(x)
	case []Value:
		return "[" + joinRepr(x) + "]"
	case Tuple:
		return "(" + joinRepr(x) + ")"
	case *Dict:
		parts := make([]string, len(x.Keys))
		for i, k := range x.Keys {
			parts[i] = repr(k) + ": " + repr(x.Vals[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

func joinRepr(vs []Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = repr(v)
	}
	return strings.Join(parts, ", ")
}
