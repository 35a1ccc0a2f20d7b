package tokenizer

// The pre-tokenizer of Qwen2/2.5/3 and Llama-3, written as a scanner.
//
// Both files split text with this regex (Llama-3 reads \p{N}{1,3} where Qwen
// reads \p{N}), applied leftmost-first like Oniguruma, the engine behind
// Hugging Face tokenizers:
//
//	1 (?i:'s|'t|'re|'ve|'m|'ll|'d)
//	2 [^\r\n\p{L}\p{N}]?\p{L}+
//	3 \p{N}            (Llama-3: \p{N}{1,3})
//	4  ?[^\s\p{L}\p{N}]+[\r\n]*
//	5 \s*[\r\n]+
//	6 \s+(?!\S)
//	7 \s+
//
// Go's regexp lacks the lookahead of 6, so next() tries the alternatives in
// order at each position and resolves the backtracking by hand:
//   - 5 matches up to and including the last \r or \n of the whitespace run;
//   - 6 matches the whole run at the end of the text, else the run minus its
//     last character when that leaves at least one;
//   - 7 matches the whole run.
//
// Every character falls in one class below, and every class starts some
// alternative, so the pieces tile the text with no gaps.
//
// \s is Unicode White_Space as in Oniguruma (U+0085 yes, U+FEFF no); \p{L} and
// \p{N} come from Go's unicode tables. The case-insensitive contractions are
// matched on ASCII letters only, as transformers.js does.

import (
	"unicode"
	"unicode/utf8"
)

const (
	clsOther   = iota // [^\s\p{L}\p{N}]: punctuation, symbols, marks, invalid bytes
	clsLetter         // \p{L}
	clsNumber         // \p{N}
	clsSpace          // \s except \r and \n
	clsNewline        // \r or \n
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		switch {
		case r == '\r' || r == '\n':
			t[r] = clsNewline
		case r == ' ' || (r >= '\t' && r <= '\f'):
			t[r] = clsSpace
		case r >= '0' && r <= '9':
			t[r] = clsNumber
		case (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
			t[r] = clsLetter
		default:
			t[r] = clsOther
		}
	}
	return t
}()

// classAt returns the class of the rune at s[i:] and its byte length.
func classAt(s string, i int) (cls uint8, size int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return clsOther, 1
	case unicode.IsLetter(r):
		return clsLetter, size
	case unicode.IsNumber(r):
		return clsNumber, size
	case unicode.IsSpace(r): // Unicode White_Space outside Latin-1, incl. U+0085, U+00A0
		return clsSpace, size
	}
	return clsOther, size
}

// splitter holds the one difference between the two patterns.
type splitter struct {
	maxDigits int // 1 for Qwen, 3 for Llama-3
}

// split appends the end offset of every piece of s to ends.
func (p splitter) split(s string, ends []int) []int {
	for i := 0; i < len(s); {
		i = p.next(s, i)
		ends = append(ends, i)
	}
	return ends
}

// contraction returns the length of 's 't 're 've 'm 'll 'd (any case) at s[i:].
func contraction(s string, i int) int {
	lower := func(k int) byte {
		if k >= len(s) {
			return 0
		}
		return s[k] | 0x20 // ASCII fold; non-letters never match below
	}
	switch lower(i + 1) {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return 3
		}
	}
	return 0
}

// letters returns the end of the run of letters starting at i.
func letters(s string, i int) int {
	for i < len(s) {
		c, n := classAt(s, i)
		if c != clsLetter {
			break
		}
		i += n
	}
	return i
}

// next returns the end of the piece that starts at i (i < len(s)).
func (p splitter) next(s string, i int) int {
	c0, n0 := classAt(s, i)
	// 1: contractions.
	if s[i] == '\'' {
		if n := contraction(s, i); n > 0 {
			return i + n
		}
	}
	// 2: an optional non-letter, non-digit, non-newline, then letters.
	if c0 == clsLetter {
		return letters(s, i+n0)
	}
	if (c0 == clsOther || c0 == clsSpace) && i+n0 < len(s) {
		if c1, n1 := classAt(s, i+n0); c1 == clsLetter {
			return letters(s, i+n0+n1)
		}
	}
	// 3: digits.
	if c0 == clsNumber {
		j := i + n0
		for k := 1; k < p.maxDigits && j < len(s); k++ {
			c, n := classAt(s, j)
			if c != clsNumber {
				break
			}
			j += n
		}
		return j
	}
	// 4: an optional space, symbols, then newlines.
	j := -1
	if c0 == clsOther {
		j = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if c1, _ := classAt(s, i+1); c1 == clsOther {
			j = i + 1
		}
	}
	if j >= 0 {
		for j < len(s) {
			c, n := classAt(s, j)
			if c != clsOther {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// 5-7: c0 is whitespace. Scan the run, remembering the last newline
	// and the start of the last character.
	end, lastNL, last := i, -1, i
	for end < len(s) {
		c, n := classAt(s, end)
		if c != clsSpace && c != clsNewline {
			break
		}
		if c == clsNewline {
			lastNL = end + n
		}
		last = end
		end += n
	}
	switch {
	case lastNL > 0: // 5
		return lastNL
	case end == len(s): // 6 at the end of the text
		return end
	case last > i: // 6: leave the last space to the next piece
		return last
	}
	return end // 7
}
