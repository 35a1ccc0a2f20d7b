package format

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/argrl/argrl/data/internal/scan"
)

// jnode is a JSON value with its position in the raw text. Objects keep
// their keys in order (a repeated key keeps its first position and its last
// value, as Python's json does for the value).
type jnode struct {
	v    any  // decoded value: map[string]any, []any, string, float64, bool, nil
	span Span // strings: the content between the quotes; others: the whole literal
	full Span // the whole literal, quotes included
	keys []string
	vals []*jnode // objects: child per key, in keys order
	lit  string   // numbers: the literal text
}

// exactOf is n's value as written (see ParsedCall.Exact).
func exactOf(n *jnode) any {
	switch n.v.(type) {
	case map[string]any:
		o := &Object{Keys: append([]string(nil), n.keys...), Values: make(map[string]any, len(n.keys))}
		for i, k := range n.keys {
			o.Values[k] = exactOf(n.vals[i])
		}
		return o
	case []any:
		out := make([]any, len(n.vals))
		for i, c := range n.vals {
			out[i] = exactOf(c)
		}
		return out
	case float64:
		return json.Number(n.lit)
	}
	return n.v
}

func (n *jnode) get(key string) (*jnode, bool) {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

// jparser reads RFC 8259 JSON on the shared scanner.
type jparser struct{ *scan.Scanner }

// parseJSON parses exactly one JSON value in s[start:end], allowing
// surrounding whitespace.
func parseJSON(s string, start, end int) (*jnode, error) {
	p := jparser{scan.New(s, start, end)}
	p.SkipSpace()
	n, err := p.value()
	if err == nil {
		p.SkipSpace()
		if !p.AtEnd() {
			err = p.Errorf("unexpected text after the JSON value")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("JSON %w", err)
	}
	return n, nil
}

var jsonLiterals = []struct {
	word string
	v    any
}{{"true", true}, {"false", false}, {"null", nil}}

func (p jparser) value() (*jnode, error) {
	err := p.Enter()
	defer p.Leave()
	if err != nil {
		return nil, err
	}
	if p.AtEnd() {
		return nil, p.Errorf("expected a value, found end of text")
	}
	start := p.Pos
	switch c := p.Peek(); {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		v, sp, err := p.Quoted(&jsonString)
		if err != nil {
			return nil, err
		}
		return &jnode{v: v, span: Span(sp), full: Span{start, p.Pos}}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		if err != nil {
			return nil, err
		}
		return &jnode{v: f, span: Span{start, p.Pos}, full: Span{start, p.Pos}, lit: p.Src[start:p.Pos]}, nil
	}
	for _, lit := range jsonLiterals {
		if p.HasPrefix(lit.word) {
			p.Pos += len(lit.word)
			return &jnode{v: lit.v, span: Span{start, p.Pos}, full: Span{start, p.Pos}}, nil
		}
	}
	return nil, p.Errorf("unexpected %q where a value belongs", p.Peek())
}

func (p jparser) object() (*jnode, error) {
	start := p.Pos
	p.Pos++
	n := &jnode{}
	m := map[string]any{}
	err := p.Seq('}', false, "expected ',' or '}' in an object", func() error {
		if p.Peek() != '"' {
			return p.Errorf("expected a string key")
		}
		k, _, err := p.Quoted(&jsonString)
		if err != nil {
			return err
		}
		p.SkipSpace()
		if !p.Eat(':') {
			return p.Errorf("expected ':' after an object key")
		}
		p.SkipSpace()
		child, err := p.value()
		if err != nil {
			return err
		}
		if _, dup := m[k]; dup {
			for i := range n.keys {
				if n.keys[i] == k {
					n.vals[i] = child
				}
			}
		} else {
			n.keys = append(n.keys, k)
			n.vals = append(n.vals, child)
		}
		m[k] = child.v
		return nil
	})
	if err != nil {
		return nil, err
	}
	n.v = m
	n.span = Span{start, p.Pos}
	n.full = n.span
	return n, nil
}

func (p jparser) array() (*jnode, error) {
	start := p.Pos
	p.Pos++
	out := []any{}
	n := &jnode{}
	err := p.Seq(']', false, "expected ',' or ']' in an array", func() error {
		child, err := p.value()
		if err != nil {
			return err
		}
		out = append(out, child.v)
		n.vals = append(n.vals, child)
		return nil
	})
	if err != nil {
		return nil, err
	}
	n.v = out
	n.span = Span{start, p.Pos}
	n.full = n.span
	return n, nil
}

// number parses a JSON number (RFC 8259 grammar) as float64.
func (p jparser) number() (float64, error) {
	start := p.Pos
	p.Eat('-')
	intStart := p.Pos
	if p.Digits(false) == 0 {
		return 0, p.Errorf("expected digits")
	}
	if p.Src[intStart] == '0' && p.Pos-intStart > 1 {
		return 0, p.Errorf("leading zero in a number")
	}
	if p.Eat('.') && p.Digits(false) == 0 {
		return 0, p.Errorf("expected digits after '.'")
	}
	if p.Eat('e') || p.Eat('E') {
		if !p.Eat('+') {
			p.Eat('-')
		}
		if p.Digits(false) == 0 {
			return 0, p.Errorf("expected exponent digits")
		}
	}
	f, ok := scan.Float(p.Src[start:p.Pos])
	if !ok {
		p.Pos = start
		return 0, p.Errorf("number out of range")
	}
	return f, nil
}

// jsonString is the JSON string literal: control characters must be
// escaped; invalid UTF-8 and lone surrogates become U+FFFD.
var jsonString = scan.Quote{Open: `"`, Close: `"`, Escape: jsonEscape,
	Simple: map[byte]string{'"': "\"", '\\': "\\", '/': "/", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t"},
	Reject: func(c byte) string {
		if c < 0x20 {
			return "control character in a string"
		}
		return ""
	}}

// jsonEscape decodes a \u escape at s.Pos, joining a surrogate pair.
func jsonEscape(s *scan.Scanner, b *strings.Builder) error {
	if e := s.Src[s.Pos+1]; e != 'u' {
		return s.Errorf("bad escape \\%c", e)
	}
	r, ok := s.Hex(s.Pos+2, 4)
	if !ok {
		return s.Errorf("bad \\u escape")
	}
	s.Pos += 6
	if utf16.IsSurrogate(r) {
		if r2, ok := s.Hex(s.Pos+2, 4); ok && s.HasPrefix(`\u`) {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				b.WriteRune(d)
				s.Pos += 6
				return nil
			}
		}
		r = utf8.RuneError
	}
	b.WriteRune(r)
	return nil
}
