package tokenizer

// Tests that need no download: a tiny tokenizer.json written here, broken
// files, the scanner, UTF-8 repair, and a fuzz test of the invariants.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// tinyFile returns a valid tokenizer.json object: the 256 byte tokens, a few
// merges ("h e", "he l", "hel l", "hell o", "Ġ Ġ"), added tokens, Qwen's
// pattern and NFC.
func tinyFile() map[string]any {
	vocab := map[string]any{}
	for b := 0; b < 256; b++ {
		vocab[byteChar[b]] = b
	}
	merges := []any{}
	next := 256
	for _, m := range [][2]string{{"h", "e"}, {"he", "l"}, {"hel", "l"}, {"hell", "o"}, {"Ġ", "Ġ"}, {"Ġ", "w"}} {
		merges = append(merges, m[0]+" "+m[1])
		vocab[m[0]+m[1]] = next
		next++
	}
	return map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 300, "content": "<|im_end|>", "special": true},
			map[string]any{"id": 301, "content": "<tool_call>", "special": false},
			map[string]any{"id": 302, "content": "[X]", "special": false, "lstrip": true, "rstrip": true},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": patternQwen2}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
}

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	var b []byte
	if s, ok := v.(string); ok {
		b = []byte(s)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func tinyTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	dir := t.TempDir()
	b, _ := json.Marshal(tinyFile())
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTinyTokenizer(t *testing.T) {
	tok := tinyTokenizer(t)
	cases := []struct {
		text string
		ids  []int32
	}{
		{"hello", []int32{259}},   // h e -> he, l, l, o merged in rank order
		{"  w", []int32{32, 261}}, // " " (byte 32 has id 32), then " w"
		{"a<|im_end|>b", []int32{'a', 300, 'b'}},
		{"x [X] y", []int32{'x', 302, 'y'}}, // lstrip/rstrip absorb the spaces
	}
	for _, c := range cases {
		ids, offs := tok.Encode(c.text, false)
		if !equalIDs(ids, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, ids, c.ids)
		}
		checkTiling(t, c.text, offs)
	}
	if got := tok.Decode([]int32{259, 300, 32, 261}, true); got != "hello  w" {
		t.Errorf("Decode skip special = %q", got)
	}
	if got := tok.Decode([]int32{259, 300, 301, 999999, -1}, false); got != "hello<|im_end|><tool_call>" {
		t.Errorf("Decode = %q", got)
	}
	if tok.VocabSize() != 303 || !tok.IsSpecial(300) || tok.IsSpecial(301) {
		t.Errorf("vocab size %d, special flags %v %v", tok.VocabSize(), tok.IsSpecial(300), tok.IsSpecial(301))
	}
	// NFD input is normalized; offsets of the rewritten stretch cover it whole.
	ids, offs := tok.Encode("e\u0301x", false)
	if got := tok.Decode(ids, false); got != "\u00e9x" {
		t.Errorf("NFC: decoded %q", got)
	}
	if offs[0][0] != 0 || offs[len(offs)-1][1] != len("e\u0301x") {
		t.Errorf("NFC offsets %v", offs)
	}
}

