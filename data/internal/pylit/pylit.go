// Package pylit parses Python call lists such as
//
//	[get_weather(city="Paris", days=3), convert(amount=1.5e3, to=['EUR', "USD"])]
//
// with the byte span of every keyword-argument value. Values are Python
// literals decoded to JSON-like Go values: strings in single or double
// quotes (also triple-quoted, with r/u prefixes), numbers (float64; underscores, hex, octal,
// binary), True/False/None (and JSON's true/false/null), lists and tuples
// ([]any) and dicts with string or number keys (map[string]any). It is used
// by the pythonic output format and the ToolACE importer; it never panics.
// The lexing (blanks, nesting, sequences, string bodies) is data/internal/scan's.
package pylit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/argrl/argrl/data/internal/scan"
)

// Span is a byte range [Start, End) of the source text.
type Span struct{ Start, End int }

// Error is a syntax error at a byte offset.
type Error = scan.Error

// Arg is one keyword argument.
type Arg struct {
	Name      string
	Value     any
	ValueSpan Span // for strings: the content between the quotes
	// Exact is Value with Python's types kept: numbers are json.Number
	// holding a decimal literal ("10" for an int, a text with "." or an
	// exponent for a float), tuples are Tuple, dicts are *Dict.
	Exact any
}

// Tuple is a Python tuple in Arg.Exact.
type Tuple []any

// Dict is a Python dict in Arg.Exact, with its keys in the order written
// (a repeated key keeps its first place and its last value).
type Dict struct {
	Keys []string
	Vals map[string]any
}

func (d *Dict) set(k string, v any) {
	if _, ok := d.Vals[k]; !ok {
		d.Keys = append(d.Keys, k)
	}
	d.Vals[k] = v
}

// Call is one parsed call: name(arg=value, ...).
type Call struct {
	Name string
	Args []Arg
	Span Span // from the first byte of the name to the closing parenthesis
}

// nameStop are the bytes that end a function or argument name.
const nameStop = "()[]{}=,'\"\\"

type parser struct{ *scan.Scanner }

