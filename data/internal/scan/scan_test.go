package scan

import (
	"errors"
	"strings"
	"testing"
)

// list reads "[a, b, ...]" of single letters with Seq.
func list(text string, trailing bool) ([]string, error) {
	s := New(text, 0, len(text))
	if !s.Eat('[') {
		return nil, s.Errorf("expected '['")
	}
	var out []string
	err := s.Seq(']', trailing, "expected ',' or ']'", func() error {
		c := s.Peek()
		if c < 'a' || c > 'z' {
			return s.Errorf("expected a letter")
		}
		s.Pos++
		out = append(out, string(c))
		return nil
	})
	return out, err
}

func TestSeq(t *testing.T) {
	cases := []struct {
		text     string
		trailing bool
		want     string // items joined, or the error
	}{
		{"[]", false, ""},
		{"[ \n]", false, ""},
		{"[a]", false, "a"},
		{"[ a ,\tb , c ]", false, "a b c"},
		{"[a,]", false, "at byte 3: expected a letter"},
		{"[a,]", true, "a"},
		{"[a, ]", true, "a"},
		{"[,]", true, "at byte 1: expected a letter"},
		{"[a b]", false, "at byte 3: expected ',' or ']'"},
		{"[a", false, "at byte 2: expected ',' or ']'"},
		{"[a,", true, "at byte 3: expected a letter"},
	}
	for _, c := range cases {
		got, err := list(c.text, c.trailing)
		s := strings.Join(got, " ")
		if err != nil {
			s = err.Error()
		}
		if s != c.want {
			t.Errorf("list(%q, trailing=%v) = %q, want %q", c.text, c.trailing, s, c.want)
		}
	}
}

// escapeN decodes \n and rejects every other escape.
func escapeN(s *Scanner, b *strings.Builder) error {
	if s.Src[s.Pos+1] != 'n' {
		return s.Errorf("bad escape")
	}
	b.WriteByte('\n')
	s.Pos += 2
	return nil
}

func TestQuoted(t *testing.T) {
	single := &Quote{Open: "'", Close: "'", Escape: escapeN, Simple: map[byte]string{'t': "\t", '\n': ""}, Reject: func(c byte) string {
		if c == '\n' {
			return "newline"
		}
		return ""
	}}
	triple := &Quote{Open: "'''", Close: "'''", Escape: escapeN, EOFAtOpen: true}
	cases := []struct {
		q          *Quote
		text       string
		start      int
		val        string
		span       Span
		end        int    // Pos after the literal
		wantErrPos int    // -1: no error
		wantErrMsg string // with wantErrPos
	}{
		{single, `x'ab\nc'y`, 1, "ab\nc", Span{2, 7}, 8, -1, ""},
		{single, `''`, 0, "", Span{1, 1}, 2, -1, ""},
		{single, "'\\t\\\nx\\n'", 0, "\tx\n", Span{1, 8}, 9, -1, ""},
		{single, "'a\xffb'", 0, "a\ufffdb", Span{1, 4}, 5, -1, ""},
		{single, "'a\nb'", 0, "", Span{}, 0, 2, "newline"},
		{single, `'ab`, 0, "", Span{}, 0, 3, "unterminated string"},
		{single, `'ab\`, 0, "", Span{}, 0, 3, "unterminated string"},
		{single, `'a\qb'`, 0, "", Span{}, 0, 2, "bad escape"},
		{triple, "'''a'b\n'''", 0, "a'b\n", Span{3, 7}, 10, -1, ""},
		{triple, "  '''ab''", 2, "", Span{}, 0, 2, "unterminated string"},
	}
	for _, c := range cases {
		s := New(c.text, c.start, len(c.text))
		v, sp, err := s.Quoted(c.q)
		if c.wantErrPos >= 0 {
			var e *Error
			if !errors.As(err, &e) || e.Pos != c.wantErrPos || e.Msg != c.wantErrMsg {
				t.Errorf("Quoted(%q): error %v, want %q at byte %d", c.text, err, c.wantErrMsg, c.wantErrPos)
			}
			continue
		}
		if err != nil || v != c.val || sp != c.span || s.Pos != c.end {
			t.Errorf("Quoted(%q) = %q %v (Pos %d), %v; want %q %v (Pos %d)", c.text, v, sp, s.Pos, err, c.val, c.span, c.end)
		}
	}
}

func TestDigitsHexFloat(t *testing.T) {
	s := New("12_3_x", 0, 6)
	if n := s.Digits(true); n != 5 || s.Pos != 5 {
		t.Errorf("Digits(true) on 12_3_x read %d bytes to %d, want 5", n, s.Pos)
	}
	s = New("12_3", 0, 4)
	if n := s.Digits(false); n != 2 {
		t.Errorf("Digits(false) on 12_3 read %d bytes, want 2", n)
	}
	s = New("_1", 0, 2)
	if n := s.Digits(true); n != 0 {
		t.Errorf("Digits(true) on _1 read %d bytes, want 0 (no leading underscore)", n)
	}
	h := New(`\u00e9 \U00110000`, 0, 17)
	if r, ok := h.Hex(2, 4); !ok || r != 'é' {
		t.Errorf("Hex(00e9) = %q, %v", r, ok)
	}
	if _, ok := h.Hex(9, 8); ok {
		t.Error("Hex accepted 00110000, beyond utf8.MaxRune")
	}
	if _, ok := h.Hex(15, 4); ok {
		t.Error("Hex read past the end of the text")
	}
	if _, ok := New("+1ab", 0, 4).Hex(0, 4); ok {
		t.Error("Hex accepted a sign")
	}
	if f, ok := Float("1.5e3"); !ok || f != 1500 {
		t.Errorf("Float(1.5e3) = %v, %v", f, ok)
	}
	if _, ok := Float("1e999"); ok {
		t.Error("Float accepted an infinite value")
	}
}

func TestEnterBoundsDepth(t *testing.T) {
	s := New("", 0, 0)
	var nest func(int) error
	nest = func(d int) error {
		err := s.Enter()
		defer s.Leave()
		if err != nil || d == 0 {
			return err
		}
		return nest(d - 1)
	}
	if err := nest(MaxDepth - 1); err != nil {
		t.Fatalf("%d levels: %v", MaxDepth, err)
	}
	if err := nest(MaxDepth); err == nil || !strings.Contains(err.Error(), "nesting deeper than 100") {
		t.Fatalf("%d levels: %v, want a nesting error", MaxDepth+1, err)
	}
	if err := nest(MaxDepth - 1); err != nil {
		t.Fatalf("after a failed Enter, Leave did not restore the depth: %v", err)
	}
}

func TestNewCutsAtEnd(t *testing.T) {
	s := New("ab  cd", 1, 4)
	if s.Peek() != 'b' || s.Src != "ab  " {
		t.Fatalf("New: Src %q, Peek %q", s.Src, s.Peek())
	}
	s.Pos++
	s.SkipSpace()
	if !s.AtEnd() || s.Peek() != 0 || s.Eat('c') {
		t.Errorf("scanner read past the end of its range: Pos %d", s.Pos)
	}
	if s.HasPrefix("c") {
		t.Error("HasPrefix saw text past the end")
	}
}
