package pylit

import (
	"strconv"
	"strings"

	"github.com/argrl/argrl/data/internal/scan"
)

// number parses an optionally signed Python int or float literal and also
// returns it as a decimal literal: an int without a point or exponent, a
// float with its point or exponent (underscores removed).
func (p parser) number() (float64, string, error) {
	start := p.Pos
	neg := false
	for p.Peek() == '-' || p.Peek() == '+' {
		if p.Peek() == '-' {
			neg = !neg
		}
		p.Pos++
		p.SkipSpace()
	}
	lit := p.Pos
	if p.Peek() == '0' && p.Pos+1 < len(p.Src) && strings.IndexByte("xXoObB", p.Src[p.Pos+1]) >= 0 {
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[p.Src[p.Pos+1]|0x20]
		p.Pos += 2
		ds := p.Pos
		for !p.AtEnd() && (isHex(p.Peek()) || p.Peek() == '_') {
			p.Pos++
		}
		u, err := strconv.ParseUint(strings.ReplaceAll(p.Src[ds:p.Pos], "_", ""), base, 64)
		if err != nil {
			p.Pos = start
			return 0, "", p.Errorf("bad integer literal %q", p.Src[lit:min(len(p.Src), lit+32)])
		}
		f, text := float64(u), strconv.FormatUint(u, 10)
		if neg {
			f, text = -f, "-"+text
		}
		return f, text, nil
	}
	n := p.Digits(true)
	if p.Eat('.') {
		n += p.Digits(true)
	}
	if n == 0 {
		p.Pos = start
		return 0, "", p.Errorf("expected a number")
	}
	if p.Peek() == 'e' || p.Peek() == 'E' {
		save := p.Pos
		p.Pos++
		if p.Peek() == '+' || p.Peek() == '-' {
			p.Pos++
		}
		if p.Digits(true) == 0 {
			p.Pos = save
		}
	}
	if isIdentByte(p.Peek()) {
		p.Pos = start
		return 0, "", p.Errorf("bad number literal")
	}
	text := strings.ReplaceAll(p.Src[lit:p.Pos], "_", "")
	f, ok := scan.Float(text)
	if !ok {
		p.Pos = start
		return 0, "", p.Errorf("number %q out of range or malformed", text)
	}
	if neg {
		f, text = -f, "-"+text
	}
	return f, text, nil
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b|0x20 >= 'a' && b|0x20 <= 'f')
}

// The string literals: ' or " quoted, or tripled (which may span lines);
// raw (r-prefixed) ones keep their backslashes.
var quotes = func() map[string]*scan.Quote {
	m := map[string]*scan.Quote{}
	for _, q := range []string{"'", `"`} {
		for _, raw := range []bool{false, true} {
			esc, simple := escape, simpleEscapes
			if raw {
				esc, simple = rawEscape, nil
			}
			m[quoteKey(q, raw)] = &scan.Quote{Open: q, Close: q, Reject: rejectNewline, Simple: simple, Escape: esc, EOFAtOpen: true}
			m[quoteKey(q+q+q, raw)] = &scan.Quote{Open: q + q + q, Close: q + q + q, Simple: simple, Escape: esc, EOFAtOpen: true}
		}
	}
	return m
}()

func quoteKey(delim string, raw bool) string {
	if raw {
		return "r" + delim
	}
	return delim
}

func rejectNewline(c byte) string {
	if c == '\n' || c == '\r' {
		return "newline inside a single-quoted string"
	}
	return ""
}

// str parses a quoted string at p.Pos; raw means an r-prefix.
func (p parser) str(raw bool) (any, Span, error) {
	q := p.Src[p.Pos : p.Pos+1]
	if p.HasPrefix(q + q + q) {
		q += q + q
	}
	v, sp, err := p.Quoted(quotes[quoteKey(q, raw)])
	if err != nil {
		return nil, Span{}, err
	}
	return v, Span(sp), nil
}

// rawEscape keeps a backslash and the byte after it.
func rawEscape(s *scan.Scanner, b *strings.Builder) error {
	b.WriteString(s.Src[s.Pos : s.Pos+2])
	s.Pos += 2
	return nil
}

var simpleEscapes = map[byte]string{'\\': "\\", '\'': "'", '"': "\"", 'a': "\a", 'b': "\b",
	'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", 'v': "\v", '\n': ""}

// escape decodes a backslash escape at s.Pos that simpleEscapes does not
// list into b.
func escape(s *scan.Scanner, b *strings.Builder) error {
	e := s.Src[s.Pos+1]
	hexRune := func(n int) error {
		if s.Pos+2+n > len(s.Src) {
			return s.Errorf("truncated \\%c escape", e)
		}
		r, ok := s.Hex(s.Pos+2, n)
		if !ok {
			return s.Errorf("bad \\%c escape", e)
		}
		b.WriteRune(r) // surrogates become U+FFFD
		s.Pos += 2 + n
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
		for n < 3 && s.Pos+1+n < len(s.Src) && s.Src[s.Pos+1+n] >= '0' && s.Src[s.Pos+1+n] <= '7' {
			v = v*8 + int(s.Src[s.Pos+1+n]-'0')
			n++
		}
		b.WriteRune(rune(v))
		s.Pos += 1 + n
		return nil
	case e == 'N':
		return s.Errorf("\\N{...} escapes are not supported")
	}
	// Python keeps unknown escapes verbatim.
	b.WriteByte('\\')
	s.Pos++
	return nil
}