// ParseList parses s[start:end] as a bracketed call list "[c1, c2, ...]"
// (empty list allowed, trailing comma allowed, whitespace anywhere between
// tokens) and requires nothing but whitespace around it.
func ParseList(s string, start, end int) ([]Call, error) {
	p := parser{scan.New(s, start, end)}
	p.SkipSpace()
	if !p.Eat('[') {
		return nil, p.Errorf("expected '['")
	}
	var calls []Call
	err := p.Seq(']', true, "expected ',' or ']' after a call", func() error {
		c, err := p.call()
		calls = append(calls, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	p.SkipSpace()
	if !p.AtEnd() {
		return nil, p.Errorf("unexpected text after ']'")
	}
	return calls, nil
}

// call parses name(kw=value, ...). Names may contain spaces inside (ToolACE
// has "Get Stock Price"), dots and any byte but ( ) [ ] { } = , ' " \ and
// control characters; surrounding spaces are not part of the name.
func (p parser) call() (Call, error) {
	start := p.Pos
	for !p.AtEnd() {
		b := p.Peek()
		if b < 0x20 || b == 0x7f || strings.IndexByte(nameStop, b) >= 0 {
			break
		}
		p.Pos++
	}
	name := strings.TrimRight(p.Src[start:p.Pos], " ")
	if name == "" {
		return Call{}, p.Errorf("expected a function name")
	}
	if !utf8.ValidString(name) {
		return Call{}, p.ErrorAt(start, "function name is not valid UTF-8")
	}
	if !p.Eat('(') {
		return Call{}, p.Errorf("expected '(' after function name %q", name)
	}
	c := Call{Name: name, Span: Span{Start: start}}
	err := p.Seq(')', true, "expected ',' or ')' after an argument", func() error {
		at := p.Pos
		a, err := p.kwarg()
		if err != nil {
			return err
		}
		for _, prev := range c.Args {
			if prev.Name == a.Name {
				return p.ErrorAt(at, "keyword argument %q repeated", a.Name)
			}
		}
		c.Args = append(c.Args, a)
		return nil
	})
	if err != nil {
		return Call{}, err
	}
	c.Span.End = p.Pos
	return c, nil
}

func (p parser) kwarg() (Arg, error) {
	start := p.Pos
	for !p.AtEnd() {
		b := p.Peek()
		if b <= ' ' || b == 0x7f || strings.IndexByte(nameStop, b) >= 0 {
			break
		}
		p.Pos++
	}
	name := p.Src[start:p.Pos]
	p.SkipSpace()
	if name == "" || !p.Eat('=') {
		p.Pos = start
		return Arg{}, p.Errorf("expected keyword argument name=value (positional arguments are not supported)")
	}
	if !utf8.ValidString(name) {
		return Arg{}, p.ErrorAt(start, "argument name is not valid UTF-8")
	}
	p.SkipSpace()
	v, x, sp, err := p.value()
	if err != nil {
		return Arg{}, err
	}
	return Arg{Name: name, Value: v, ValueSpan: sp, Exact: x}, nil
}

// value parses one literal and returns it (as Arg.Value and as Arg.Exact)
// with its span (string contents exclude the quotes and prefix).
func (p parser) value() (any, any, Span, error) {
	err := p.Enter()
	defer p.Leave()
	if err != nil {
		return nil, nil, Span{}, err
	}
	start := p.Pos
	b := p.Peek()
	switch {
	case b == '"' || b == '\'':
		v, sp, err := p.str(false)
		return v, v, sp, err
	case b == '[' || b == '(':
		v, x, err := p.seq()
		return v, x, Span{start, p.Pos}, err
	case b == '{':
		v, x, err := p.dict()
		return v, x, Span{start, p.Pos}, err
	case b == '-' || b == '+' || b == '.' || (b >= '0' && b <= '9'):
		v, lit, err := p.number()
		if err != nil {
			return nil, nil, Span{}, err
		}
		return v, json.Number(lit), Span{start, p.Pos}, nil
	case isIdentByte(b):
		word := p.ident()
		switch word {
		case "True", "true":
			return true, true, Span{start, p.Pos}, nil
		case "False", "false":
			return false, false, Span{start, p.Pos}, nil
		case "None", "null":
			return nil, nil, Span{start, p.Pos}, nil
		}
		if len(word) <= 2 && (p.Peek() == '"' || p.Peek() == '\'') {
			lw := strings.ToLower(word)
			switch lw {
			case "r", "u":
				v, sp, err := p.str(lw == "r")
				return v, v, sp, err
			}
			p.Pos = start
			return nil, nil, Span{}, p.Errorf("unsupported string prefix %q", word)
		}
		p.Pos = start
		return nil, nil, Span{}, p.Errorf("unquoted name %q is not a literal", word)
	case b == 0:
		return nil, nil, Span{}, p.Errorf("expected a value, found end of text")
	}
	return nil, nil, Span{}, p.Errorf("unexpected %q where a value belongs", b)
}

func isIdentByte(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b >= 0x80
}

func (p parser) ident() string {
	start := p.Pos
	for !p.AtEnd() && isIdentByte(p.Peek()) {
		p.Pos++
	}
	return p.Src[start:p.Pos]
}

// seq parses a list [...] or a tuple (...).
func (p parser) seq() (any, any, error) {
	closer := byte(']')
	if p.Peek() == '(' {
		closer = ')'
	}
	p.Pos++
	out, exact := []any{}, []any{}
	err := p.Seq(closer, true, fmt.Sprintf("expected ',' or %q in a list", closer), func() error {
		v, x, _, err := p.value()
		out, exact = append(out, v), append(exact, x)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if closer == ')' {
		return out, Tuple(exact), nil
	}
	return out, exact, nil
}

func (p parser) dict() (any, any, error) {
	p.Pos++
	out := map[string]any{}
	exact := &Dict{Vals: map[string]any{}}
	err := p.Seq('}', true, "expected ',' or '}' in a dict", func() error {
		kpos := p.Pos
		k, _, _, err := p.value()
		if err != nil {
			return err
		}
		var key string
		switch kv := k.(type) {
		case string:
			key = kv
		case float64:
			key = strconv.FormatFloat(kv, 'g', -1, 64)
		default:
			p.Pos = kpos
			return p.Errorf("dict keys must be strings or numbers")
		}
		p.SkipSpace()
		if !p.Eat(':') {
			return p.Errorf("expected ':' after a dict key")
		}
		p.SkipSpace()
		v, x, _, err := p.value()
		if err != nil {
			return err
		}
		out[key] = v
		exact.set(key, x)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, exact, nil
}
