// Package scan is the lexing core of argrl's hand-written parsers: the JSON
// reader of data/format and the Python-literal reader of
// data/internal/pylit. A Scanner is a cursor over a text that keeps byte
// offsets, so that the parsers can give the span of every value (the spans
// drive β token weighting, docs/contracts.md §2 and §5). It reads blanks,
// bounds nesting, walks comma-separated sequences and decodes quoted
// strings; the parsers add their grammars' escapes, numbers and literals.
// Nothing here panics, on any input.
package scan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Span is a byte range [Start, End) of the text.
type Span struct{ Start, End int }

// Error is a syntax error at a byte offset.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("at byte %d: %s", e.Pos, e.Msg) }

// MaxDepth bounds nesting so that hostile input cannot exhaust the stack.
const MaxDepth = 100

// Scanner reads Src from Pos.
type Scanner struct {
	Src   string // the text, cut at the end of the scanned range
	Pos   int    // offset of the next byte to read
	depth int
}

// New scans s[start:end]; offsets are those of s.
func New(s string, start, end int) *Scanner { return &Scanner{Src: s[:end], Pos: start} }

// Errorf is a syntax error at Pos.
func (s *Scanner) Errorf(format string, args ...any) error {
	return s.ErrorAt(s.Pos, format, args...)
}

// ErrorAt is a syntax error at pos.
func (s *Scanner) ErrorAt(pos int, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// AtEnd reports whether the whole text has been read.
func (s *Scanner) AtEnd() bool { return s.Pos >= len(s.Src) }

// Peek returns the byte at Pos, 0 at the end.
func (s *Scanner) Peek() byte {
	if s.Pos < len(s.Src) {
		return s.Src[s.Pos]
	}
	return 0
}

// Eat consumes c if it is the next byte.
func (s *Scanner) Eat(c byte) bool {
	if s.Pos < len(s.Src) && s.Src[s.Pos] == c {
		s.Pos++
		return true
	}
	return false
}

// HasPrefix reports whether the unread text starts with p.
func (s *Scanner) HasPrefix(p string) bool { return strings.HasPrefix(s.Src[s.Pos:], p) }

// SkipSpace consumes blanks: space, tab, newline, carriage return.
func (s *Scanner) SkipSpace() {
	for s.Pos < len(s.Src) {
		switch s.Src[s.Pos] {
		case ' ', '\t', '\n', '\r':
			s.Pos++
		default:
			return
		}
	}
}

// Enter opens one nesting level and fails beyond MaxDepth. Every Enter,
// failed or not, is paired with a Leave.
func (s *Scanner) Enter() error {
	s.depth++
	if s.depth > MaxDepth {
		return s.Errorf("nesting deeper than %d", MaxDepth)
	}
	return nil
}

// Leave closes the level Enter opened.
func (s *Scanner) Leave() { s.depth-- }

// Seq reads a comma-separated sequence whose opening bracket is already
// read, up to and including close. Blanks may stand around every token;
// item reads one item at Pos. trailing allows a comma before close. sep is
// the error message when an item is followed by neither a comma nor close.
func (s *Scanner) Seq(close byte, trailing bool, sep string, item func() error) error {
	s.SkipSpace()
	if s.Eat(close) {
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		s.SkipSpace()
		if s.Eat(close) {
			return nil
		}
		if !s.Eat(',') {
			return &Error{Pos: s.Pos, Msg: sep}
		}
		s.SkipSpace()
		if trailing && s.Eat(close) {
			return nil
		}
	}
}

// Digits consumes decimal digits and returns how many bytes it read. With
// underscores, an underscore after the first byte counts as a digit too.
func (s *Scanner) Digits(underscores bool) int {
	n := 0
	for s.Pos < len(s.Src) {
		c := s.Src[s.Pos]
		if !(c >= '0' && c <= '9') && !(underscores && c == '_' && n > 0) {
			break
		}
		s.Pos++
		n++
	}
	return n
}

// Hex parses the n hexadecimal digits at offset at as a code point (at
// most utf8.MaxRune; surrogates pass).
func (s *Scanner) Hex(at, n int) (rune, bool) {
	if at+n > len(s.Src) {
		return 0, false
	}
	v, err := strconv.ParseUint(s.Src[at:at+n], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, false
	}
	return rune(v), true
}

// Float parses a decimal literal as a finite float64.
func Float(text string) (float64, bool) {
	f, err := strconv.ParseFloat(text, 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// Quote says how Quoted reads one kind of string literal.
type Quote struct {
	Open, Close string // the delimiters
	// Reject, if set, returns the error message for a byte the body may
	// not hold as it is ("" when it may).
	Reject func(c byte) string
	// Simple maps the byte after a backslash to what the two-byte escape
	// stands for.
	Simple map[byte]string
	// Escape decodes any other escape at Pos (a backslash and at least one
	// more byte) into b and moves past it.
	Escape func(s *Scanner, b *strings.Builder) error
	// EOFAtOpen places the error for a string that runs to the end of the
	// text at its opening delimiter (else at the end).
	EOFAtOpen bool
}

// Quoted reads the string literal whose opening delimiter is at Pos and
// returns its decoded value and the span of its body (between the
// delimiters). Invalid UTF-8 in the body becomes U+FFFD.
func (s *Scanner) Quoted(q *Quote) (string, Span, error) {
	open := s.Pos
	s.Pos += len(q.Open)
	start := s.Pos
	var b strings.Builder
	for {
		if s.Pos >= len(s.Src) {
			if q.EOFAtOpen {
				return "", Span{}, s.ErrorAt(open, "unterminated string")
			}
			return "", Span{}, s.Errorf("unterminated string")
		}
		if s.HasPrefix(q.Close) {
			end := s.Pos
			s.Pos += len(q.Close)
			return b.String(), Span{start, end}, nil
		}
		c := s.Src[s.Pos]
		if q.Reject != nil {
			if msg := q.Reject(c); msg != "" {
				return "", Span{}, &Error{Pos: s.Pos, Msg: msg}
			}
		}
		if c != '\\' {
			r, size := utf8.DecodeRuneInString(s.Src[s.Pos:])
			b.WriteRune(r)
			s.Pos += size
			continue
		}
		if s.Pos+1 >= len(s.Src) {
			return "", Span{}, s.Errorf("unterminated string")
		}
		if r, ok := q.Simple[s.Src[s.Pos+1]]; ok {
			b.WriteString(r)
			s.Pos += 2
			continue
		}
		if err := q.Escape(s, &b); err != nil {
			return "", Span{}, err
		}
	}
}
