// Package model loads Hugging Face decoder checkpoints (Qwen2/2.5, Qwen3,
// Llama-3.x) and their LoRA adapters, and runs them on a kernels.Backend.
//
// Shape legend, used in every file of this package:
//
//	B  batch (sequences)       T   time (tokens per sequence)
//	C  hidden size             F   MLP intermediate size
//	Hq query heads             Hkv key/value heads (GQA: Hq % Hkv == 0)
//	D  head dim                V   vocabulary size
//	L  layers                  r   LoRA rank
//
// Weights follow the Hugging Face Linear layout W[out, in]: y = x·Wᵀ.
package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// Config is the part of a Hugging Face config.json that argrl's decoders
// read. Missing optional keys take the Hugging Face defaults of the model
// type; values argrl does not implement are rejected by ParseConfig.
type Config struct {
	Path      string // file it was read from (for error messages)
	ModelType string // model_type: "qwen2", "qwen3" or "llama"

	HiddenSize        int         // C
	IntermediateSize  int         // F
	NumHeads          int         // Hq (num_attention_heads)
	NumKVHeads        int         // Hkv (num_key_value_heads; default Hq)
	HeadDim           int         // D (head_dim; default C/Hq, qwen3 default 128)
	NumLayers         int         // L (num_hidden_layers)
	VocabSize         int         // V
	MaxPositions      int         // max_position_embeddings
	RMSNormEps        float64     // rms_norm_eps
	RopeTheta         float64     // rope_theta
	RopeScaling       RopeScaling // rope_scaling; Type "" when absent (rope.go)
	TieWordEmbeddings bool        // tie_word_embeddings: lm_head shares the embedding
	AttentionBias     bool        // q/k/v biases: always true for qwen2, attention_bias otherwise
	TorchDType        string      // torch_dtype (or dtype): "bfloat16", "float32", ...

	BOSTokenID  int   // -1 when absent or null
	EOSTokenIDs []int // eos_token_id, an int or a list
}

// LoadConfig reads and validates dir/config.json or a config file path.
func LoadConfig(path string) (*Config, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = strings.TrimSuffix(path, "/") + "/config.json"
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return ParseConfig(raw, path)
}

// configReader decodes keys of one config object and names the file and key
// in every error.
type configReader struct {
	path   string
	prefix string // "rope_scaling." inside that block
	m      map[string]json.RawMessage
}

func (r *configReader) errf(key, format string, args ...any) error {
	return fmt.Errorf("model: %s: key %q: %s", r.path, r.prefix+key, fmt.Sprintf(format, args...))
}

