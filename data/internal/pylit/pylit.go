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
	v, sp, err := p.value()
	if err != nil {
		return Arg{}, err
	}
	return Arg{Name: name, Value: v, ValueSpan: sp}, nil
}

// value parses one literal and returns it with its span (string contents
// exclude the quotes and prefix).
func (p parser) value() (any, Span, error) {
	err := p.Enter()
	defer p.Leave()
	if err != nil {
		return nil, Span{}, err
	}
	start := p.Pos
	b := p.Peek()
	switch {
	case b == '"' || b == '\'':
		return p.str(false)
	case b == '[' || b == '(':
		v, err := p.seq()
		return v, Span{start, p.Pos}, err
	case b == '{':
		v, err := p.dict()
		return v, Span{start, p.Pos}, err
	case b == '-' || b == '+' || b == '.' || (b >= '0' && b <= '9'):
		v, err := p.number()
		return v, Span{start, p.Pos}, err
	case isIdentByte(b):
		word := p.ident()
		switch word {
		case "True", "true":
			return true, Span{start, p.Pos}, nil
		case "False", "false":
			return false, Span{start, p.Pos}, nil
		case "None", "null":
			return nil, Span{start, p.Pos}, nil
		}
		if len(word) <= 2 && (p.Peek() == '"' || p.Peek() == '\'') {
			lw := strings.ToLower(word)
			switch lw {
			case "r", "u":
				return p.str(lw == "r")
			}
			p.Pos = start
			return nil, Span{}, p.Errorf("unsupported string prefix %q", word)
		}
		p.Pos = start
		return nil, Span{}, p.Errorf("unquoted name %q is not a literal", word)
	case b == 0:
		return nil, Span{}, p.Errorf("expected a value, found end of text")
	}
	return nil, Span{}, p.Errorf("unexpected %q where a value belongs", b)
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
func (p parser) seq() (any, error) {
	closer := byte(']')
	if p.Peek() == '(' {
		closer = ')'
	}
	p.Pos++
	out := []any{}
	err := p.Seq(closer, true, fmt.Sprintf("expected ',' or %q in a list", closer), func() error {
		v, _, err := p.value()
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (p parser) dict() (any, error) {
	p.Pos++
	out := map[string]any{}
	err := p.Seq('}', true, "expected ',' or '}' in a dict", func() error {
		kpos := p.Pos
		k, _, err := p.value()
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
		v, _, err := p.value()
		if err != nil {
			return err
		}
		out[key] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
