// Package bpetrain trains a small byte-level BPE tokenizer and writes it in
// Hugging Face's format (tokenizer.json + tokenizer_config.json), laid out
// like Qwen2's so that argrl's tokenizer loader reads it through the same
// path as a real Qwen checkpoint: NFC normalizer; pre-tokenizer
// Sequence[Split(QwenPattern, Isolated), ByteLevel(add_prefix_space=false,
// use_regex=false)]; BPE model over the 256 byte characters; ByteLevel
// decoder; ChatML added tokens after the BPE vocabulary.
//
// Training is the classic algorithm (Sennrich et al.; HF's BpeTrainer):
// count pre-tokenized words, then repeatedly merge the most frequent
// adjacent pair. Ties break on the smaller (left id, right id), so a corpus
// always gives the same merges.
package bpetrain

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// AddedToken is a token matched before BPE (HF "added_tokens").
type AddedToken struct {
	Content string
	Special bool // special tokens are skipped when decoding with skip_special_tokens
}

// ChatML returns the added tokens of Qwen2.5's chat format, in Qwen's order:
// the three specials, then the tool-call tags (not special, as in Qwen).
func ChatML() []AddedToken {
	return []AddedToken{
		{"<|endoftext|>", true}, {"<|im_start|>", true}, {"<|im_end|>", true},
		{"<tool_call>", false}, {"</tool_call>", false},
		{"<tool_response>", false}, {"</tool_response>", false},
	}
}

// Config configures Train.
type Config struct {
	// VocabSize is the whole vocabulary: 256 byte tokens, the merges and the
	// added tokens.
	VocabSize int
	// MinFrequency stops training when the best pair occurs fewer times.
	MinFrequency int
	Added        []AddedToken // nil means ChatML()
	// IsolatePrefix keeps the one-character prefix of a letter piece (the
	// space of " word", the quote of "«word") out of every merge, so a word
	// gets the same tokens after a space as after a JSON quote: " word" is
	// Ġ + tokens("word"). The split pattern is unchanged (QwenPattern); the
	// merges simply never join the prefix to a letter, so Hugging Face and
	// argrl encode such files the same way. It costs about one token per
	// word and makes copying a word from the prompt into an argument value
	// a plain token-for-token copy, which a tiny model learns quickly.
	IsolatePrefix bool
}

// Tokenizer is a trained byte-level BPE.
type Tokenizer struct {
	Vocab  []string    // id → token, in byte-level characters; ids 0..255 are the bytes
	Merges [][2]string // in rank order
	Added  []AddedToken

	ids    map[string]int
	merged map[[2]int]int // (left, right) → merged id
	rank   map[[2]int]int // (left, right) → merge rank
}

// Train learns merges from texts. Added tokens inside the texts are cut out
// first (they never take part in merges), the rest is NFC-normalized and
// pre-tokenized like the loader will.
func Train(texts []string, cfg Config) (*Tokenizer, error) {
	if cfg.Added == nil {
		cfg.Added = ChatML()
	}
	if cfg.MinFrequency < 1 {
		cfg.MinFrequency = 2
	}
	if cfg.VocabSize < 256+len(cfg.Added) {
		return nil, fmt.Errorf("bpetrain: vocab size %d is below the %d byte and added tokens", cfg.VocabSize, 256+len(cfg.Added))
	}
	t := &Tokenizer{Added: cfg.Added}
	for _, b := range byteOrder {
		t.Vocab = append(t.Vocab, string(byteRunes[b]))
	}
	t.index()

	// Word frequencies, in byte-level characters.
	freq := map[string]int{}
	for _, text := range texts {
		for _, seg := range t.segments(text) {
			if seg.added >= 0 {
				continue
			}
			for _, p := range pretokenize(norm.NFC.String(seg.text)) {
				if cfg.IsolatePrefix {
					if n := letterPrefix(p); n > 0 {
						freq[toByteLevel(p[:n])]++
						p = p[n:]
					}
				}
				freq[toByteLevel(p)]++
			}
		}
	}
	words := make([]string, 0, len(freq))
	for w := range freq {
		words = append(words, w)
	}
	sort.Strings(words)
	syms := make([][]int, len(words))
	counts := make([]int, len(words))
	for i, w := range words {
		counts[i] = freq[w]
		for _, r := range w {
			syms[i] = append(syms[i], t.ids[string(r)])
		}
	}

	// Pair counts and the words each pair occurs in.
	pairs := map[[2]int]int{}
	where := map[[2]int]map[int]struct{}{}
	addWord := func(i, sign int) {
		s := syms[i]
		for k := 0; k+1 < len(s); k++ {
			p := [2]int{s[k], s[k+1]}
			pairs[p] += sign * counts[i]
			if pairs[p] == 0 {
				delete(pairs, p)
			}
			if sign > 0 {
				if where[p] == nil {
					where[p] = map[int]struct{}{}
				}
				where[p][i] = struct{}{}
			}
		}
	}
	for i := range syms {
		addWord(i, +1)
	}

	for len(t.Vocab)+len(t.Added) < cfg.VocabSize {
		best, bestN := [2]int{}, 0
		for p, n := range pairs {
			if n > bestN || (n == bestN && (p[0] < best[0] || (p[0] == best[0] && p[1] < best[1]))) {
				best, bestN = p, n
			}
		}
		if bestN < cfg.MinFrequency {
			break
		}
		tok := t.Vocab[best[0]] + t.Vocab[best[1]]
		id, exists := t.ids[tok]
		if !exists {
			id = len(t.Vocab)
			t.Vocab = append(t.Vocab, tok)
			t.ids[tok] = id
		}
		t.rank[best] = len(t.Merges)
		t.merged[best] = id
		t.Merges = append(t.Merges, [2]string{t.Vocab[best[0]], t.Vocab[best[1]]})

		affected := make([]int, 0, len(where[best]))
		for i := range where[best] {
			affected = append(affected, i)
		}
		sort.Ints(affected)
		for _, i := range affected {
			addWord(i, -1)
			syms[i] = mergePair(syms[i], best, id)
			addWord(i, +1)
		}
		delete(where, best)
	}
	return t, nil
}

