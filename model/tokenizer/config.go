package tokenizer

// Reading tokenizer.json, tokenizer_config.json and generation_config.json.
// Every failure names the file and the JSON key; nothing here panics.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	sugar "github.com/sugarme/tokenizer"
)

// Split patterns we implement by hand (pretok.go). Go's regexp has no
// lookahead, so the pattern string selects a scanner instead of compiling.
const (
	// Qwen2, Qwen2.5 and Qwen3: one digit per piece.
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Llama-3.x: up to three digits per piece.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// fileJSON is the top level of tokenizer.json. Sections stay raw so each is
// decoded separately and an error can name its key.
type fileJSON struct {
	AddedTokens   []sugar.TokenConfig `json:"added_tokens"`
	Normalizer    json.RawMessage     `json:"normalizer"`
	PreTokenizer  json.RawMessage     `json:"pre_tokenizer"`
	PostProcessor json.RawMessage     `json:"post_processor"`
	Decoder       json.RawMessage     `json:"decoder"`
	Model         json.RawMessage     `json:"model"`
}

type modelJSON struct {
	Type                    string            `json:"type"`
	Dropout                 *float64          `json:"dropout"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	Vocab                   map[string]int32  `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
}

// component is any typed section: normalizer, pre-tokenizer, processor, decoder.
type component struct {
	Type           string            `json:"type"`
	Normalizers    []json.RawMessage `json:"normalizers"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Processors     []json.RawMessage `json:"processors"`
	Decoders       []json.RawMessage `json:"decoders"`
	Pattern        json.RawMessage   `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       bool              `json:"use_regex"`
	Single         []json.RawMessage `json:"single"`
	SpecialTokens  map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
}

// decodeKey unmarshals raw into v and names file and key on failure.
func decodeKey(file, key string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			key = key + "." + te.Field
		}
		return fmt.Errorf("tokenizer: %s: key %q: %w", file, key, err)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func readFile(file string) (*fileJSON, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var f fileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("tokenizer: %s: invalid JSON at byte %d: %w", file, se.Offset, err)
		}
		return nil, decodeKey(file, "", b, &f) // re-run to name the key
	}
	if isNull(f.Model) {
		return nil, fmt.Errorf("tokenizer: %s: key %q: missing", file, "model")
	}
	return &f, nil
}

// parseMerge reads one merge, either "a b" or ["a", "b"].
func parseMerge(raw json.RawMessage) (a, b string, err error) {
	raw = bytes.TrimSpace(raw)
	if bytes.IndexByte(raw, '\\') < 0 { // fast paths: no escapes to decode
		if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '"') < 0 {
			a, b, ok := strings.Cut(string(raw[1:n-1]), " ")
			if ok && a != "" && b != "" && !strings.Contains(b, " ") {
				return a, b, nil
			}
		}
		if parts := bytes.Split(raw, []byte(`","`)); len(parts) == 2 &&
			bytes.HasPrefix(parts[0], []byte(`["`)) && bytes.HasSuffix(parts[1], []byte(`"]`)) &&
			bytes.IndexByte(parts[0][2:], '"') < 0 && bytes.IndexByte(parts[1][:len(parts[1])-2], '"') < 0 {
			return string(parts[0][2:]), string(parts[1][:len(parts[1])-2]), nil
		}
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", "", err
		}
		a, b, ok := strings.Cut(s, " ")
		if !ok || a == "" || b == "" || strings.Contains(b, " ") {
			return "", "", fmt.Errorf("merge %q is not two space-separated tokens", s)
		}
		return a, b, nil
	}
	var pair []string
	if err := json.Unmarshal(raw, &pair); err != nil {
		return "", "", err
	}
	if len(pair) != 2 {
		return "", "", fmt.Errorf("merge %s does not hold two tokens", raw)
	}
	return pair[0], pair[1], nil
}

// parseNormalizer accepts null, NFC, or a Sequence of those.
func parseNormalizer(file, key string, raw json.RawMessage) (nfc bool, err error) {
	if isNull(raw) {
		return false, nil
	}
	var c component
	if err := decodeKey(file, key, raw, &c); err != nil {
		return false, err
	}
	switch c.Type {
	case "NFC":
		return true, nil
	case "Sequence":
		for i, sub := range c.Normalizers {
			n, err := parseNormalizer(file, fmt.Sprintf("%s.normalizers[%d]", key, i), sub)
			if err != nil {
				return false, err
			}
			nfc = nfc || n
		}
		return nfc, nil
	}
	return false, fmt.Errorf("tokenizer: %s: key %q: unsupported normalizer type %q (supported: NFC, Sequence)", file, key+".type", c.Type)
}

