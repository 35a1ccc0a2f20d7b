package tokenizer

import "unicode/utf8"

// Decode returns the text of ids, as Hugging Face's ByteLevel decoder does:
// the tokens' bytes joined, then each ill-formed UTF-8 sequence (a token
// boundary may split a character) replaced by U+FFFD. With skipSpecial the
// special added tokens are left out. Ids outside the vocabulary are skipped.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) string {
	raw := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		raw = append(raw, t.bytesOf(id, skipSpecial)...)
	}
	s, _ := lossy(raw, nil)
	return s
}

// DecodeOffsets returns Decode's text and, per id, the byte range of that
// text the token produced. A character split over several tokens is split
// the same way (each token keeps its own bytes); a U+FFFD that replaces an
// ill-formed sequence belongs to the token holding its last byte. Skipped
// tokens get an empty range. The ranges tile the text in order.
func (t *Tokenizer) DecodeOffsets(ids []int32, skipSpecial bool) (string, [][2]int) {
	raw := make([]byte, 0, 4*len(ids))
	ends := make([]int, len(ids)) // raw end offset per token
	for i, id := range ids {
		raw = append(raw, t.bytesOf(id, skipSpecial)...)
		ends[i] = len(raw)
	}
	m := make([]int, len(raw)+1) // raw offset -> text offset
	s, m := lossy(raw, m)
	offs := make([][2]int, len(ids))
	prev := 0
	for i, e := range ends {
		offs[i] = [2]int{m[prev], m[e]}
		prev = e
	}
	return s, offs
}

func (t *Tokenizer) bytesOf(id int32, skipSpecial bool) []byte {
	if i, ok := t.addedByID[id]; ok {
		if skipSpecial && t.added[i].special {
			return nil
		}
		return t.added[i].decoded
	}
	if id >= 0 && int(id) < len(t.pieces) {
		return t.pieces[id]
	}
	return nil
}

// lossy converts raw to valid UTF-8, replacing each maximal ill-formed
// subpart with U+FFFD (the Unicode "substitution of maximal subparts" rule
// that Rust's from_utf8_lossy and JS's TextDecoder follow). When m is not nil
// it is filled with the text offset of each raw offset; offsets inside a
// replaced subpart map to the start of its U+FFFD.
func lossy(raw []byte, m []int) (string, []int) {
	if m == nil && utf8.Valid(raw) {
		return string(raw), nil
	}
	out := make([]byte, 0, len(raw)+8)
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRune(raw[i:])
		if r != utf8.RuneError || n > 1 {
			for k := 0; k < n; k++ {
				if m != nil {
					m[i+k] = len(out) + k
				}
			}
			out = append(out, raw[i:i+n]...)
			i += n
			continue
		}
		n = maximalSubpart(raw[i:])
		for k := 0; k < n; k++ {
			if m != nil {
				m[i+k] = len(out)
			}
		}
		out = append(out, "\uFFFD"...)
		i += n
	}
	if m != nil {
		m[len(raw)] = len(out)
	}
	return string(out), m
}

// maximalSubpart returns the length (>= 1) of the ill-formed sequence at the
// start of b: the longest prefix that could begin a well-formed character.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the second byte
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for k := 1; k <= need && k < len(b); k++ {
		if b[k] < lo || b[k] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}
