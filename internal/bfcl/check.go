// Package bfcl scores a tool-call response as the Berkeley Function Calling
// Leaderboard's AST checker does (ShishirPatil/gorilla,
// berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py
// and eval_runner.py, read at commit 6ea57973c7a6097fd7c5915698c54c17c5b1b6c8),
// for the single-turn categories. It is written from the checker's rules;
// no code is taken from it.
//
// Rules followed, with the checker's error types:
//
//   - Dispatch by category name: a category containing "parallel" matches
//     every gold call to a distinct predicted call (greedy first fit: each
//     gold call in order takes the first unused prediction that passes the
//     single-call check; parallel_function_checker_no_order); else one
//     containing "multiple" needs exactly as many calls as gold calls and
//     checks only the first against the first gold call
//     (multiple_function_checker); else (simple) exactly one call, checked
//     against the first function and the first gold call.
//   - Relevance categories (names containing "relevance") only ask whether
//     the response decodes to at least one call: irrelevance passes
//     without one, relevance with one. A response that does not decode is
//     "no call" there, and ast_decoder:decoder_failed elsewhere.
//   - Single call (simple_function_checker): the function's name; every
//     parameter in "required" present; every argument both declared and
//     named in the gold answer; then per argument its type and value; last,
//     every gold parameter the call lacks must list "" (optional).
//   - Types are Python's exact types (type(x) == T, so bool is not int):
//     an int is promoted to float only for a Python float parameter; a
//     tuple is a list for a tuple parameter (JSON has no tuples). One
//     level of element types is checked for array/tuple parameters
//     (Java Array/ArrayList, JavaScript array). A value whose type is that
//     of the gold values, when those differ from the declared type, is a
//     "variable": it skips the special checks and must equal a gold value.
//   - Values: strings, and strings directly inside lists and dict values,
//     are compared after standardize_string (spaces and ,./-_*^ removed,
//     Python's lower-casing, ' turned into "); lists as a whole (an
//     optional "" gold value equals []); dicts key by key with per-key
//     option lists and optional keys; lists of dicts position by position;
//     anything else by Python equality among the gold values.
//   - Java and JavaScript: every argument must be a string, converted by
//     the checker's type converters (regular expressions over Java and
//     JavaScript literal syntax, defaulting to the string itself) before
//     the checks above.
//
// Where it departs: function names are compared as written (the checker's
// underscore-to-dot renaming applies only to models whose API forbids dots
// in names); decoding is the caller's (argrl's output formats, which are
// stricter than some model handlers'); and where the checker itself would
// raise on a response (a Python exception that stops the leaderboard run),
// the response fails with error type "checker_error:<exception>".
package bfcl

import (
	"errors"
	"fmt"
	"strings"
)

// Language is the language of a category's functions.
type Language int

// The checker's three languages.
const (
	Python Language = iota
	Java
	JavaScript
)

func (l Language) String() string {
	return [...]string{"python", "java", "javascript"}[l]
}

// LanguageOf is the language of a category: Java for names containing
// "java" but not "javascript", JavaScript for "javascript", else Python.
func LanguageOf(category string) Language {
	switch {
	case strings.Contains(category, "javascript"):
		return JavaScript
	case strings.Contains(category, "java"):
		return Java
	}
	return Python
}

// IsRelevance tells whether a category is scored by decoding alone
// (irrelevance, live_irrelevance, live_relevance).
func IsRelevance(category string) bool { return strings.Contains(category, "relevance") }

// Call is one decoded call of a response: the function name and the
// arguments in the order written.
type Call struct {
	Name string
	Args *Dict
}

// Case is one BFCL test entry: its category, its function documents and
// (for all but the relevance categories) its possible answers.
type Case struct {
	Category  string
	Language  Language
	functions Value
	answers   []Value
}

// ParseCase parses a test entry's function list and possible answers
// (ground_truth), both JSON as BFCL writes them, and checks the shape the
// checker relies on for every response: a list of functions with a name and
// parameters.properties / parameters.required; a non-empty list of gold
// calls {function: {param: [acceptable values]}} naming listed functions.
func ParseCase(category string, functions, groundTruth []byte) (*Case, error) {
	if category == "" {
		return nil, errors.New("empty category")
	}
	c := &Case{Category: category, Language: LanguageOf(category)}
	fv, err := DecodeJSON(functions)
	if err != nil {
		return nil, fmt.Errorf("functions: %w", err)
	}
	c.functions = fv
	if IsRelevance(category) {
		return c, nil
	}
	simple := !strings.Contains(category, "parallel") && !strings.Contains(category, "multiple")
	fns, ok := fv.([]Value)
	if !ok {
		if _, isDict := fv.(*Dict); !isDict || simple {
			return nil, errors.New("functions: must be a list of functions")
		}
		fns = []Value{fv}
	}
	for i, f := range fns {
		if _, err := describe(f); err != nil {
			return nil, fmt.Errorf("functions[%d]: %w", i, err)
		}
	}
	if len(groundTruth) == 0 {
		return nil, errors.New("no ground truth (possible answers)")
	}
	gv, err := DecodeJSON(groundTruth)
	if err != nil {
		return nil, fmt.Errorf("ground_truth: %w", err)
	}
	gts, ok := gv.([]Value)
	if !ok || len(gts) == 0 {
		return nil, errors.New("ground_truth: must be a non-empty list of calls")
	}
	if len(fns) == 0 {
		return nil, errors.New("functions: empty list")
	}
	for i, g := range gts {
		name, params, err := goldCall(g)
		if err != nil {
			return nil, fmt.Errorf("ground_truth[%d]: %w", i, err)
		}
		for _, p := range params.Keys {
			if _, isList := params.Vals[p].([]Value); !isList {
				return nil, fmt.Errorf("ground_truth[%d] %s.%s: must be a list of acceptable values", i, name, p)
			}
		}
		if !simple && c.find(name) == nil {
			return nil, fmt.Errorf("ground_truth[%d]: function %q is not in the function list", i, name)
		}
	}
	c.answers = gts
	return c, nil
}

