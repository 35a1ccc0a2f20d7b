package bfcl

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// Python's string semantics, where the checker's results depend on them.

// isPySpace is Python's str.isspace for one character: Unicode White_Space
// plus the information separators U+001C..U+001F.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// pyStrip is Python's s.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// numStrip removes the whitespace int() and float() ignore around a
// number: Unicode White_Space, which lacks U+001C..U+001F.
func numStrip(s string) string { return strings.TrimFunc(s, unicode.IsSpace) }

// inner is Python's s[1:-1]: s without its first and last character.
func inner(s string) string {
	rs := []rune(s)
	if len(rs) <= 2 {
		return ""
	}
	return string(rs[1 : len(rs)-1])
}

// standardizeRemoved are the characters the checker's standardize_string
// deletes before lower-casing.
const standardizeRemoved = " ,./-_*^"

// standardize is the checker's string normalization: delete spaces and
// ,./-_*^, lower-case (Python's str.lower), then turn ' into ".
func standardize(s string) string {
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(standardizeRemoved, r) {
			return -1
		}
		return r
	}, s)
	return strings.ReplaceAll(pyLower(s), "'", `"`)
}

// pyLower is Python's str.lower: Unicode lower-case mapping, with the full
// mapping of U+0130 (İ → i̇) and the Final_Sigma rule for U+03A3.
func pyLower(s string) string {
	if isASCIIish(s) {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	for i, r := range rs {
		switch r {
		case 0x130:
			b.WriteString("i\u0307")
		case 0x3a3:
			if finalSigma(rs, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func isASCIIish(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// finalSigma tells whether the Σ at rs[i] ends a word: a cased letter
// before it and none after it, skipping case-ignorable characters.
func finalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && caseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !cased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && caseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !cased(rs[j])
}

func cased(r rune) bool {
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// wordBreakIgnorable are the Word_Break MidLetter, MidNumLet and
// Single_Quote characters, which Unicode counts as case-ignorable.
const wordBreakIgnorable = ":\u00b7\u0387\u055f\u05f4\u2027\ufe13\ufe55\uff1a.\u2018\u2019\u2024\ufe52\uff07\uff0e'"

func caseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) ||
		strings.ContainsRune(wordBreakIgnorable, r)
}

// digitValue is the value of a Unicode decimal digit (category Nd): every
// Nd run is 0..9 in order, so it is the distance to the run's start mod 10.
func digitValue(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	k := 0
	for unicode.IsDigit(r - rune(k) - 1) {
		k++
	}
	return k % 10
}

// asciiDigits replaces every Unicode decimal digit by its ASCII digit, as
// Python's int() and float() read them.
func asciiDigits(s string) string {
	if isASCIIish(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return rune('0' + digitValue(r))
		}
		return r
	}, s)
}

// digitPart checks Python's digitpart: digits, single underscores between.
func digitPart(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '_' {
			return false
		}
	}
	return true
}

func cutSign(s string) (string, string) {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		return s[:1], s[1:]
	}
	return "", s
}

// pyInt is Python's int(s) for a str: surrounding whitespace, a sign,
// decimal digits (any script) with single underscores between them.
func pyInt(s string) (*big.Int, bool) {
	sign, body := cutSign(asciiDigits(numStrip(s)))
	if !digitPart(body) {
		return nil, false
	}
	i, ok := new(big.Int).SetString(sign+strings.ReplaceAll(body, "_", ""), 10)
	return i, ok
}

// pyFloat is Python's float(s) for a str: surrounding whitespace, a sign,
// inf/infinity/nan in any case, or a decimal literal with an optional
// exponent and underscores between digits. Out-of-range values become ±inf
// or 0 as in Python.
func pyFloat(s string) (float64, bool) {
	sign, body := cutSign(asciiDigits(numStrip(s)))
	neg := sign == "-"
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	mant, exp := body, ""
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		mant, exp = body[:i], body[i+1:]
		_, e := cutSign(exp)
		if !digitPart(e) {
			return 0, false
		}
	}
	whole, frac, dot := strings.Cut(mant, ".")
	switch {
	case !dot && !digitPart(whole):
		return 0, false
	case dot && whole == "" && !digitPart(frac):
		return 0, false
	case dot && whole != "" && (!digitPart(whole) || (frac != "" && !digitPart(frac))):
		return 0, false
	}
	f, err := strconv.ParseFloat(sign+strings.ReplaceAll(body, "_", ""), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// pyFloatRepr is Python's repr(float): the shortest round-tripping digits,
// in positional form when the decimal exponent is in [-4, 16), else in
// exponent form with a signed exponent of at least two digits.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	var out string
	if decpt := exp + 1; decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
	} else {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out = m + "e" + sign + strconv.Itoa(exp/10) + strconv.Itoa(exp%10)
		if exp >= 100 {
			out = m + "e" + sign + strconv.Itoa(exp)
		}
	}
	if neg {
		out = "-" + out
	}
	return out
}
