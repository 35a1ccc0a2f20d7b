package bpetrain

// Writing and reading the Hugging Face files. Key order follows what
// transformers/tokenizers write (and Qwen2.5 ships); vocab is written in id
// order, merges as "left right" strings (Qwen2's form; byte-level tokens
// never contain a space).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// byteLevel is the ByteLevel component as Qwen2 configures it.
const byteLevel = `{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}`

// TokenizerJSON renders tokenizer.json.
func (t *Tokenizer) TokenizerJSON() []byte {
	var b bytes.Buffer
	q := func(s string) string { return quote(s) }
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, a := range t.Added {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": %s, \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, \"special\": %t}",
			len(t.Vocab)+i, q(a.Content), a.Special)
	}
	b.WriteString("\n  ],\n  \"normalizer\": {\"type\": \"NFC\"},\n")
	fmt.Fprintf(&b, "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": %s}, \"behavior\": \"Isolated\", \"invert\": false}, %s]},\n",
		q(QwenPattern), byteLevel)
	fmt.Fprintf(&b, "  \"post_processor\": %s,\n  \"decoder\": %s,\n", byteLevel, byteLevel)
	b.WriteString("  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\", \"end_of_word_suffix\": \"\", \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n    \"vocab\": {")
	for i, v := range t.Vocab {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", q(v), i)
	}
	b.WriteString("},\n    \"merges\": [")
	for i, m := range t.Merges {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q(m[0] + " " + m[1]))
	}
	b.WriteString("]\n  }\n}\n")
	return b.Bytes()
}

// ConfigJSON renders tokenizer_config.json in Qwen2.5's layout (without a
// chat template: argrl selects its templates in Go).
func (t *Tokenizer) ConfigJSON(modelMaxLength int) []byte {
	type tokDecl struct {
		Content    string `json:"content"`
		Lstrip     bool   `json:"lstrip"`
		Normalized bool   `json:"normalized"`
		Rstrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
		Special    bool   `json:"special"`
	}
	decl := map[string]tokDecl{}
	var extra []string
	for i, a := range t.Added {
		decl[strconv.Itoa(len(t.Vocab)+i)] = tokDecl{Content: a.Content, Special: a.Special}
		if a.Special && a.Content != "<|endoftext|>" {
			extra = append(extra, a.Content)
		}
	}
	cfg := struct {
		AddBOS      bool               `json:"add_bos_token"`
		AddPrefix   bool               `json:"add_prefix_space"`
		AddedTokens map[string]tokDecl `json:"added_tokens_decoder"`
		Additional  []string           `json:"additional_special_tokens"`
		BOS         *string            `json:"bos_token"`
		CleanUp     bool               `json:"clean_up_tokenization_spaces"`
		EOS         string             `json:"eos_token"`
		Errors      string             `json:"errors"`
		MaxLen      int                `json:"model_max_length"`
		Pad         string             `json:"pad_token"`
		SplitSpec   bool               `json:"split_special_tokens"`
		Class       string             `json:"tokenizer_class"`
		UNK         *string            `json:"unk_token"`
	}{AddedTokens: decl, Additional: extra, EOS: "<|im_end|>", Errors: "replace",
		MaxLen: modelMaxLength, Pad: "<|endoftext|>", Class: "Qwen2Tokenizer"}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(cfg) // plain strings, bools and ints: cannot fail
	return b.Bytes()
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteDir writes tokenizer.json and tokenizer_config.json into dir.
func (t *Tokenizer) WriteDir(dir string, modelMaxLength int) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("bpetrain: %w", err)
	}
	for name, body := range map[string][]byte{"tokenizer.json": t.TokenizerJSON(), "tokenizer_config.json": t.ConfigJSON(modelMaxLength)} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path+".tmp", body, 0o666); err != nil {
			return fmt.Errorf("bpetrain: write %s: %w", path, err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return fmt.Errorf("bpetrain: write %s: %w", path, err)
		}
	}
	return nil
}

// Load reads back a tokenizer.json written by TokenizerJSON (BPE vocab,
// string merges, added tokens); it is not a general loader (model/tokenizer
// is).
func Load(path string) (*Tokenizer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bpetrain: %w", err)
	}
	var f struct {
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
			Special bool   `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Type   string         `json:"type"`
			Vocab  map[string]int `json:"vocab"`
			Merges []string       `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("bpetrain: %s: %w", path, err)
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("bpetrain: %s: model.type is %q, want BPE", path, f.Model.Type)
	}
	t := &Tokenizer{}
	n := 0
	for _, id := range f.Model.Vocab {
		n = max(n, id+1)
	}
	t.Vocab = make([]string, n)
	for tok, id := range f.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("bpetrain: %s: model.vocab[%q] = %d is negative", path, tok, id)
		}
		t.Vocab[id] = tok
	}
	for i, m := range f.Model.Merges {
		l, r, ok := strings.Cut(m, " ")
		if !ok {
			return nil, fmt.Errorf("bpetrain: %s: model.merges[%d] = %q has no space", path, i, m)
		}
		t.Merges = append(t.Merges, [2]string{l, r})
	}
	for i, a := range f.Added {
		if a.ID != n+i {
			return nil, fmt.Errorf("bpetrain: %s: added_tokens[%d] has id %d, want %d", path, i, a.ID, n+i)
		}
		t.Added = append(t.Added, AddedToken{a.Content, a.Special})
	}
	for id, v := range t.Vocab {
		if v == "" {
			return nil, fmt.Errorf("bpetrain: %s: model.vocab has no token with id %d", path, id)
		}
	}
	t.index()
	return t, nil
}