// function is the part of a function document every check reads.
type function struct {
	name     string
	props    *Dict
	required []Value
}

func describe(f Value) (*function, error) {
	d, ok := f.(*Dict)
	if !ok {
		return nil, errors.New("must be an object")
	}
	name, _ := d.Vals["name"].(string)
	if name == "" {
		return nil, errors.New("name: must be a non-empty string")
	}
	params, ok := d.Vals["parameters"].(*Dict)
	if !ok {
		return nil, fmt.Errorf("%s: parameters: must be an object", name)
	}
	props, ok := params.Vals["properties"].(*Dict)
	if !ok {
		return nil, fmt.Errorf("%s: parameters.properties: must be an object", name)
	}
	req, ok := params.Vals["required"].([]Value)
	if !ok {
		return nil, fmt.Errorf("%s: parameters.required: must be a list", name)
	}
	for _, r := range req {
		if _, ok := r.(string); !ok {
			return nil, fmt.Errorf("%s: parameters.required: must list names", name)
		}
	}
	return &function{name: name, props: props, required: req}, nil
}

// goldCall splits {function: {param: [values]}}: the first key and value,
// as the checker reads them.
func goldCall(g Value) (string, *Dict, error) {
	d, ok := g.(*Dict)
	if !ok || d.Len() == 0 {
		return "", nil, errors.New("must be an object {function: {param: [values]}}")
	}
	params, ok := d.Vals[d.Keys[0]].(*Dict)
	if !ok {
		return "", nil, fmt.Errorf("%s: must map parameters to lists of acceptable values", d.Keys[0])
	}
	return d.Keys[0], params, nil
}

// find is find_description: the listed function of that name (a single
// function document is returned whatever its name); nil if none.
func (c *Case) find(name string) Value {
	fns, ok := c.functions.([]Value)
	if !ok {
		return c.functions
	}
	for _, f := range fns {
		if d, ok := f.(*Dict); ok && d.Vals["name"] == name {
			return f
		}
	}
	return nil
}

// Check scores one response. decoded tells whether it decoded at all;
// calls are its calls in order.
func (c *Case) Check(decoded bool, calls []Call) Result {
	r, err := c.check(decoded, calls)
	var pe *pyErr
	if errors.As(err, &pe) {
		return fail("checker_error:"+pe.exc, "the checker raises %s", pe)
	}
	if err != nil {
		return fail("checker_error:Exception", "%v", err)
	}
	return r
}

func (c *Case) check(decoded bool, calls []Call) (Result, error) {
	cat := c.Category
	if IsRelevance(cat) {
		hasCall := decoded && len(calls) > 0
		if strings.Contains(cat, "irrelevance") {
			if hasCall {
				return fail("irrelevance_error:decoder_success", "valid syntax: the response decodes to a call when it should not"), nil
			}
			return valid, nil
		}
		if !hasCall {
			return fail("relevance_error:decoder_failed", "invalid syntax: the response does not decode to a call"), nil
		}
		return valid, nil
	}
	if !decoded {
		return fail("ast_decoder:decoder_failed", "invalid syntax: failed to decode the response"), nil
	}
	switch {
	case strings.Contains(cat, "parallel"):
		return c.parallel(calls)
	case strings.Contains(cat, "multiple"):
		if len(calls) != len(c.answers) {
			return fail("multiple_function_checker:wrong_count", "wrong number of functions: %d, want %d", len(calls), len(c.answers)), nil
		}
		name, _, _ := goldCall(c.answers[0])
		return c.single(c.find(name), calls[0], c.answers[0])
	}
	if len(calls) != 1 {
		return fail("simple_function_checker:wrong_count", "wrong number of functions: %d, want 1", len(calls)), nil
	}
	return c.single(c.functions.([]Value)[0], calls[0], c.answers[0])
}

// parallel is parallel_function_checker_no_order.
func (c *Case) parallel(calls []Call) (Result, error) {
	if len(calls) != len(c.answers) {
		return fail("parallel_function_checker_no_order:wrong_count", "wrong number of functions: %d, want %d", len(calls), len(c.answers)), nil
	}
	used := make([]bool, len(calls))
	for i, g := range c.answers {
		name, _, _ := goldCall(g)
		fd := c.find(name)
		found := false
		var last Result
		for j, call := range calls {
			if used[j] {
				continue
			}
			r, err := c.single(fd, call, g)
			if err != nil {
				return Result{}, err
			}
			if r.Valid {
				used[j], found = true, true
				break
			}
			last = r
		}
		if !found {
			return fail("parallel_function_checker_no_order:cannot_find_match",
				"no unmatched call matches gold call %d (%s); last mismatch %s: %s", i, name, last.ErrorType, last.Error), nil
		}
	}
	return valid, nil
}