func (r *configReader) present(key string) bool {
	v, ok := r.m[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// get decodes key into dst; a missing or null key leaves dst unchanged and
// is an error only when required.
func (r *configReader) get(key string, dst any, required bool) error {
	if !r.present(key) {
		if required {
			return fmt.Errorf("model: %s: required key %q is missing", r.path, r.prefix+key)
		}
		return nil
	}
	if err := json.Unmarshal(r.m[key], dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return r.errf(key, "expected %s, got JSON %s", te.Type, te.Value)
		}
		return r.errf(key, "%v", err)
	}
	return nil
}

func (r *configReader) positive(key string, dst *int, required bool) error {
	if err := r.get(key, dst, required); err != nil {
		return err
	}
	if r.present(key) && *dst <= 0 {
		return r.errf(key, "must be positive, got %d", *dst)
	}
	return nil
}

// ParseConfig parses a config.json held in raw; path names it in errors.
func ParseConfig(raw []byte, path string) (*Config, error) {
	r := &configReader{path: path}
	if err := json.Unmarshal(raw, &r.m); err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	c := &Config{Path: path, BOSTokenID: -1}
	if err := r.get("model_type", &c.ModelType, true); err != nil {
		return nil, err
	}
	arch, err := lookupArch(c.ModelType)
	if err != nil {
		return nil, fmt.Errorf("model: %s: key \"model_type\": %w", path, err)
	}
	// Hugging Face defaults that differ by architecture.
	c.RMSNormEps = 1e-6
	c.RopeTheta = 10000
	c.MaxPositions = 2048 // LlamaConfig
	if c.ModelType == "qwen2" || c.ModelType == "qwen3" {
		c.MaxPositions = 32768
	}
	for _, k := range []struct {
		key string
		dst *int
	}{
		{"hidden_size", &c.HiddenSize}, {"intermediate_size", &c.IntermediateSize},
		{"num_attention_heads", &c.NumHeads}, {"num_hidden_layers", &c.NumLayers},
		{"vocab_size", &c.VocabSize},
	} {
		if err := r.positive(k.key, k.dst, true); err != nil {
			return nil, err
		}
	}
	c.NumKVHeads = c.NumHeads
	if err := r.positive("num_key_value_heads", &c.NumKVHeads, false); err != nil {
		return nil, err
	}
	if err := r.positive("max_position_embeddings", &c.MaxPositions, false); err != nil {
		return nil, err
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return nil, r.errf("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKVHeads, c.NumHeads)
	}
	if err := r.positive("head_dim", &c.HeadDim, false); err != nil {
		return nil, err
	}
	if c.HeadDim == 0 {
		if c.ModelType == "qwen3" {
			c.HeadDim = 128 // Qwen3Config's default
		} else {
			if c.HiddenSize%c.NumHeads != 0 {
				return nil, r.errf("num_attention_heads", "%d does not divide hidden_size %d (and head_dim is absent)", c.NumHeads, c.HiddenSize)
			}
			c.HeadDim = c.HiddenSize / c.NumHeads
		}
	}
	if c.HeadDim%2 != 0 {
		return nil, r.errf("head_dim", "rotary embeddings need an even head dim, got %d", c.HeadDim)
	}
	for _, k := range []struct {
		key string
		dst *float64
	}{{"rms_norm_eps", &c.RMSNormEps}, {"rope_theta", &c.RopeTheta}} {
		if err := r.get(k.key, k.dst, false); err != nil {
			return nil, err
		}
		if !(*k.dst > 0) || math.IsInf(*k.dst, 0) {
			return nil, r.errf(k.key, "must be a positive number, got %v", *k.dst)
		}
	}
	if err := r.get("tie_word_embeddings", &c.TieWordEmbeddings, false); err != nil {
		return nil, err
	}
	if err := r.get("attention_bias", &c.AttentionBias, false); err != nil {
		return nil, err
	}
	if err := r.get("torch_dtype", &c.TorchDType, false); err != nil {
		return nil, err
	}
	if c.TorchDType == "" {
		if err := r.get("dtype", &c.TorchDType, false); err != nil {
			return nil, err
		}
	}
	act := "silu"
	if err := r.get("hidden_act", &act, false); err != nil {
		return nil, err
	}
	if act != "silu" {
		return nil, r.errf("hidden_act", "%q is not supported (only \"silu\")", act)
	}
	var sliding bool
	if err := r.get("use_sliding_window", &sliding, false); err != nil {
		return nil, err
	}
	if sliding {
		return nil, r.errf("use_sliding_window", "sliding-window attention is not supported")
	}
	if err := readRopeScaling(r, c); err != nil {
		return nil, err
	}
	if err := readTokenIDs(r, c); err != nil {
		return nil, err
	}
	for _, key := range []string{"mlp_bias"} {
		var b bool
		if err := r.get(key, &b, false); err != nil {
			return nil, err
		}
		if b {
			return nil, r.errf(key, "true is not supported")
		}
	}
	if err := arch.CheckConfig(c); err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	return c, nil
}

func readRopeScaling(r *configReader, c *Config) error {
	if !r.present("rope_scaling") {
		return nil
	}
	sub := &configReader{path: r.path, prefix: "rope_scaling."}
	if err := json.Unmarshal(r.m["rope_scaling"], &sub.m); err != nil {
		return r.errf("rope_scaling", "expected an object or null: %v", err)
	}
	var typ string
	typKey := "rope_type"
	for _, key := range []string{"rope_type", "type"} { // "type" is the older spelling
		if err := sub.get(key, &typ, false); err != nil {
			return err
		}
		if typ != "" {
			typKey = key
			break
		}
	}
	switch typ {
	case "", "default":
		return nil
	case "llama3", "linear":
	default:
		return sub.errf(typKey, "%q is not supported (supported: llama3, linear, default)", typ)
	}
	s := RopeScaling{Type: typ}
	if err := sub.get("factor", &s.Factor, true); err != nil {
		return err
	}
	if !(s.Factor > 0) {
		return sub.errf("factor", "must be positive, got %v", s.Factor)
	}
	if typ == "linear" {
		c.RopeScaling = s
		return nil
	}
	for _, f := range []struct {
		key string
		dst *float64
	}{{"low_freq_factor", &s.LowFreqFactor}, {"high_freq_factor", &s.HighFreqFactor}} {
		if err := sub.get(f.key, f.dst, true); err != nil {
			return err
		}
		if !(*f.dst > 0) {
			return sub.errf(f.key, "must be positive, got %v", *f.dst)
		}
	}
	if err := sub.positive("original_max_position_embeddings", &s.OriginalMaxPositionEmbeddings, true); err != nil {
		return err
	}
	if s.HighFreqFactor <= s.LowFreqFactor {
		return sub.errf("high_freq_factor", "%v must exceed low_freq_factor %v", s.HighFreqFactor, s.LowFreqFactor)
	}
	c.RopeScaling = s
	return nil
}

func readTokenIDs(r *configReader, c *Config) error {
	if err := r.get("bos_token_id", &c.BOSTokenID, false); err != nil {
		return err
	}
	if !r.present("eos_token_id") {
		return nil
	}
	var one int
	if err := json.Unmarshal(r.m["eos_token_id"], &one); err == nil {
		c.EOSTokenIDs = []int{one}
		return nil
	}
	if err := json.Unmarshal(r.m["eos_token_id"], &c.EOSTokenIDs); err != nil {
		return r.errf("eos_token_id", "expected an integer or a list of integers")
	}
	return nil
}

// RopeInvFreq returns the D/2 rotary inverse frequencies in float64, the
// precise reference (the model builds its float32 tables, as Hugging Face
// does, from ropeInvFreq, rope.go):
// inv_freq[i] = rope_theta^(−2i/D), divided by factor for "linear", and for
// "llama3" adjusted as in Hugging Face's _compute_llama3_parameters:
//
//	wavelen = 2π / inv_freq
//	wavelen < orig/high_freq_factor      → unchanged (high frequencies)
//	wavelen > orig/low_freq_factor       → inv_freq / factor (low frequencies)
//	otherwise, s = (orig/wavelen − low)/(high − low):
//	                                       (1−s)·inv_freq/factor + s·inv_freq
//
// Position p, pair i rotates by angle p·inv_freq[i] (rotate-half layout).
func (c *Config) RopeInvFreq() []float64 {
	half := c.HeadDim / 2
	out := make([]float64, half)
	for i := range out {
		out[i] = 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
	}
	s := c.RopeScaling
	if s.Type == "linear" {
		for i := range out {
			out[i] /= s.Factor
		}
	}
	if s.Type != "llama3" {
		return out
	}
	orig := float64(s.OriginalMaxPositionEmbeddings)
	lowWave, highWave := orig/s.LowFreqFactor, orig/s.HighFreqFactor
	for i, f := range out {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
		case wave > lowWave:
			out[i] = f / s.Factor
		default:
			sm := (orig/wave - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			out[i] = (1-sm)*f/s.Factor + sm*f
		}
	}
	return out
}

// String summarizes the dimensions, for logs.
func (c *Config) String() string {
	return fmt.Sprintf("%s L=%d C=%d F=%d Hq=%d Hkv=%d D=%d V=%d tied=%v", c.ModelType, c.NumLayers,
		c.HiddenSize, c.IntermediateSize, c.NumHeads, c.NumKVHeads, c.HeadDim, c.VocabSize, c.TieWordEmbeddings)
}
