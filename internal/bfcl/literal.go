package bfcl

import (
	"math/big"
	"strconv"
	"strings"
)

// Literal writes v as the Java or JavaScript source text a model is asked
// for (BFCL passes every Java and JavaScript argument as a string) such
// that the checker's converter for the parameter type typ (element type
// elem) turns it back into a value equal to v. ok is false when none of
// the forms it writes converts back to v. For Python it returns false: a
// Python argument is the value itself.
func Literal(l Language, typ, elem string, v Value) (string, bool) {
	var s string
	var back Value
	var err error
	switch l {
	case Java:
		s = javaLiteral(typ, elem, v)
		back, err = javaConvert(s, typ, elem)
	case JavaScript:
		s = jsLiteral(typ, elem, v)
		back, err = jsConvert(s, typ, elem)
	default:
		return "", false
	}
	return s, err == nil && eq(back, v)
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// javaScalar writes an element or a scalar value for a Java type: long
// and float literals carry their L and f suffixes; text is written as is.
func javaScalar(typ string, v Value) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return boolText(x)
	case *big.Int:
		switch typ {
		case "long":
			return x.String() + "L"
		case "float":
			return x.String() + "f"
		}
		return x.String()
	case float64:
		if typ == "float" {
			return pyFloatRepr(x) + "f"
		}
		return pyFloatRepr(x)
	}
	return repr(v)
}

var javaElemTypes = map[string]string{"integer": "int", "long": "long", "float": "float", "double": "double",
	"boolean": "boolean", "char": "char", "String": "String", "byte": "byte", "short": "short"}

func javaLiteral(typ, elem string, v Value) string {
	switch x := v.(type) {
	case []Value:
		parts := make([]string, len(x))
		switch typ {
		case "Array":
			for i, e := range x {
				parts[i] = javaScalar(elem, e)
			}
			t := javaElemTypes[elem]
			if t == "" {
				t = "Object"
			}
			return "new " + t + "[]{" + strings.Join(parts, ", ") + "}"
		case "ArrayList":
			if len(x) == 0 {
				return "new ArrayList<>()"
			}
			for i, e := range x {
				parts[i] = javaScalar(elem, e)
				if s, ok := e.(string); ok && (elem == "String" || elem == "char") {
					parts[i] = `"` + s + `"`
				}
			}
			return "new ArrayList<>(Arrays.asList(" + strings.Join(parts, ", ") + "))"
		}
	case *Dict:
		if typ == "HashMap" {
			if x.Len() == 0 {
				return "new HashMap<>()"
			}
			var b strings.Builder
			b.WriteString("new HashMap<String, Object>() {{ ")
			for _, k := range x.Keys {
				val := javaScalar("", x.Vals[k])
				if s, ok := x.Vals[k].(string); ok {
					val = `"` + s + `"`
				}
				b.WriteString(`put("` + k + `", ` + val + `); `)
			}
			b.WriteString("}}")
			return b.String()
		}
	}
	return javaScalar(typ, v)
}

// jsNumber writes a float without an exponent (the float pattern has
// none).
func jsNumber(v Value) string {
	switch x := v.(type) {
	case *big.Int:
		return x.String()
	case float64:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return repr(v)
}

// jsValueText writes a value for parse_js_value: quoted text, numbers,
// booleans, arrays of those.
func jsValueText(v Value) string {
	switch x := v.(type) {
	case string:
		return `"` + x + `"`
	case bool:
		return boolText(x)
	case *big.Int, float64:
		return jsNumber(v)
	case []Value:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = jsValueText(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Dict:
		parts := make([]string, len(x.Keys))
		for i, k := range x.Keys {
			parts[i] = `"` + k + `": ` + jsValueText(x.Vals[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return repr(v)
}

func jsLiteral(typ, elem string, v Value) string {
	switch x := v.(type) {
	case string:
		if typ == "String" && quoted(x) {
			return `"` + x + `"`
		}
		return x
	case bool:
		return boolText(x)
	case *big.Int:
		if typ == "Bigint" {
			return x.String() + "n"
		}
		return x.String()
	case float64:
		return jsNumber(x)
	case []Value:
		parts := make([]string, len(x))
		for i, e := range x {
			switch {
			case elem == "String":
				if s, ok := e.(string); ok {
					parts[i] = `"` + s + `"`
					continue
				}
				parts[i] = jsValueText(e)
			case elem != "":
				parts[i] = jsLiteral(elem, "", e)
			default:
				parts[i] = jsValueText(e)
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *Dict:
		return jsValueText(x)
	}
	return repr(v)
}