func TestSplitPattern(t *testing.T) {
	cases := []struct {
		digits int
		in     string
		want   []string
	}{
		{1, "Hello  world", []string{"Hello", " ", " world"}},
		{1, "I'm HE'LL 'x", []string{"I", "'m", " HE", "'LL", " '", "x"}},
		{1, "12345 abc", []string{"1", "2", "3", "4", "5", " abc"}},
		{3, "12345 abc", []string{"123", "45", " abc"}},
		{1, "a  \n\n  b", []string{"a", "  \n\n", " ", " b"}},
		{1, "x...\n\ny", []string{"x", "...\n\n", "y"}},
		{1, "end   ", []string{"end", "   "}},
		{1, " ¿Qué?", []string{" ¿", "Qué", "?"}},
		{1, "\tfoo\nbar", []string{"\tfoo", "\n", "bar"}},
	}
	for _, c := range cases {
		var got []string
		start := 0
		for _, end := range (splitter{maxDigits: c.digits}).split(c.in, nil) {
			got = append(got, c.in[start:end])
			start = end
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLossy(t *testing.T) {
	// Expected values are what TextDecoder (WHATWG) and Rust's from_utf8_lossy give.
	cases := []struct {
		in   []byte
		want string
	}{
		{[]byte{0xE2, 0x82}, "\uFFFD"},
		{[]byte{0xF0, 0x80}, "\uFFFD\uFFFD"},
		{[]byte{0xC0, 0xAF}, "\uFFFD\uFFFD"},
		{[]byte{0xED, 0xA0, 0x80}, "\uFFFD\uFFFD\uFFFD"},
		{[]byte{0xF0, 0x9F, 0x98}, "\uFFFD"},
		{[]byte{'a', 0xF4, 0x90, 0x80, 0x80, 'b'}, "a\uFFFD\uFFFD\uFFFD\uFFFDb"},
		{[]byte{0xE2, 0x82, 'A'}, "\uFFFDA"},
	}
	for _, c := range cases {
		m := make([]int, len(c.in)+1)
		got, m := lossy(c.in, m)
		if got != c.want {
			t.Errorf("lossy(% x) = %q, want %q", c.in, got, c.want)
		}
		if m[len(c.in)] != len(got) {
			t.Errorf("lossy(% x): end maps to %d, want %d", c.in, m[len(c.in)], len(got))
		}
	}
}

// TestCorruptFiles: every broken input is an error naming the file and the
// key, never a panic.
func TestCorruptFiles(t *testing.T) {
	type edit func(f map[string]any)
	model := func(f map[string]any) map[string]any { return f["model"].(map[string]any) }
	cases := []struct {
		name    string
		raw     string // used instead of the edited tiny file when set
		edit    edit
		wantKey string
	}{
		{name: "truncated", raw: `{"model": {"type": "BPE", "vocab": {"a": 1`, wantKey: "invalid JSON"},
		{name: "not an object", raw: `[1, 2]`, wantKey: "cannot unmarshal"},
		{name: "no model", edit: func(f map[string]any) { delete(f, "model") }, wantKey: `"model"`},
		{name: "vocab type", edit: func(f map[string]any) { model(f)["vocab"] = "x" }, wantKey: `"model.vocab"`},
		{name: "vocab id type", edit: func(f map[string]any) { model(f)["vocab"].(map[string]any)["he"] = "x" }, wantKey: `"model.vocab`},
		{name: "empty vocab", edit: func(f map[string]any) { model(f)["vocab"] = map[string]any{} }, wantKey: `"model.vocab"`},
		{name: "byte missing", edit: func(f map[string]any) { delete(model(f)["vocab"].(map[string]any), "a") }, wantKey: `"model.vocab"`},
		{name: "non byte-level token", edit: func(f map[string]any) { model(f)["vocab"].(map[string]any)["日本"] = 400 }, wantKey: `"model.vocab.日本"`},
		{name: "merge unknown token", edit: func(f map[string]any) { model(f)["merges"] = []any{"q z"} }, wantKey: `"model.merges[0]"`},
		{name: "merge malformed", edit: func(f map[string]any) { model(f)["merges"] = []any{"h e", 7} }, wantKey: `"model.merges[1]"`},
		{name: "merge one token", edit: func(f map[string]any) { model(f)["merges"] = []any{[]any{"h"}} }, wantKey: `"model.merges[0]"`},
		{name: "model type", edit: func(f map[string]any) { model(f)["type"] = "WordPiece" }, wantKey: `"model.type"`},
		{name: "byte fallback", edit: func(f map[string]any) { model(f)["byte_fallback"] = true }, wantKey: `"model.byte_fallback"`},
		{name: "normalizer", edit: func(f map[string]any) { f["normalizer"] = map[string]any{"type": "NFKC"} }, wantKey: `"normalizer.type"`},
		{name: "pattern", edit: func(f map[string]any) {
			f["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\s+`}
		}, wantKey: `"pre_tokenizer.pretokenizers[0].pattern.Regex"`},
		{name: "no pre-tokenizer", edit: func(f map[string]any) { f["pre_tokenizer"] = nil }, wantKey: `"pre_tokenizer"`},
		{name: "gpt2 byte level", edit: func(f map[string]any) { f["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "use_regex": true} }, wantKey: `"pre_tokenizer"`},
		{name: "added tokens type", edit: func(f map[string]any) { f["added_tokens"] = map[string]any{} }, wantKey: "added_tokens"},
		{name: "negative added token id", edit: func(f map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": -1, "content": "<x>", "special": true}}
		}, wantKey: `"added_tokens[0].id"`},
		{name: "huge added token id", edit: func(f map[string]any) {
			f["added_tokens"] = []any{map[string]any{"id": 1 << 40, "content": "<x>", "special": true}}
		}, wantKey: `"added_tokens[0].id"`},
		{name: "post processor", edit: func(f map[string]any) {
			f["post_processor"] = map[string]any{"type": "TemplateProcessing", "single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>"}}}, "special_tokens": map[string]any{}}
		}, wantKey: `"post_processor.single[0]"`},
		{name: "decoder", edit: func(f map[string]any) { f["decoder"] = map[string]any{"type": "Metaspace"} }, wantKey: `"decoder.type"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var file string
			if c.raw != "" {
				file = writeJSON(t, dir, "tokenizer.json", c.raw)
			} else {
				f := tinyFile()
				c.edit(f)
				file = writeJSON(t, dir, "tokenizer.json", f)
			}
			tok, err := Load(file)
			if err == nil {
				t.Fatalf("Load succeeded (vocab %d)", tok.VocabSize())
			}
			if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), c.wantKey) {
				t.Fatalf("error %q does not name %s and %s", err, file, c.wantKey)
			}
		})
	}
}

func TestCorruptConfigs(t *testing.T) {
	cases := []struct {
		file, body, wantKey string
	}{
		{"tokenizer_config.json", `{"eos_token": "<|nope|>"}`, `"eos_token"`},
		{"tokenizer_config.json", `{"bos_token": 5}`, `"bos_token"`},
		{"tokenizer_config.json", `{"eos_token": `, "tokenizer_config.json"},
		{"tokenizer_config.json", `{"chat_template": 3}`, `"chat_template"`},
		{"generation_config.json", `{"eos_token_id": "x"}`, `"eos_token_id"`},
	}
	for _, c := range cases {
		dir := t.TempDir()
		writeJSON(t, dir, "tokenizer.json", tinyFile())
		p := writeJSON(t, dir, c.file, c.body)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.wantKey) {
			t.Errorf("%s %s: error %v, want one naming %s and %s", c.file, c.body, err, p, c.wantKey)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Load of a missing path succeeded")
	}
	// A good config: special ids and the template are read.
	dir := t.TempDir()
	writeJSON(t, dir, "tokenizer.json", tinyFile())
	writeJSON(t, dir, "tokenizer_config.json", `{"eos_token": {"content": "<|im_end|>"}, "pad_token": null, "chat_template": [{"name": "default", "template": "T"}]}`)
	tok, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.EOS() != 300 || tok.Pad() != -1 || tok.ChatTemplate() != "T" || !equalIDs(tok.StopIDs(), []int32{300}) {
		t.Errorf("eos %d pad %d template %q stop %v", tok.EOS(), tok.Pad(), tok.ChatTemplate(), tok.StopIDs())
	}
}

// FuzzEncode checks the invariants on any input: no panic, one offset per
// id inside the text and in order, and for valid NFC text exact tiling and
// a lossless round trip.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "hello", "  \n\n x", "e\u0301\u0301a", "\xff\xfe<|im_end|>", "a [X]  [X]b", "😀 12345", "\r\n\t\u3000"} {
		f.Add(s)
	}
	tok := tinyTokenizer(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids, offs := tok.Encode(s, true)
		if len(ids) != len(offs) {
			t.Fatalf("%d ids, %d offsets", len(ids), len(offs))
		}
		prev := 0
		for _, o := range offs {
			if o[0] < prev || o[1] < o[0] || o[1] > len(s) {
				t.Fatalf("%q: bad offsets %v", s, offs)
			}
			prev = o[0]
		}
		text, doffs := tok.DecodeOffsets(ids, false)
		if len(doffs) != len(ids) || !utf8.ValidString(text) {
			t.Fatalf("DecodeOffsets: %d offsets, valid %v", len(doffs), utf8.ValidString(text))
		}
		if utf8.ValidString(s) && norm.NFC.IsNormalString(s) && !strings.Contains(s, "[X]") {
			checkTiling(t, s, offs)
			if text != s {
				t.Fatalf("round trip %q -> %q", s, text)
			}
		}
	})
}
