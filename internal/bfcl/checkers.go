package bfcl

import "fmt"

// The value checks of the AST checker: types (with the "variable" rule and
// one level of nested element types), strings, lists, dicts and lists of
// dicts. Each returns the checker's verdict and error type; an error is an
// exception the checker would raise on the same values.

// Type tables: the Python type a BFCL type name must have, per language.
var (
	pythonTypes = map[string]pyType{"string": tStr, "integer": tInt, "float": tFloat, "boolean": tBool,
		"array": tList, "tuple": tList, "dict": tDict, "any": tStr}
	javaTypes = map[string]pyType{"byte": tInt, "short": tInt, "integer": tInt, "float": tFloat, "double": tFloat,
		"long": tInt, "boolean": tBool, "char": tStr, "Array": tList, "ArrayList": tList, "Set": tSet,
		"HashMap": tDict, "Hashtable": tDict, "Queue": tList, "Stack": tList, "String": tStr, "any": tStr}
	jsTypes = map[string]pyType{"String": tStr, "integer": tInt, "float": tFloat, "Bigint": tInt,
		"Boolean": tBool, "dict": tDict, "array": tList, "any": tStr}
)

// nested tells whether a type name has an element type to check: Python's
// array and tuple; Java's Array and ArrayList and JavaScript's array.
func nested(l Language, typ string) bool {
	if l == Python {
		return typ == "array" || typ == "tuple"
	}
	return typ == "Array" || typ == "ArrayList" || typ == "array"
}

// Result is the checker's verdict on one response.
type Result struct {
	Valid bool
	// ErrorType is the checker's error_type ("" when valid), e.g.
	// "simple_function_checker:missing_required" or "type_error:simple";
	// "checker_error:<Exception>" where the checker itself would raise.
	ErrorType string
	Error     string // a human-readable reason
}

func fail(errType, format string, args ...any) Result {
	return Result{ErrorType: errType, Error: fmt.Sprintf(format, args...)}
}

var valid = Result{Valid: true}

// answerType is the type of the first acceptable value that is not "" (the
// optional marker); false when there is none.
func answerType(answers []Value) (pyType, bool) {
	for _, a := range answers {
		if s, ok := a.(string); ok && s == "" {
			continue
		}
		return typeOf(a), true
	}
	return 0, false
}

// typeResult is type_checker's answer: whether the value has the expected
// type (or the acceptable values' type, which makes it a "variable").
type typeResult struct {
	Result
	variable bool
}

// typeCheck is the checker's type rule. The value must have the expected
// Python type; a list type also checks every element against the element
// type, for at least one acceptable list (or an acceptable value that is
// not a list). A value of the same type as the acceptable values, when
// that differs from the expected type, is a "variable" and passes here.
func typeCheck(param string, v Value, answers []Value, expected, elem pyType, hasElem bool) typeResult {
	r := typeResult{Result: valid}
	at, hasAT := answerType(answers)
	variable := hasAT && at != expected
	if typeOf(v) == expected {
		if !hasElem {
			r.variable = variable
			return r
		}
		list, _ := v.([]Value)
		for _, a := range answers {
			ok := true
			if al, isList := a.([]Value); isList {
				for _, e := range list {
					if !typeCheck(param, e, al, elem, 0, false).Valid {
						ok = false
						break
					}
				}
			}
			if ok {
				return typeResult{Result: valid, variable: variable}
			}
		}
		r.Result = fail("type_error:nested", "nested type checking failed for parameter %q: expected %s of %s, got %s", param, expected, elem, repr(v))
	}
	if hasAT && typeOf(v) == at {
		r.variable = true
		return r
	}
	r.Result = fail("type_error:simple", "incorrect type for parameter %q: expected %s, got %s (%s)", param, expected, typeOf(v), repr(v))
	return r
}

// stringCheck: the standardized value equals a standardized acceptable
// string.
func stringCheck(param, v string, answers []Value) Result {
	want := standardize(v)
	for _, a := range answers {
		if s, ok := a.(string); ok && standardize(s) == want {
			return valid
		}
	}
	return fail("value_error:string", "invalid value for parameter %q: %s, expected one of %s (standardized)", param, repr(v), repr(answers))
}

