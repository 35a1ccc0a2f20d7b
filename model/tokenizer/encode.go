package tokenizer

import (
	"sort"

	"golang.org/x/text/unicode/norm"
)

// Encode returns the ids of text and, per id, the byte range [start, end) of
// text it came from. With addSpecial the post-processor's tokens (Llama-3.1:
// <|begin_of_text|>) are added, with empty ranges at the text's ends. Added
// tokens written in the text (<|im_start|>, ...) are always recognized, as in
// Hugging Face. Offsets tile text exactly unless the NFC normalizer changes it;
// then a token inside a rewritten stretch gets that whole stretch.
func (t *Tokenizer) Encode(text string, addSpecial bool) (ids []int32, offsets [][2]int) {
	n := len(text)/3 + 4
	ids, offsets = make([]int32, 0, n), make([][2]int, 0, n)
	if addSpecial {
		for _, id := range t.prefix {
			ids, offsets = append(ids, id), append(offsets, [2]int{0, 0})
		}
	}
	var buf [16]span
	for _, sp := range splitAdded(t.rawTrie, t.added, text, buf[:0]) {
		if sp.tok >= 0 {
			ids, offsets = append(ids, t.added[sp.tok].id), append(offsets, [2]int{sp.start, sp.end})
			continue
		}
		seg := text[sp.start:sp.end]
		if !t.nfc || norm.NFC.IsNormalString(seg) {
			ids, offsets = t.encodeNormal(seg, alignment{base: sp.start}, ids, offsets)
			continue
		}
		normed, al := nfcAlign(seg, sp.start)
		ids, offsets = t.encodeNormal(normed, al, ids, offsets)
	}
	if addSpecial {
		for _, id := range t.suffix {
			ids, offsets = append(ids, id), append(offsets, [2]int{len(text), len(text)})
		}
	}
	return ids, offsets
}

// encodeNormal encodes normalized text s: normalized added tokens, then the
// split pattern and BPE. al maps offsets in s back to the input.
func (t *Tokenizer) encodeNormal(s string, al alignment, ids []int32, offsets [][2]int) ([]int32, [][2]int) {
	var buf [8]span
	spans := append(buf[:0], span{0, len(s), -1})
	if len(t.normTrie.nodes) > 1 {
		spans = splitAdded(t.normTrie, t.added, s, buf[:0])
	}
	for _, sp := range spans {
		if sp.tok >= 0 {
			ids, offsets = append(ids, t.added[sp.tok].id), append(offsets, al.span(sp.start, sp.end))
			continue
		}
		for i := sp.start; i < sp.end; {
			j := i + t.split.next(s[i:sp.end], 0)
			k := len(ids)
			ids = t.model.word(s[i:j], ids)
			pos := i
			for _, id := range ids[k:] {
				end := pos + len(t.pieces[id])
				offsets = append(offsets, al.span(pos, end))
				pos = end
			}
			i = j
		}
	}
	return ids, offsets
}

// alignment maps byte offsets of normalized text to the input. With no
// chunks it is the identity shifted by base.
type alignment struct {
	base   int
	chunks []chunk
}

// chunk: normalized bytes [out, outEnd) came from input bytes [in, inEnd).
// same marks a chunk the normalizer left unchanged, mapped byte for byte.
type chunk struct {
	out, outEnd, in, inEnd int
	same                   bool
}

func (a alignment) span(start, end int) [2]int {
	if a.chunks == nil {
		return [2]int{a.base + start, a.base + end}
	}
	find := func(p int) chunk {
		i := sort.Search(len(a.chunks), func(i int) bool { return a.chunks[i].outEnd > p })
		return a.chunks[min(i, len(a.chunks)-1)]
	}
	cs, ce := find(start), find(end-1)
	s, e := cs.in, ce.inEnd
	if cs.same {
		s = cs.in + start - cs.out
	}
	if ce.same {
		e = ce.in + end - ce.out
	}
	return [2]int{a.base + s, a.base + e}
}

// nfcAlign normalizes s to NFC, recording which input bytes each stretch of
// output came from.
func nfcAlign(s string, base int) (string, alignment) {
	var it norm.Iter
	it.InitString(norm.NFC, s)
	out := make([]byte, 0, len(s)+8)
	al := alignment{base: base, chunks: []chunk{}}
	for !it.Done() {
		in := it.Pos()
		seg := it.Next()
		inEnd := it.Pos()
		c := chunk{out: len(out), in: in, inEnd: inEnd, same: string(seg) == s[in:inEnd]}
		out = append(out, seg...)
		c.outEnd = len(out)
		if c.outEnd > c.out {
			al.chunks = append(al.chunks, c)
		} else if len(al.chunks) > 0 { // input that vanished joins the previous stretch
			al.chunks[len(al.chunks)-1].inEnd = inEnd
			al.chunks[len(al.chunks)-1].same = false
		}
	}
	return string(out), al
}
