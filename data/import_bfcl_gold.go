package data

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"

	bfclck "github.com/argrl/argrl/internal/bfcl"
)

// bfclFunction is a BFCL function document's parameters with their BFCL
// types (before normalization).
type bfclFunction struct {
	props    *bfclck.Dict
	required []string
}

// bfclFunctions indexes the record's verbatim function list by name.
func bfclFunctions(raw json.RawMessage) map[string]bfclFunction {
	out := map[string]bfclFunction{}
	v, err := bfclck.DecodeJSON(raw)
	if err != nil {
		return out
	}
	fns, ok := v.([]bfclck.Value)
	if !ok {
		fns = []bfclck.Value{v}
	}
	for _, f := range fns {
		d, ok := f.(*bfclck.Dict)
		if !ok {
			continue
		}
		name, _ := d.Vals["name"].(string)
		var fn bfclFunction
		if p, ok := d.Vals["parameters"].(*bfclck.Dict); ok {
			fn.props, _ = p.Vals["properties"].(*bfclck.Dict)
			req, _ := p.Vals["required"].([]bfclck.Value)
			for _, r := range req {
				if s, ok := r.(string); ok {
					fn.required = append(fn.required, s)
				}
			}
		}
		if fn.props == nil {
			fn.props = bfclck.NewDict()
		}
		out[name] = fn
	}
	return out
}

// types returns a parameter's BFCL type and element type.
func (f bfclFunction) types(p string) (string, string) {
	d, _ := f.props.Vals[p].(*bfclck.Dict)
	if d == nil {
		return "", ""
	}
	t, _ := d.Vals["type"].(string)
	var elem string
	if it, ok := d.Vals["items"].(*bfclck.Dict); ok {
		elem, _ = it.Vals["type"].(string)
	}
	return t, elem
}

// Quirks the importer meets in BFCL's answers (ImportStats.Quirks keys).
const (
	quirkUndeclaredOptional = `an answer names a parameter its function does not declare, with "" acceptable: left out (the checker accepts calls without it)`
	quirkUndeclared         = `an answer names a parameter its function does not declare, without "": left out (no response passes the checker)`
	quirkEmptyList          = `an answer has an empty list of acceptable values: left out (no response passes the checker)`
	quirkRequiredMissing    = `a required parameter is absent from the answer: no longer required in the record's tool (no response passes the checker)`
	quirkOnlyEmpty          = `a required parameter's only acceptable value is "": the gold passes ""`
	quirkNoLiteral          = `a Java or JavaScript answer has no literal the checker converts back to it`
	quirkWholeFloats        = `a float list answer holds whole numbers, which records store as plain numbers and the formats write as ints (the checker wants floats there)`
)

// bfclGold fills calls and accept from a ground_truth list and returns the
// quirks it met (one entry per occurrence).
func bfclGold(rec *Record, raw json.RawMessage) ([]string, error) {
	var gts []json.RawMessage
	if kindOf(raw) == "object" {
		gts = []json.RawMessage{raw}
	} else if err := json.Unmarshal(raw, &gts); err != nil {
		return nil, fmt.Errorf("must be a list of {function: {param: [values]}}")
	}
	lang := bfclck.LanguageOf(rec.BFCL.Category)
	fns := bfclFunctions(rec.BFCL.Functions)
	var met []string
	rec.Accept = make([]map[string][]any, 0, len(gts))
	for i, g := range gts {
		keys, vals, err := orderedObject(g)
		if err != nil || len(keys) != 1 {
			return nil, fmt.Errorf("[%d]: must be an object with exactly one function name", i)
		}
		name := keys[0]
		var params map[string]any
		if err := json.Unmarshal(vals[0], &params); err != nil || params == nil {
			return nil, fmt.Errorf("[%d] %s: must map parameters to lists of values", i, name)
		}
		exact, _ := bfclck.DecodeJSON(vals[0])
		exactParams, _ := exact.(*bfclck.Dict)
		fn, known := fns[name]
		tool, hasTool := rec.ToolByName(name)
		var schema *Schema
		if hasTool {
			schema, _ = tool.Schema()
		}
		call := Call{Name: name, Arguments: map[string]any{}}
		accept := map[string][]any{}
		for _, p := range sortedKeys(params) {
			opts, ok := params[p].([]any)
			if !ok {
				return nil, fmt.Errorf("[%d] %s.%s: must be a list of acceptable values", i, name, p)
			}
			if _, declared := fn.props.Get(p); known && !declared {
				if slices.Contains(opts, any("")) {
					met = append(met, quirkUndeclaredOptional)
				} else {
					met = append(met, quirkUndeclared)
				}
				continue
			}
			if len(opts) == 0 {
				met = append(met, quirkEmptyList)
				if schema.IsRequired(p) {
					dropRequired(tool, p)
				}
				continue
			}
			conc := make([]any, len(opts))
			for j, o := range opts {
				conc[j] = firstChoices(o)
			}
			if lang != bfclck.Python {
				var noLit bool
				conc, noLit = bfclLiterals(lang, fn, p, exactParams, conc)
				if noLit {
					met = append(met, quirkNoLiteral)
				}
			}
			if typ, elem := fn.types(p); lang == bfclck.Python && (typ == "array" || typ == "tuple") && elem == "float" && wholeFloats(conc) {
				met = append(met, quirkWholeFloats)
			}
			accept[p] = conc
			pick := conc[0]
			if schema.IsRequired(p) {
				pick = nil
				for _, o := range conc {
					if o != "" {
						pick = o
						break
					}
				}
				if pick == nil {
					met = append(met, quirkOnlyEmpty)
					call.Arguments[p] = ""
					continue
				}
			}
			if pick != "" {
				call.Arguments[p] = pick
			}
		}
		if schema != nil {
			for _, r := range schema.Required {
				if _, has := params[r]; !has {
					met = append(met, quirkRequiredMissing)
					dropRequired(tool, r)
				}
			}
		}
		rec.Calls = append(rec.Calls, call)
		rec.Accept = append(rec.Accept, accept)
	}
	return met, nil
}

