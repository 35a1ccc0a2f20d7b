// Package tokenizer reads a Hugging Face tokenizer.json for byte-level BPE, as
// shipped with Qwen2, Qwen2.5, Qwen3 and Llama-3.x, and gives the same ids as
// Hugging Face's tokenizers on every input, plus byte offsets per token.
//
// Pipeline for Encode (each step in its own file):
//
//	added tokens cut out (added.go) -> NFC normalizer when configured (encode.go)
//	-> split pattern (pretok.go) -> byte-level BPE with merge ranks (bpe.go)
//	-> template post-processor (BOS for Llama-3.1)
//
// github.com/sugarme/tokenizer supplies the byte<->char table and the
// added-token JSON shape; it cannot split with these patterns (Go's regexp
// has no lookahead), drops special tokens and is slow, so the rest is here.
//
// Departures from Hugging Face, all deliberate:
//   - offsets are byte offsets into the input, never trimmed (ByteLevel's
//     trim_offsets is ignored), so the offsets of a text tile it;
//   - Decode does not apply transformers' clean_up_tokenization_spaces.
//
// A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/sugarme/tokenizer/pretokenizer"
)

// Tokenizer encodes text to ids and decodes ids to text.
type Tokenizer struct {
	file      string
	model     *bpe
	split     splitter
	nfc       bool
	pieces    [][]byte // id -> raw bytes, nil for ids outside the BPE vocab
	added     []addedToken
	addedByID map[int32]int // id -> index into added
	addedByS  map[string]int32
	rawTrie   *trie // added tokens with normalized=false
	normTrie  *trie // added tokens with normalized=true
	prefix    []int32
	suffix    []int32
	vocabSize int

	bos, eos, pad int32 // -1 when absent
	stop          []int32
	chatTemplate  string
}

// byteChar[b] is the character that stands for byte b in a byte-level vocab;
// charByte inverts it (-1: no byte). All such characters are below U+0144.
var byteChar, charByte = func() (bc [256]string, cb [0x144]int16) {
	for i := range cb {
		cb[i] = -1
	}
	for b, c := range pretokenizer.GenerateBytesChar() {
		bc[b] = c
		r, _ := utf8.DecodeRuneInString(c)
		cb[r] = int16(b)
	}
	return bc, cb
}()

// unByteLevel maps a byte-level string back to raw bytes; ok is false when a
// character has no byte.
func unByteLevel(s string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(s))
	for _, r := range s {
		if r >= rune(len(charByte)) || charByte[r] < 0 {
			return nil, false
		}
		raw = append(raw, byte(charByte[r]))
	}
	return raw, true
}

// endOfTurn lists the tokens that end a turn in the supported families.
var endOfTurn = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"}

