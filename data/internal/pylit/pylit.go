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
package pylit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Span is a byte range [Start, End) of the source text.
type Span struct{ Start, End int }

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

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 100

// nameStop are the bytes that end a function or argument name.
const nameStop = "()[]{}=,'\"\\"

type parser struct {
	s     string
	pos   int
	depth int
}

// Error is a syntax error at a byte offset.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at byte %d: %s", e.Pos, e.Msg) }

func (p *parser) fail(format string, args ...any) error {
	return &Error{Pos: p.pos, Msg: fmt.Sprintf(format, args...)}
}

// ParseList parses s[start:end] as a bracketed call list "[c1, c2, ...]"
// (empty list allowed, trailing comma allowed, whitespace anywhere between
// tokens) and requires nothing but whitespace around it.
func ParseList(s string, start, end int) ([]Call, error) {
	p := &parser{s: s[:end], pos: start}
	p.ws()
	if !p.eat('[') {
		return nil, p.fail("expected '['")
	}
	var calls []Call
	for {
		p.ws()
		if p.eat(']') {
			break
		}
		if len(calls) > 0 {
			if !p.eat(',') {
				return nil, p.fail("expected ',' or ']' after a call")
			}
			p.ws()
			if p.eat(']') {
				break
			}
		}
		c, err := p.call()
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	p.ws()
	if p.pos != len(p.s) {
		return nil, p.fail("unexpected text after ']'")
	}
	return calls, nil
}

func (p *parser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) eat(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

// call parses name(kw=value, ...). Names may contain spaces inside (ToolACE
// has "Get Stock Price"), dots and any byte but ( ) [ ] { } = , ' " \ and
// control characters; surrounding spaces are not part of the name.
func (p *parser) call() (Call, error) {
	start := p.pos
	for p.pos < len(p.s) {
		b := p.s[p.pos]
		if b < 0x20 || b == 0x7f || strings.IndexByte(nameStop, b) >= 0 {
			break
		}
		p.pos++
	}
	name := strings.TrimRight(p.s[start:p.pos], " ")
	if name == "" {
		return Call{}, p.fail("expected a function name")
	}
	if !utf8.ValidString(name) {
		return Call{}, &Error{Pos: start, Msg: "function name is not valid UTF-8"}
	}
	if !p.eat('(') {
		return Call{}, p.fail("expected '(' after function name %q", name)
	}
	c := Call{Name: name, Span: Span{Start: start}}
	for {
		p.ws()
		if p.eat(')') {
			break
		}
		if len(c.Args) > 0 {
			if !p.eat(',') {
				return Call{}, p.fail("expected ',' or ')' after an argument")
			}
			p.ws()
			if p.eat(')') {
				break
			}
		}
		at := p.pos
		a, err := p.kwarg()
		if err != nil {
			return Call{}, err
		}
		for _, prev := range c.Args {
			if prev.Name == a.Name {
				return Call{}, &Error{Pos: at, Msg: fmt.Sprintf("keyword argument %q repeated", a.Name)}
			}
		}
		c.Args = append(c.Args, a)
	}
	c.Span.End = p.pos
	return c, nil
}

func (p *parser) kwarg() (Arg, error) {
	start := p.pos
	for p.pos < len(p.s) {
		b := p.s[p.pos]
		if b <= ' ' || b == 0x7f || strings.IndexByte(nameStop, b) >= 0 {
			break
		}
		p.pos++
	}
	name := p.s[start:p.pos]
	p.ws()
	if name == "" || !p.eat('=') {
		p.pos = start
		return Arg{}, p.fail("expected keyword argument name=value (positional arguments are not supported)")
	}
	if !utf8.ValidString(name) {
		return Arg{}, &Error{Pos: start, Msg: "argument name is not valid UTF-8"}
	}
	p.ws()
	v, sp, err := p.value()
	if err != nil {
		return Arg{}, err
	}
	return Arg{Name: name, Value: v, ValueSpan: sp}, nil
}

// value parses one literal and returns it with its span (string contents
// exclude the quotes and prefix).
func (p *parser) value() (any, Span, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, Span{}, p.fail("nesting deeper than %d", maxDepth)
	}
	start := p.pos
	b := p.peek()
	switch {
	case b == '"' || b == '\'':
		return p.str(false)
	case b == '[' || b == '(':
		v, err := p.seq()
		return v, Span{start, p.pos}, err
	case b == '{':
		v, err := p.dict()
		return v, Span{start, p.pos}, err
	case b == '-' || b == '+' || b == '.' || (b >= '0' && b <= '9'):
		v, err := p.number()
		return v, Span{start, p.pos}, err
	case isIdentByte(b):
		word := p.ident()
		switch word {
		case "True", "true":
			return true, Span{start, p.pos}, nil
		case "False", "false":
			return false, Span{start, p.pos}, nil
		case "None", "null":
			return nil, Span{start, p.pos}, nil
		}
		if len(word) <= 2 && (p.peek() == '"' || p.peek() == '\'') {
			lw := strings.ToLower(word)
			switch lw {
			case "r", "u":
				return p.str(lw == "r")
			}
			p.pos = start
			return nil, Span{}, p.fail("unsupported string prefix %q", word)
		}
		p.pos = start
		return nil, Span{}, p.fail("unquoted name %q is not a literal", word)
	case b == 0:
		return nil, Span{}, p.fail("expected a value, found end of text")
	}
	return nil, Span{}, p.fail("unexpected %q where a value belongs", b)
}

func isIdentByte(b byte) bool {
	return b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b >= 0x80
}

func (p *parser) ident() string {
	start := p.pos
	for p.pos < len(p.s) && isIdentByte(p.s[p.pos]) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *parser) seq() (any, error) {
	open := p.s[p.pos]
	closer := byte(']')
	if open == '(' {
		closer = ')'
	}
	p.pos++
	out := []any{}
	for {
		p.ws()
		if p.eat(closer) {
			return out, nil
		}
		if len(out) > 0 {
			if !p.eat(',') {
				return nil, p.fail("expected ',' or %q in a list", closer)
			}
			p.ws()
			if p.eat(closer) {
				return out, nil
			}
		}
		v, _, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

func (p *parser) dict() (any, error) {
	p.pos++
	out := map[string]any{}
	n := 0
	for {
		p.ws()
		if p.eat('}') {
			return out, nil
		}
		if n > 0 {
			if !p.eat(',') {
				return nil, p.fail("expected ',' or '}' in a dict")
			}
			p.ws()
			if p.eat('}') {
				return out, nil
			}
		}
		kpos := p.pos
		k, _, err := p.value()
		if err != nil {
			return nil, err
		}
		var key string
		switch kv := k.(type) {
		case string:
			key = kv
		case float64:
			key = strconv.FormatFloat(kv, 'g', -1, 64)
		default:
			p.pos = kpos
			return nil, p.fail("dict keys must be strings or numbers")
		}
		p.ws()
		if !p.eat(':') {
			return nil, p.fail("expected ':' after a dict key")
		}
		p.ws()
		v, _, err := p.value()
		if err != nil {
			return nil, err
		}
		out[key] = v
		n++
	}
}

// number parses an optionally signed Python int or float literal.
func (p *parser) number() (any, error) {
	start := p.pos
	neg := false
	for p.peek() == '-' || p.peek() == '+' {
		if p.s[p.pos] == '-' {
			neg = !neg
		}
		p.pos++
		p.ws()
	}
	lit := p.pos
	if p.peek() == '0' && p.pos+1 < len(p.s) && strings.IndexByte("xXoObB", p.s[p.pos+1]) >= 0 {
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[p.s[p.pos+1]|0x20]
		p.pos += 2
		ds := p.pos
		for p.pos < len(p.s) && (isHex(p.s[p.pos]) || p.s[p.pos] == '_') {
			p.pos++
		}
		u, err := strconv.ParseUint(strings.ReplaceAll(p.s[ds:p.pos], "_", ""), base, 64)
		if err != nil {
			p.pos = start
			return nil, p.fail("bad integer literal %q", p.s[lit:min(len(p.s), lit+32)])
		}
		f := float64(u)
		if neg {
			f = -f
		}
		return f, nil
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && (isDigit(p.s[p.pos]) || (p.s[p.pos] == '_' && n > 0)) {
			p.pos++
			n++
		}
		return n
	}
	n := digits()
	if p.eat('.') {
		n += digits()
	}
	if n == 0 {
		p.pos = start
		return nil, p.fail("expected a number")
	}
	if p.peek() == 'e' || p.peek() == 'E' {
		save := p.pos
		p.pos++
		if p.peek() == '+' || p.peek() == '-' {
			p.pos++
		}
		if digits() == 0 {
			p.pos = save
		}
	}
	if isIdentByte(p.peek()) {
		p.pos = start
		return nil, p.fail("bad number literal")
	}
	text := strings.ReplaceAll(p.s[lit:p.pos], "_", "")
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		p.pos = start
		return nil, p.fail("number %q out of range or malformed", text)
	}
	if neg {
		f = -f
	}
	return f, nil
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }
func isHex(b byte) bool {
	return isDigit(b) || (b|0x20 >= 'a' && b|0x20 <= 'f')
}

// str parses a quoted string at p.pos; raw means an r-prefix.
func (p *parser) str(raw bool) (any, Span, error) {
	q := p.s[p.pos]
	triple := strings.HasPrefix(p.s[p.pos:], strings.Repeat(string(q), 3))
	open := 1
	if triple {
		open = 3
	}
	p.pos += open
	cstart := p.pos
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return nil, Span{}, &Error{Pos: cstart - open, Msg: "unterminated string"}
		}
		c := p.s[p.pos]
		switch {
		case c == q && (!triple || strings.HasPrefix(p.s[p.pos:], strings.Repeat(string(q), 3))):
			end := p.pos
			p.pos += open
			return b.String(), Span{cstart, end}, nil
		case (c == '\n' || c == '\r') && !triple:
			return nil, Span{}, p.fail("newline inside a single-quoted string")
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return nil, Span{}, p.fail("unterminated string")
			}
			if raw {
				b.WriteString(p.s[p.pos : p.pos+2])
				p.pos += 2
				continue
			}
			if err := p.escape(&b); err != nil {
				return nil, Span{}, err
			}
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.pos:])
			b.WriteRune(r) // invalid UTF-8 becomes U+FFFD
			p.pos += size
		}
	}
}