// wholeFloats tells whether an acceptable list holds an integral number.
func wholeFloats(conc []any) bool {
	for _, c := range conc {
		list, _ := c.([]any)
		for _, e := range list {
			if f, ok := e.(float64); ok && f == math.Trunc(f) {
				return true
			}
		}
	}
	return false
}

// bfclLiterals writes a Java or JavaScript parameter's acceptable values
// (conc, first choices taken) as the literals the checker converts back;
// "" stays "". noLit reports a value with no such literal (its best text
// is kept, and the checker will reject it).
func bfclLiterals(lang bfclck.Language, fn bfclFunction, p string, exact *bfclck.Dict, conc []any) ([]any, bool) {
	typ, elem := fn.types(p)
	opts, _ := exact.Get(p)
	list, _ := opts.([]bfclck.Value)
	out := make([]any, 0, len(conc))
	noLit := false
	for j, c := range conc {
		if c == "" || j >= len(list) {
			out = append(out, c)
			continue
		}
		lit, ok := bfclck.Literal(lang, typ, elem, bfclFirst(list[j]))
		noLit = noLit || !ok
		if !slices.Contains(out, any(lit)) {
			out = append(out, lit)
		}
	}
	return out, noLit
}

// bfclFirst is firstChoices over checker values: a dict's keys take their
// first option ("" first: the key is left out); lists element-wise.
func bfclFirst(v bfclck.Value) bfclck.Value {
	switch x := v.(type) {
	case *bfclck.Dict:
		out := bfclck.NewDict()
		for _, k := range x.Keys {
			list, ok := x.Vals[k].([]bfclck.Value)
			if !ok {
				out.Set(k, bfclFirst(x.Vals[k]))
				continue
			}
			if len(list) == 0 || list[0] == "" {
				continue
			}
			out.Set(k, bfclFirst(list[0]))
		}
		return out
	case []bfclck.Value:
		out := make([]bfclck.Value, len(x))
		for i, e := range x {
			out[i] = bfclFirst(e)
		}
		return out
	}
	return v
}

// dropRequired removes p from the tool's "required" list.
func dropRequired(t *Tool, p string) {
	if t == nil {
		return
	}
	n, err := parseONode(t.Parameters)
	if err != nil || n.kind != '{' {
		return
	}
	req := n.field("required")
	if req == nil || req.kind != '[' {
		return
	}
	kept := req.vals[:0]
	for _, r := range req.vals {
		var name string
		if json.Unmarshal(r.raw, &name) != nil || name != p {
			kept = append(kept, r)
		}
	}
	req.vals = kept
	t.Parameters = n.marshal()
}

// firstChoices turns a BFCL possible-answer value into a concrete value:
// inside dicts every key maps to a list of options, of which the first is
// taken ("" first means the key is omitted); lists are taken element-wise.
func firstChoices(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, opts := range x {
			list, ok := opts.([]any)
			if !ok {
				out[k] = firstChoices(opts)
				continue
			}
			if len(list) == 0 || list[0] == "" {
				continue
			}
			out[k] = firstChoices(list[0])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, el := range x {
			out[i] = firstChoices(el)
		}
		return out
	}
	return v
}

// bfclSelfCheck runs the checker on the record's gold calls as the
// tool_call format renders them (an integral number is written without a
// fraction, so it reads back as an int).
func bfclSelfCheck(rec *Record) (bfclck.Result, error) {
	c, err := bfclck.ParseCase(rec.BFCL.Category, rec.BFCL.Functions, rec.BFCL.GroundTruth)
	if err != nil {
		return bfclck.Result{}, fmt.Errorf("bfcl: %w", err)
	}
	calls := make([]bfclck.Call, len(rec.Calls))
	for i, g := range rec.Calls {
		var s *Schema
		if t, ok := rec.ToolByName(g.Name); ok {
			s, _ = t.Schema()
		}
		calls[i] = bfclck.Call{Name: g.Name, Args: renderedDict(g.Arguments, s)}
	}
	return c.Check(true, calls), nil
}

// renderedDict is m as the renderer writes and Python reads it back: keys
// in the schema's property order, then sorted.
func renderedDict(m map[string]any, s *Schema) *bfclck.Dict {
	d := bfclck.NewDict()
	for _, p := range s.PropertyNames() {
		if v, ok := m[p]; ok {
			ps, _ := s.Property(p)
			d.Set(p, rendered(v, ps))
		}
	}
	for _, k := range sortedKeys(m) {
		if _, ok := d.Get(k); !ok {
			ps, _ := s.Property(k)
			d.Set(k, rendered(m[k], ps))
		}
	}
	return d
}

func rendered(v any, s *Schema) bfclck.Value {
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e21 {
			i, _ := new(big.Float).SetFloat64(x).Int(nil)
			return i
		}
		return x
	case []any:
		var items *Schema
		if s != nil {
			items = s.Items
		}
		out := make([]bfclck.Value, len(x))
		for i, e := range x {
			out[i] = rendered(e, items)
		}
		return out
	case map[string]any:
		return renderedDict(x, s)
	}
	return v
}
