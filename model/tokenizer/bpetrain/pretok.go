package bpetrain

// Pre-tokenization and the byte-level alphabet, written independently of
// model/tokenizer so each checks the other in tests.
//
// The split pattern is Qwen2's (QwenPattern), applied leftmost-first as
// Oniguruma does:
//
//	1 (?i:'s|'t|'re|'ve|'m|'ll|'d)
//	2 [^\r\n\p{L}\p{N}]?\p{L}+
//	3 \p{N}
//	4  ?[^\s\p{L}\p{N}]+[\r\n]*
//	5 \s*[\r\n]+
//	6 \s+(?!\S)
//	7 \s+
//
// Alternatives 5-7 backtrack: 5 ends after the last newline of a whitespace
// run; 6 takes the whole run at the end of the text, otherwise the run minus
// its last character (if that leaves one); 7 takes the run.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// QwenPattern is the Split regex of Qwen2/2.5/3's tokenizer.json, written
// verbatim into the files this package produces.
const QwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

type class uint8

const (
	cOther class = iota
	cLetter
	cDigit
	cSpace   // \s other than \r \n
	cNewline // \r or \n
)

func classify(r rune) class {
	switch {
	case r == '\r' || r == '\n':
		return cNewline
	case unicode.IsLetter(r):
		return cLetter
	case unicode.IsNumber(r):
		return cDigit
	case unicode.IsSpace(r):
		return cSpace
	}
	return cOther
}

func runeAt(s string, i int) (class, int) {
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n <= 1 {
		return cOther, 1
	}
	return classify(r), n
}

// pretokenize splits s into the pieces of QwenPattern; the pieces
// concatenate back to s.
func pretokenize(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := pieceEnd(s, i)
		out = append(out, s[i:j])
		i = j
	}
	return out
}

func isContraction(s string, i int) int {
	if s[i] != '\'' {
		return 0
	}
	rest := strings.ToLower(s[i+1 : min(len(s), i+3)])
	switch {
	case strings.HasPrefix(rest, "re"), strings.HasPrefix(rest, "ve"), strings.HasPrefix(rest, "ll"):
		return 3
	case len(rest) > 0 && strings.ContainsRune("stmd", rune(rest[0])):
		return 2
	}
	return 0
}

func skipLetters(s string, i int) int {
	for i < len(s) {
		c, n := runeAt(s, i)
		if c != cLetter {
			break
		}
		i += n
	}
	return i
}

func pieceEnd(s string, i int) int {
	if n := isContraction(s, i); n > 0 {
		return i + n
	}
	c, n := runeAt(s, i)
	switch c {
	case cLetter:
		return skipLetters(s, i+n)
	case cDigit:
		return i + n
	}
	// 2 with a leading non-letter (not a newline).
	if (c == cOther || c == cSpace) && i+n < len(s) {
		if c2, n2 := runeAt(s, i+n); c2 == cLetter {
			return skipLetters(s, i+n+n2)
		}
	}
	// 4: optional space, symbols, newlines.
	start := -1
	if c == cOther {
		start = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if c2, _ := runeAt(s, i+1); c2 == cOther {
			start = i + 1
		}
	}
	if start >= 0 {
		j := start
		for j < len(s) {
			c2, n2 := runeAt(s, j)
			if c2 != cOther {
				break
			}
			j += n2
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// 5-7 on the whitespace run starting at i.
	end, afterNL, lastStart := i, -1, i
	for end < len(s) {
		c2, n2 := runeAt(s, end)
		if c2 != cSpace && c2 != cNewline {
			break
		}
		if c2 == cNewline {
			afterNL = end + n2
		}
		lastStart = end
		end += n2
	}
	switch {
	case afterNL > 0:
		return afterNL
	case end == len(s) || lastStart == i:
		return end
	}
	return lastStart
}

// byteRunes is GPT-2's byte-to-character table used by every byte-level BPE:
// printable bytes map to themselves, the others to U+0100 onwards. byteOrder
// lists the bytes in vocabulary order (ids 0..255).
var byteRunes, byteOrder = func() (m [256]rune, order [256]byte) {
	k := 0
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	for b := 0; b < 256; b++ {
		if printable(b) {
			m[b] = rune(b)
			order[k] = byte(b)
			k++
		}
	}
	extra := 0
	for b := 0; b < 256; b++ {
		if !printable(b) {
			m[b] = rune(256 + extra)
			extra++
			order[k] = byte(b)
			k++
		}
	}
	return m, order
}()

// toByteLevel maps each byte of s to its byte-level character.
func toByteLevel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteRunes[s[i]])
	}
	return b.String()
}