// standardizeItems standardizes the strings among a sequence's items.
func standardizeItems(vs []Value) []Value {
	out := make([]Value, len(vs))
	for i, x := range vs {
		if s, ok := x.(string); ok {
			x = standardize(s)
		}
		out[i] = x
	}
	return out
}

// listCheck: the list, its strings standardized, equals one acceptable
// value with its strings standardized (an acceptable "" is the empty list).
func listCheck(param string, v []Value, answers []Value) (Result, error) {
	got := standardizeItems(v)
	for _, a := range answers {
		it, err := items(a)
		if err != nil {
			return Result{}, err
		}
		if eq([]Value(standardizeItems(it)), []Value(got)) {
			return valid, nil
		}
	}
	return fail("value_error:list/tuple", "invalid value for parameter %q: %s, expected one of %s", param, repr(v), repr(answers)), nil
}

// dictCheck: for some acceptable dict, every key of v is acceptable with a
// value among that key's options (strings standardized), and every key v
// lacks may be omitted (its options hold ""). Acceptable "" values are
// skipped; the verdict on failure is that of the last alternative tried.
func dictCheck(param string, v Value, answers []Value) (Result, error) {
	res := fail("dict_checker:unclear", "no acceptable dict for parameter %q", param)
	for _, a := range answers {
		if s, ok := a.(string); ok && s == "" {
			continue
		}
		res = fail("dict_checker:unclear", "no acceptable dict for parameter %q", param)
		d, isDict := v.(*Dict)
		if !isDict {
			return Result{}, raise("AttributeError", "'%s' object has no attribute 'items'", typeOf(v))
		}
		ok := true
		for _, k := range d.Keys {
			in, err := contains(a, k)
			if err != nil {
				return Result{}, err
			}
			if !in {
				res, ok = fail("value_error:dict_key", "unexpected dict key %q in parameter %q", k, param), false
				break
			}
			ad, isDict := a.(*Dict)
			if !isDict {
				return Result{}, raise("TypeError", "%s indices must be integers", typeOf(a))
			}
			opts, err := items(ad.Vals[k])
			if err != nil {
				return Result{}, err
			}
			got := d.Vals[k]
			if s, isStr := got.(string); isStr {
				got = standardize(s)
			}
			if !seqContains(standardizeItems(opts), got) {
				res, ok = fail("value_error:dict_value", "invalid value for %q of parameter %q: %s", k, param, repr(d.Vals[k])), false
				break
			}
		}
		ad, isDict := a.(*Dict)
		if !isDict {
			return Result{}, raise("AttributeError", "'%s' object has no attribute 'items'", typeOf(a))
		}
		for _, k := range ad.Keys {
			if _, has := d.Vals[k]; has {
				continue
			}
			omittable, err := contains(ad.Vals[k], "")
			if err != nil {
				return Result{}, err
			}
			if !omittable {
				res, ok = fail("value_error:dict_key", "missing dict key %q in parameter %q", k, param), false
				break
			}
		}
		if ok {
			return valid, nil
		}
	}
	return res, nil
}

// listDictCheck: for some acceptable list of dicts of the same length,
// every dict passes dictCheck against the dict at its position.
func listDictCheck(param string, v []Value, answers []Value) (Result, error) {
	res := fail("list_dict_checker:unclear", "no acceptable list of dicts for parameter %q", param)
	for _, a := range answers {
		n, err := pyLen(a)
		if err != nil {
			return Result{}, err
		}
		if len(v) != n {
			res = fail("value_error:list_dict_count", "wrong number of dictionaries in parameter %q", param)
			continue
		}
		ok := true
		if len(v) > 0 {
			elems, err := items(a)
			if err != nil {
				return Result{}, err
			}
			for i := range v {
				if res, err = dictCheck(param, v[i], []Value{elems[i]}); err != nil {
					return Result{}, err
				}
				if !res.Valid {
					ok = false
					break
				}
			}
		}
		if ok {
			return valid, nil
		}
	}
	return res, nil
}
