package bfcl

import (
	"math"
	"math/big"
)

// single is simple_function_checker: one call against one function
// document and one gold call.
func (c *Case) single(fdv Value, call Call, gold Value) (Result, error) {
	fd, err := describe(fdv)
	if err != nil {
		return Result{}, raise("TypeError", "function document: %v", err)
	}
	_, answers, err := goldCall(gold)
	if err != nil {
		return Result{}, raise("TypeError", "possible answer: %v", err)
	}
	if call.Name != fd.name {
		return fail("simple_function_checker:wrong_func_name", "function name %q not found in the response (got %q)", fd.name, call.Name), nil
	}
	args := call.Args
	if args == nil {
		args = NewDict()
	}
	for _, r := range fd.required {
		if _, ok := args.Vals[r.(string)]; !ok {
			return fail("simple_function_checker:missing_required", "missing required parameter %q", r), nil
		}
	}
	for _, param := range args.Keys {
		_, declared := fd.props.Vals[param]
		opts, inGold := answers.Vals[param]
		if !declared || !inGold {
			return fail("simple_function_checker:unexpected_param", "unexpected parameter %q", param), nil
		}
		r, err := c.argument(fd, param, args.Vals[param], opts.([]Value))
		if err != nil || !r.Valid {
			return r, err
		}
	}
	for _, param := range answers.Keys {
		if _, ok := args.Vals[param]; ok {
			continue
		}
		if !seqContains(answers.Vals[param].([]Value), "") {
			return fail("simple_function_checker:missing_optional", "optional parameter %q not provided and not marked as optional", param), nil
		}
	}
	return valid, nil
}

// argument checks one argument's type and value.
func (c *Case) argument(fd *function, param string, v Value, opts []Value) (Result, error) {
	prop, ok := fd.props.Vals[param].(*Dict)
	if !ok {
		return Result{}, raise("TypeError", "the document of parameter %q is not an object", param)
	}
	typ, err := typeName(prop, param)
	if err != nil {
		return Result{}, err
	}
	table := pythonTypes
	switch c.Language {
	case Java:
		table = javaTypes
	case JavaScript:
		table = jsTypes
	}
	expected, ok := table[typ]
	if !ok {
		return Result{}, raise("KeyError", "%q", typ)
	}
	s, isStr := v.(string)
	if c.Language != Python && !isStr {
		errType := "type_error:java"
		if c.Language == JavaScript {
			errType = "type_error:js"
		}
		return fail(errType, "incorrect type for parameter %q: expected a String, got %s (%s)", param, typeOf(v), repr(v)), nil
	}
	var elem pyType
	elemName := ""
	hasElem := nested(c.Language, typ)
	if hasElem {
		it, ok := prop.Vals["items"].(*Dict)
		if !ok {
			return Result{}, raise("KeyError", "'items' (parameter %q)", param)
		}
		if elemName, err = typeName(it, param+".items"); err != nil {
			return Result{}, err
		}
		if elem, ok = table[elemName]; !ok {
			return Result{}, raise("KeyError", "%q", elemName)
		}
	}
	switch c.Language {
	case Java:
		v, err = javaConvert(s, typ, elemName)
	case JavaScript:
		v, err = jsConvert(s, typ, elemName)
	}
	if err != nil {
		return Result{}, err
	}
	if t, isTuple := v.(Tuple); isTuple && typ == "tuple" {
		v = []Value(t)
	}
	if i, isInt := v.(*big.Int); isInt && c.Language == Python && typ == "float" {
		f, _ := new(big.Float).SetInt(i).Float64()
		if math.IsInf(f, 0) {
			return Result{}, raise("OverflowError", "int too large to convert to float")
		}
		v = f
	}
	tr := typeCheck(param, v, opts, expected, elem, hasElem)
	if !tr.Valid {
		return tr.Result, nil
	}
	if !tr.variable {
		switch {
		case expected == tDict:
			return dictCheck(param, v, opts)
		case expected == tList && hasElem && elem == tDict:
			return listDictCheck(param, v.([]Value), opts)
		case expected == tStr:
			return stringCheck(param, v.(string), opts), nil
		case expected == tList:
			return listCheck(param, v.([]Value), opts)
		}
	}
	if !seqContains(opts, v) {
		return fail("value_error:others", "invalid value for parameter %q: %s, expected one of %s", param, repr(v), repr(opts)), nil
	}
	return valid, nil
}

// typeName reads a schema node's "type", which the checker uses as a
// table key.
func typeName(d *Dict, where string) (string, error) {
	t, ok := d.Vals["type"]
	if !ok {
		return "", raise("KeyError", "'type' (parameter %q)", where)
	}
	s, ok := t.(string)
	if !ok {
		return "", raise("TypeError", "unhashable or unknown type %s (parameter %q)", repr(t), where)
	}
	return s, nil
}