// parsePreTokenizer accepts Sequence[Split(pattern, Isolated), ByteLevel(use_regex=false)],
// the layout of Qwen2/2.5/3 and Llama-3, and returns the digit group size.
func parsePreTokenizer(file string, raw json.RawMessage) (maxDigits int, err error) {
	const key = "pre_tokenizer"
	if isNull(raw) {
		return 0, fmt.Errorf("tokenizer: %s: key %q: missing", file, key)
	}
	var c component
	if err := decodeKey(file, key, raw, &c); err != nil {
		return 0, err
	}
	if c.Type != "Sequence" || len(c.Pretokenizers) != 2 {
		return 0, fmt.Errorf("tokenizer: %s: key %q: unsupported pre-tokenizer (want Sequence of Split and ByteLevel, got type %q)", file, key, c.Type)
	}
	var split, bl component
	if err := decodeKey(file, key+".pretokenizers[0]", c.Pretokenizers[0], &split); err != nil {
		return 0, err
	}
	if err := decodeKey(file, key+".pretokenizers[1]", c.Pretokenizers[1], &bl); err != nil {
		return 0, err
	}
	if split.Type != "Split" || split.Behavior != "Isolated" || split.Invert {
		return 0, fmt.Errorf("tokenizer: %s: key %q: unsupported split (type %q, behavior %q, invert %v)", file, key+".pretokenizers[0]", split.Type, split.Behavior, split.Invert)
	}
	var pat struct {
		Regex *string `json:"Regex"`
	}
	if err := decodeKey(file, key+".pretokenizers[0].pattern", split.Pattern, &pat); err != nil {
		return 0, err
	}
	switch {
	case pat.Regex == nil:
		return 0, fmt.Errorf("tokenizer: %s: key %q: missing", file, key+".pretokenizers[0].pattern.Regex")
	case *pat.Regex == patternQwen2:
		maxDigits = 1
	case *pat.Regex == patternLlama3:
		maxDigits = 3
	default:
		return 0, fmt.Errorf("tokenizer: %s: key %q: unsupported split pattern %q (supported: Qwen2/Qwen3, Llama-3)", file, key+".pretokenizers[0].pattern.Regex", *pat.Regex)
	}
	if bl.Type != "ByteLevel" || bl.UseRegex || bl.AddPrefixSpace {
		return 0, fmt.Errorf("tokenizer: %s: key %q: want ByteLevel with use_regex=false and add_prefix_space=false", file, key+".pretokenizers[1]")
	}
	return maxDigits, nil
}

// parsePostProcessor returns the ids that TemplateProcessing puts before and
// after a single sequence. ByteLevel processors only trim offsets, which we
// do not do (offsets cover every input byte), so they add nothing.
func parsePostProcessor(file, key string, raw json.RawMessage) (prefix, suffix []int32, err error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	var c component
	if err := decodeKey(file, key, raw, &c); err != nil {
		return nil, nil, err
	}
	switch c.Type {
	case "ByteLevel":
		return nil, nil, nil
	case "Sequence":
		for i, sub := range c.Processors {
			p, s, err := parsePostProcessor(file, fmt.Sprintf("%s.processors[%d]", key, i), sub)
			if err != nil {
				return nil, nil, err
			}
			prefix = append(prefix, p...)
			suffix = append(suffix, s...)
		}
		return prefix, suffix, nil
	case "TemplateProcessing":
		seen := false
		for i, piece := range c.Single {
			var p struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			}
			pk := fmt.Sprintf("%s.single[%d]", key, i)
			if err := decodeKey(file, pk, piece, &p); err != nil {
				return nil, nil, err
			}
			switch {
			case p.Sequence != nil:
				seen = true
			case p.SpecialToken != nil:
				st, ok := c.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("tokenizer: %s: key %q: special token %q not in special_tokens", file, pk, p.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			default:
				return nil, nil, fmt.Errorf("tokenizer: %s: key %q: want SpecialToken or Sequence", file, pk)
			}
		}
		return prefix, suffix, nil
	}
	return nil, nil, fmt.Errorf("tokenizer: %s: key %q: unsupported post-processor type %q", file, key+".type", c.Type)
}

// checkDecoder accepts a ByteLevel decoder, alone or in a Sequence.
func checkDecoder(file string, raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("tokenizer: %s: key %q: missing (want ByteLevel)", file, "decoder")
	}
	var c component
	if err := decodeKey(file, "decoder", raw, &c); err != nil {
		return err
	}
	if c.Type == "ByteLevel" {
		return nil
	}
	if c.Type == "Sequence" && len(c.Decoders) == 1 {
		var d component
		if err := decodeKey(file, "decoder.decoders[0]", c.Decoders[0], &d); err != nil {
			return err
		}
		if d.Type == "ByteLevel" {
			return nil
		}
	}
	return fmt.Errorf("tokenizer: %s: key %q: unsupported decoder type %q (want ByteLevel)", file, "decoder.type", c.Type)
}

// configJSON holds what we use from tokenizer_config.json.
type configJSON struct {
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	Pad          json.RawMessage `json:"pad_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// tokenName reads a special-token field: a string, {"content": ...}, or null.
func tokenName(file, key string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := decodeKey(file, key, raw, &obj); err != nil {
		return "", err
	}
	return obj.Content, nil
}

// chatTemplate reads chat_template: a string or a list of {name, template}.
func chatTemplate(file string, raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := decodeKey(file, "chat_template", raw, &list); err != nil {
		return "", err
	}
	for _, t := range list {
		if t.Name == "default" {
			return t.Template, nil
		}
	}
	if len(list) > 0 {
		return list[0].Template, nil
	}
	return "", nil
}

// genEOS reads eos_token_id (an int or a list) from generation_config.json.
func genEOS(file string) ([]int32, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var g struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := decodeKey(file, "", b, &g); err != nil {
		return nil, err
	}
	if isNull(g.EOS) {
		return nil, nil
	}
	var one int32
	if json.Unmarshal(g.EOS, &one) == nil {
		return []int32{one}, nil
	}
	var many []int32
	if err := decodeKey(file, "eos_token_id", g.EOS, &many); err != nil {
		return nil, err
	}
	return many, nil
}