// letterPrefix is the byte length of the non-letter first character of a
// piece matched by the pattern's [^\r\n\p{L}\p{N}]?\p{L}+ alternative
// (" word", "«word"), or 0 when p does not start that way.
func letterPrefix(p string) int {
	c0, n := runeAt(p, 0)
	if n >= len(p) || c0 == cLetter || c0 == cDigit || c0 == cNewline {
		return 0
	}
	if c1, _ := runeAt(p, n); c1 != cLetter {
		return 0
	}
	return n
}

// mergePair replaces every non-overlapping occurrence of p, left to right.
func mergePair(s []int, p [2]int, id int) []int {
	out := s[:0]
	for k := 0; k < len(s); k++ {
		if k+1 < len(s) && s[k] == p[0] && s[k+1] == p[1] {
			out = append(out, id)
			k++
			continue
		}
		out = append(out, s[k])
	}
	return out
}

// index rebuilds the lookup tables from Vocab and Merges.
func (t *Tokenizer) index() {
	t.ids = make(map[string]int, len(t.Vocab))
	for i, v := range t.Vocab {
		if _, dup := t.ids[v]; !dup {
			t.ids[v] = i
		}
	}
	t.merged = map[[2]int]int{}
	t.rank = map[[2]int]int{}
	for r, m := range t.Merges {
		p := [2]int{t.ids[m[0]], t.ids[m[1]]}
		t.rank[p] = r
		t.merged[p] = t.ids[m[0]+m[1]]
	}
}

// Size is the full vocabulary size: BPE tokens plus added tokens.
func (t *Tokenizer) Size() int { return len(t.Vocab) + len(t.Added) }

type segment struct {
	text  string
	added int // index into Added, or -1 for ordinary text
}

// segments cuts text at added tokens (leftmost match, longest first).
func (t *Tokenizer) segments(text string) []segment {
	var out []segment
	for len(text) > 0 {
		at, which := -1, -1
		for k, a := range t.Added {
			if a.Content == "" {
				continue
			}
			if i := strings.Index(text, a.Content); i >= 0 && (at < 0 || i < at || (i == at && len(a.Content) > len(t.Added[which].Content))) {
				at, which = i, k
			}
		}
		if at < 0 {
			out = append(out, segment{text, -1})
			break
		}
		if at > 0 {
			out = append(out, segment{text[:at], -1})
		}
		out = append(out, segment{t.Added[which].Content, which})
		text = text[at+len(t.Added[which].Content):]
	}
	return out
}

// Encode is this package's reference encoder: added tokens, NFC, the Qwen
// split, bytes, then merges by rank (lowest first, leftmost on ties).
func (t *Tokenizer) Encode(text string) []int {
	var ids []int
	for _, seg := range t.segments(text) {
		if seg.added >= 0 {
			ids = append(ids, len(t.Vocab)+seg.added)
			continue
		}
		for _, p := range pretokenize(norm.NFC.String(seg.text)) {
			ids = append(ids, t.encodeWord(p)...)
		}
	}
	return ids
}

func (t *Tokenizer) encodeWord(piece string) []int {
	s := make([]int, 0, len(piece))
	for i := 0; i < len(piece); i++ {
		s = append(s, t.ids[string(byteRunes[piece[i]])])
	}
	for len(s) > 1 {
		bestK, bestR := -1, 0
		for k := 0; k+1 < len(s); k++ {
			if r, ok := t.rank[[2]int{s[k], s[k+1]}]; ok && (bestK < 0 || r < bestR) {
				bestK, bestR = k, r
			}
		}
		if bestK < 0 {
			break
		}
		p := [2]int{s[bestK], s[bestK+1]}
		s = mergePair(s, p, t.merged[p])
	}
	return s
}

// Decode maps ids back to text (added tokens verbatim).
func (t *Tokenizer) Decode(ids []int) (string, error) {
	var inv [512]int
	for i := range inv {
		inv[i] = -1
	}
	for b, r := range byteRunes {
		inv[r] = b
	}
	var out []byte
	for _, id := range ids {
		switch {
		case id >= 0 && id < len(t.Vocab):
			for _, r := range t.Vocab[id] {
				if r < 0 || int(r) >= len(inv) || inv[r] < 0 {
					return "", fmt.Errorf("bpetrain: token %d holds a non-byte-level character %q", id, r)
				}
				out = append(out, byte(inv[r]))
			}
		case id >= len(t.Vocab) && id < t.Size():
			out = append(out, t.Added[id-len(t.Vocab)].Content...)
		default:
			return "", fmt.Errorf("bpetrain: id %d out of range [0, %d)", id, t.Size())
		}
	}
	return string(out), nil
}