// Load reads path: a tokenizer.json file, or a model directory holding one.
// tokenizer_config.json and generation_config.json beside it are read when
// present (special tokens, stop ids, chat template).
func Load(path string) (*Tokenizer, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, "tokenizer.json")
	}
	f, err := readFile(file)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{file: file, addedByID: map[int32]int{}, addedByS: map[string]int32{}, bos: -1, eos: -1, pad: -1}
	if err := t.loadModel(file, f); err != nil {
		return nil, err
	}
	if t.nfc, err = parseNormalizer(file, "normalizer", f.Normalizer); err != nil {
		return nil, err
	}
	if t.split.maxDigits, err = parsePreTokenizer(file, f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.prefix, t.suffix, err = parsePostProcessor(file, "post_processor", f.PostProcessor); err != nil {
		return nil, err
	}
	if err := checkDecoder(file, f.Decoder); err != nil {
		return nil, err
	}
	if err := t.loadAdded(file, f); err != nil {
		return nil, err
	}
	for _, id := range append(append([]int32{}, t.prefix...), t.suffix...) {
		if int(id) >= t.vocabSize || id < 0 {
			return nil, fmt.Errorf("tokenizer: %s: key %q: id %d outside the vocabulary", file, "post_processor", id)
		}
	}
	if err := t.loadConfig(filepath.Dir(file)); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tokenizer) loadModel(file string, f *fileJSON) error {
	var m modelJSON
	if err := decodeKey(file, "model", f.Model, &m); err != nil {
		return err
	}
	switch {
	case m.Type != "" && m.Type != "BPE":
		return fmt.Errorf("tokenizer: %s: key %q: unsupported model type %q (want BPE)", file, "model.type", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return fmt.Errorf("tokenizer: %s: key %q: BPE dropout is not supported", file, "model.dropout")
	case m.ByteFallback:
		return fmt.Errorf("tokenizer: %s: key %q: byte_fallback is not supported", file, "model.byte_fallback")
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return fmt.Errorf("tokenizer: %s: key %q: subword prefixes/suffixes are not supported", file, "model")
	case len(m.Vocab) == 0:
		return fmt.Errorf("tokenizer: %s: key %q: missing or empty", file, "model.vocab")
	}
	b := &bpe{vocab: make(map[string]int32, len(m.Vocab)), merges: make(map[uint64]merge, len(m.Merges)),
		ignoreMerges: m.IgnoreMerges, cache: map[string][]int32{}}
	maxID := int32(-1)
	for _, id := range m.Vocab {
		maxID = max(maxID, id)
	}
	if maxID >= 1<<28 {
		return fmt.Errorf("tokenizer: %s: key %q: id %d is too large", file, "model.vocab", maxID)
	}
	t.pieces = make([][]byte, maxID+1)
	for tok, id := range m.Vocab {
		if id < 0 {
			return fmt.Errorf("tokenizer: %s: key %q: negative id %d", file, "model.vocab."+tok, id)
		}
		raw, ok := unByteLevel(tok)
		if !ok {
			return fmt.Errorf("tokenizer: %s: key %q: not a byte-level token", file, "model.vocab."+tok)
		}
		b.vocab[string(raw)] = id
		t.pieces[id] = raw
	}
	for c := 0; c < 256; c++ {
		id, ok := b.vocab[string([]byte{byte(c)})]
		if !ok {
			return fmt.Errorf("tokenizer: %s: key %q: byte-level alphabet lacks %q (byte %d)", file, "model.vocab", byteChar[c], c)
		}
		b.byteID[c] = id
	}
	for i, raw := range m.Merges {
		key := func() string { return fmt.Sprintf("model.merges[%d]", i) }
		l, r, err := parseMerge(raw)
		if err != nil {
			return fmt.Errorf("tokenizer: %s: key %q: %w", file, key(), err)
		}
		lr, ok1 := unByteLevel(l)
		rr, ok2 := unByteLevel(r)
		li, ok3 := b.vocab[string(lr)]
		ri, ok4 := b.vocab[string(rr)]
		mi, ok5 := b.vocab[string(lr)+string(rr)]
		if !(ok1 && ok2 && ok3 && ok4 && ok5) {
			return fmt.Errorf("tokenizer: %s: key %q: merge %q + %q uses a token outside model.vocab", file, key(), l, r)
		}
		k := pairKey(li, ri)
		if _, dup := b.merges[k]; !dup { // the first (lowest) rank wins
			b.merges[k] = merge{rank: int32(i), id: mi}
		}
	}
	t.model = b
	t.vocabSize = int(maxID) + 1
	return nil
}

// maxAddedID bounds added-token ids: far above any real vocabulary (Llama-3
// and Qwen stay under 2^18), and small enough that an id cannot size an
// allocation.
const maxAddedID = 1 << 24

func (t *Tokenizer) loadAdded(file string, f *fileJSON) error {
	t.rawTrie, t.normTrie = newTrie(), newTrie()
	for i, a := range f.AddedTokens {
		if a.Id < 0 || a.Id >= maxAddedID {
			return fmt.Errorf("tokenizer: %s: key \"added_tokens[%d].id\": id %d of %q is outside [0, %d)", file, i, a.Id, a.Content, maxAddedID)
		}
		if a.Content == "" {
			continue
		}
		id := int32(a.Id)
		at := addedToken{content: a.Content, id: id, special: a.Special, singleWord: a.SingleWord,
			lstrip: a.Lstrip, rstrip: a.Rstrip, normalized: a.Normalized}
		// ByteLevel decoding: each char maps to its byte, unless one has no
		// byte, in which case the content's UTF-8 is kept.
		if raw, ok := unByteLevel(a.Content); ok {
			at.decoded = raw
		} else {
			at.decoded = []byte(a.Content)
		}
		if i, ok := t.addedByID[id]; ok {
			t.added[i] = at // a later entry for the same id wins
		} else {
			t.addedByID[id] = len(t.added)
			t.added = append(t.added, at)
		}
		t.vocabSize = max(t.vocabSize, int(id)+1)
	}
	for i, a := range t.added {
		t.addedByS[a.content] = a.id
		if a.normalized { // matched after the raw tokens, on normalized text
			t.normTrie.insert(a.content, int32(i))
		} else {
			t.rawTrie.insert(a.content, int32(i))
		}
	}
	return nil
}

func (t *Tokenizer) loadConfig(dir string) error {
	file := filepath.Join(dir, "tokenizer_config.json")
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("tokenizer: %w", err)
	default:
		var c configJSON
		if err := decodeKey(file, "", b, &c); err != nil {
			return err
		}
		for _, f := range []struct {
			key string
			raw []byte
			dst *int32
		}{{"bos_token", c.BOS, &t.bos}, {"eos_token", c.EOS, &t.eos}, {"pad_token", c.Pad, &t.pad}} {
			name, err := tokenName(file, f.key, f.raw)
			if err != nil {
				return err
			}
			if name == "" {
				continue
			}
			id, ok := t.TokenID(name)
			if !ok {
				return fmt.Errorf("tokenizer: %s: key %q: token %q is not in %s", file, f.key, name, t.file)
			}
			*f.dst = id
		}
		if t.chatTemplate, err = chatTemplate(file, c.ChatTemplate); err != nil {
			return err
		}
	}
	gen, err := genEOS(filepath.Join(dir, "generation_config.json"))
	if err != nil {
		return err
	}
	seen := map[int32]bool{}
	add := func(id int32) {
		if id >= 0 && !seen[id] {
			seen[id] = true
			t.stop = append(t.stop, id)
		}
	}
	add(t.eos)
	for _, id := range gen {
		add(id)
	}
	for _, s := range endOfTurn {
		if id, ok := t.addedByS[s]; ok {
			add(id)
		}
	}
	sort.Slice(t.stop, func(i, j int) bool { return t.stop[i] < t.stop[j] })
	return nil
}

// VocabSize is one more than the largest id, added tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of the token whose text is s: an added token's
// content such as "<|im_end|>", or the decoded text of a vocabulary token.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if id, ok := t.addedByS[s]; ok {
		return id, true
	}
	id, ok := t.model.vocab[s]
	return id, ok
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int32) bool {
	i, ok := t.addedByID[id]
	return ok && t.added[i].special
}

// BOS returns the bos_token id of tokenizer_config.json, or -1.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the eos_token id of tokenizer_config.json, or -1.
func (t *Tokenizer) EOS() int32 { return t.eos }

// Pad returns the pad_token id of tokenizer_config.json, or -1.
func (t *Tokenizer) Pad() int32 { return t.pad }

// StopIDs returns the ids that end generation, ascending: eos_token,
// generation_config.json's eos_token_id, and the family's end-of-turn tokens
// (<|im_end|>, <|endoftext|>, <|eot_id|>, <|eom_id|>, <|end_of_text|>) present.
func (t *Tokenizer) StopIDs() []int32 { return append([]int32(nil), t.stop...) }

// ChatTemplate returns tokenizer_config.json's chat_template ("" if none).
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }

// File is the tokenizer.json this tokenizer was read from.
func (t *Tokenizer) File() string { return t.file }
