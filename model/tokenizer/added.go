package tokenizer

// Added tokens (<|im_start|>, <tool_call>, <|eot_id|>, ...) are cut out of the
// text before normalization and BPE, as Hugging Face does: leftmost-longest
// matches, scanned left to right without overlap. A single_word token only
// counts between non-word characters (a failed match is skipped, not
// shortened); lstrip/rstrip tokens absorb the whitespace beside them.
// Tokens with normalized=true are matched on the normalized text instead.

import (
	"unicode"
	"unicode/utf8"
)

type addedToken struct {
	content    string
	id         int32
	special    bool
	singleWord bool
	lstrip     bool
	rstrip     bool
	normalized bool
	decoded    []byte // what the ByteLevel decoder makes of content
}

// trie is a byte trie over added-token contents.
type trie struct {
	first [256]int32 // root child per byte, -1 if none
	nodes []trieNode
}

type trieNode struct {
	edges []trieEdge
	tok   int32 // index into Tokenizer.added, -1 if no token ends here
}

type trieEdge struct {
	b    byte
	node int32
}

func newTrie() *trie {
	t := &trie{nodes: []trieNode{{tok: -1}}}
	for i := range t.first {
		t.first[i] = -1
	}
	return t
}

func (t *trie) insert(s string, tok int32) {
	if s == "" {
		return
	}
	cur := t.first[s[0]]
	if cur < 0 {
		cur = int32(len(t.nodes))
		t.nodes = append(t.nodes, trieNode{tok: -1})
		t.first[s[0]] = cur
	}
	for i := 1; i < len(s); i++ {
		nxt := int32(-1)
		for _, e := range t.nodes[cur].edges {
			if e.b == s[i] {
				nxt = e.node
				break
			}
		}
		if nxt < 0 {
			nxt = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{tok: -1})
			t.nodes[cur].edges = append(t.nodes[cur].edges, trieEdge{s[i], nxt})
		}
		cur = nxt
	}
	t.nodes[cur].tok = tok
}

// longest returns the longest token that starts at s[i:], or -1.
func (t *trie) longest(s string, i int) (tok int32, end int) {
	tok = -1
	cur := t.first[s[i]]
	for j := i + 1; cur >= 0; j++ {
		if k := t.nodes[cur].tok; k >= 0 {
			tok, end = k, j
		}
		if j >= len(s) {
			break
		}
		nxt := int32(-1)
		for _, e := range t.nodes[cur].edges {
			if e.b == s[j] {
				nxt = e.node
				break
			}
		}
		cur = nxt
	}
	return tok, end
}

// span is a piece of the text: an added token (tok >= 0) or plain text.
type span struct {
	start, end int
	tok        int32
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// splitAdded cuts the added tokens of t out of s and appends the pieces,
// plain text included, to out. Offsets are relative to s.
func splitAdded(t *trie, added []addedToken, s string, out []span) []span {
	if len(t.nodes) == 1 {
		if s != "" {
			out = append(out, span{0, len(s), -1})
		}
		return out
	}
	textStart := 0 // start of the plain text not yet emitted
	for i := 0; i < len(s); {
		if t.first[s[i]] < 0 {
			i++
			continue
		}
		k, end := t.longest(s, i)
		if k < 0 {
			i++
			continue
		}
		a := &added[k]
		start := i
		i = end
		if a.singleWord {
			before, _ := utf8.DecodeLastRuneInString(s[:start])
			after, _ := utf8.DecodeRuneInString(s[end:])
			if (start > 0 && isWordRune(before)) || (end < len(s) && isWordRune(after)) {
				continue
			}
		}
		if a.lstrip {
			for start > textStart {
				r, n := utf8.DecodeLastRuneInString(s[textStart:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= n
			}
		}
		if a.rstrip {
			for end < len(s) {
				r, n := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += n
			}
			i = end
		}
		if start > textStart {
			out = append(out, span{textStart, start, -1})
		}
		out = append(out, span{start, end, int32(k)})
		textStart = end
	}
	if textStart < len(s) {
		out = append(out, span{textStart, len(s), -1})
	}
	return out
}
