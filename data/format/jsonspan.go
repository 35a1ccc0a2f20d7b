package format

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
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
}

func (n *jnode) get(key string) (*jnode, bool) {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i], true
		}
	}
	return nil, false
}

type jparser struct {
	s     string
	pos   int
	depth int
}

func (p *jparser) fail(format string, args ...any) error {
	return fmt.Errorf("JSON at byte %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// parseJSON parses exactly one JSON value in s[start:end], allowing
// surrounding whitespace.
func parseJSON(s string, start, end int) (*jnode, error) {
	p := &jparser{s: s[:end], pos: start}
	p.ws()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.pos != len(p.s) {
		return nil, p.fail("unexpected text after the JSON value")
	}
	return n, nil
}

func (p *jparser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) value() (*jnode, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.fail("nesting deeper than %d", maxDepth)
	}
	if p.pos >= len(p.s) {
		return nil, p.fail("expected a value, found end of text")
	}
	start := p.pos
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		v, sp, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jnode{v: v, span: sp, full: Span{start, p.pos}}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		if err != nil {
			return nil, err
		}
		return &jnode{v: f, span: Span{start, p.pos}, full: Span{start, p.pos}}, nil
	}
	for _, lit := range []struct {
		word string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(p.s[p.pos:], lit.word) {
			p.pos += len(lit.word)
			return &jnode{v: lit.v, span: Span{start, p.pos}, full: Span{start, p.pos}}, nil
		}
	}
	return nil, p.fail("unexpected %q where a value belongs", p.s[p.pos])
}

func (p *jparser) object() (*jnode, error) {
	start := p.pos
	p.pos++
	n := &jnode{}
	m := map[string]any{}
	for {
		p.ws()
		if p.pos < len(p.s) && p.s[p.pos] == '}' && len(n.keys) == 0 {
			p.pos++
			break
		}
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return nil, p.fail("expected a string key")
		}
		k, _, err := p.str()
		if err != nil {
			return nil, err
		}
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.fail("expected ':' after an object key")
		}
		p.pos++
		p.ws()
		child, err := p.value()
		if err != nil {
			return nil, err
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
		p.ws()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == '}' {
			p.pos++
			break
		}
		return nil, p.fail("expected ',' or '}' in an object")
	}
	n.v = m
	n.span = Span{start, p.pos}
	n.full = n.span
	return n, nil
}

func (p *jparser) array() (*jnode, error) {
	start := p.pos
	p.pos++
	out := []any{}
	n := &jnode{}
	for {
		p.ws()
		if p.pos < len(p.s) && p.s[p.pos] == ']' && len(out) == 0 {
			p.pos++
			break
		}
		child, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, child.v)
		n.vals = append(n.vals, child)
		p.ws()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.s) && p.s[p.pos] == ']' {
			p.pos++
			break
		}
		return nil, p.fail("expected ',' or ']' in an array")
	}
	n.v = out
	n.span = Span{start, p.pos}
	n.full = n.span
	return n, nil
}

// number parses a JSON number (RFC 8259 grammar) as float64.
func (p *jparser) number() (float64, error) {
	start := p.pos
	if p.s[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if digits() == 0 {
		return 0, p.fail("expected digits")
	}
	if p.s[intStart] == '0' && p.pos-intStart > 1 {
		return 0, p.fail("leading zero in a number")
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return 0, p.fail("expected digits after '.'")
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return 0, p.fail("expected exponent digits")
		}
	}
	f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
	if err != nil || math.IsInf(f, 0) {
		p.pos = start
		return 0, p.fail("number out of range")
	}
	return f, nil
}

// str parses a JSON string at p.pos and returns its value and the span of
// its content. Invalid UTF-8 and lone surrogates become U+FFFD.
func (p *jparser) str() (string, Span, error) {
	p.pos++ // opening quote
	start := p.pos
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return "", Span{}, p.fail("unterminated string")
		}
		c := p.s[p.pos]
		switch {
		case c == '"':
			end := p.pos
			p.pos++
			return b.String(), Span{start, end}, nil
		case c < 0x20:
			return "", Span{}, p.fail("control character in a string")
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return "", Span{}, p.fail("unterminated string")
			}
			e := p.s[p.pos+1]
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := p.hex4(p.pos + 2)
				if !ok {
					return "", Span{}, p.fail("bad \\u escape")
				}
				p.pos += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := p.hex4(p.pos + 2); ok && p.pos+1 < len(p.s) && p.s[p.pos] == '\\' && p.s[p.pos+1] == 'u' {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b.WriteRune(d)
							p.pos += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
				continue
			default:
				return "", Span{}, p.fail("bad escape \\%c", e)
			}
			p.pos += 2
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.pos:])
			b.WriteRune(r)
			p.pos += size
		}
	}
}

func (p *jparser) hex4(at int) (rune, bool) {
	if at+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[at:at+4], 16, 32)
	if err != nil || strings.ContainsAny(p.s[at:at+4], "+-") {
		return 0, false
	}
	return rune(v), true
}