// escape decodes one backslash escape at p.pos into b.
func (p *parser) escape(b *strings.Builder) error {
	e := p.s[p.pos+1]
	simple := map[byte]string{'\\': "\\", '\'': "'", '"': "\"", 'a': "\a", 'b': "\b",
		'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\n': ""}
	if s, ok := simple[e]; ok {
		b.WriteString(s)
		p.pos += 2
		return nil
	}
	hexRune := func(n int) error {
		if p.pos+2+n > len(p.s) {
			return p.fail("truncated \\%c escape", e)
		}
		v, err := strconv.ParseUint(p.s[p.pos+2:p.pos+2+n], 16, 32)
		if err != nil || v > utf8.MaxRune {
			return p.fail("bad \\%c escape", e)
		}
		b.WriteRune(rune(v)) // surrogates become U+FFFD
		p.pos += 2 + n
		return nil
	}
	switch {
	case e == 'x':
		return hexRune(2)
	case e == 'u':
		return hexRune(4)
	case e == 'U':
		return hexRune(8)
	case e >= '0' && e <= '7':
		n, v := 0, 0
		for n < 3 && p.pos+1+n < len(p.s) && p.s[p.pos+1+n] >= '0' && p.s[p.pos+1+n] <= '7' {
			v = v*8 + int(p.s[p.pos+1+n]-'0')
			n++
		}
		b.WriteRune(rune(v))
		p.pos += 1 + n
		return nil
	case e == 'N':
		return p.fail("\\N{...} escapes are not supported")
	}
	// Python keeps unknown escapes verbatim.
	b.WriteByte('\\')
	p.pos++
	return nil
}
