package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const fixtures = "../testdata/models"

// fixtureNames lists the committed fixture models.
var fixtureNames = []string{"qwen2-f32", "qwen2-bf16-tied", "qwen3-f32-tied", "qwen3-bf16-sharded", "llama-f32", "llama-bf16-tied"}

type reference struct {
	Tokens       [][]int            `json:"tokens"`
	Logprobs     [][]*float64       `json:"logprobs"`
	LoraLogprobs [][]*float64       `json:"lora_logprobs"`
	RopeInvFreq  []float64          `json:"rope_inv_freq"`
	TensorSums   map[string]float64 `json:"tensor_sums"`
	AdapterSums  map[string]float64 `json:"adapter_sums"`
	Lora         struct {
		R            int
		Alpha, Scale float64
		Targets      []string
	} `json:"lora"`
}

func loadReference(t *testing.T, name string) *reference {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, name, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestFixtureConfigs(t *testing.T) {
	want := map[string]Config{
		"qwen2-f32":          {ModelType: "qwen2", HiddenSize: 64, IntermediateSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 16, NumLayers: 2, VocabSize: 320, MaxPositions: 128, RMSNormEps: 1e-6, RopeTheta: 1e6, AttentionBias: true, TorchDType: "float32", BOSTokenID: 1, EOSTokenIDs: []int{2}},
		"qwen2-bf16-tied":    {ModelType: "qwen2", HiddenSize: 64, IntermediateSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 16, NumLayers: 2, VocabSize: 320, MaxPositions: 128, RMSNormEps: 1e-6, RopeTheta: 1e6, AttentionBias: true, TieWordEmbeddings: true, TorchDType: "bfloat16", BOSTokenID: 1, EOSTokenIDs: []int{2}},
		"qwen3-f32-tied":     {ModelType: "qwen3", HiddenSize: 64, IntermediateSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 32, NumLayers: 2, VocabSize: 320, MaxPositions: 128, RMSNormEps: 1e-6, RopeTheta: 1e6, TieWordEmbeddings: true, TorchDType: "float32", BOSTokenID: 1, EOSTokenIDs: []int{2}},
		"qwen3-bf16-sharded": {ModelType: "qwen3", HiddenSize: 64, IntermediateSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 32, NumLayers: 2, VocabSize: 320, MaxPositions: 128, RMSNormEps: 1e-6, RopeTheta: 1e6, TorchDType: "bfloat16", BOSTokenID: 1, EOSTokenIDs: []int{2}},
		"llama-f32":          {ModelType: "llama", HiddenSize: 64, IntermediateSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 16, NumLayers: 2, VocabSize: 320, MaxPositions: 128, RMSNormEps: 1e-5, RopeTheta: 5e5, TorchDType: "float32", BOSTokenID: 1, EOSTokenIDs: []int{2, 3}, RopeScaling: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64}},
		"llama-bf16-tied":    {ModelType: "llama", HiddenSize: 64, IntermediateSize: 128, NumHeads: 4, NumKVHeads: 2, HeadDim: 16, NumLayers: 2, VocabSize: 320, MaxPositions: 128, RMSNormEps: 1e-5, RopeTheta: 5e5, TieWordEmbeddings: true, TorchDType: "bfloat16", BOSTokenID: 1, EOSTokenIDs: []int{2, 3}, RopeScaling: RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64}},
	}
	for _, name := range fixtureNames {
		c, err := LoadConfig(filepath.Join(fixtures, name))
		if err != nil {
			t.Fatal(err)
		}
		w := want[name]
		w.Path = c.Path
		if got, exp := *c, w; !equalConfig(got, exp) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, exp)
		}
		// Rotary frequencies (with Llama-3 scaling) agree with the torch reference.
		ref := loadReference(t, name)
		inv := c.RopeInvFreq()
		if len(inv) != len(ref.RopeInvFreq) {
			t.Fatalf("%s: %d inv_freq, reference has %d", name, len(inv), len(ref.RopeInvFreq))
		}
		// The kernels' float32 tables (computed as Hugging Face does) agree too.
		inv32 := c.ropeInvFreq()
		for i := range inv {
			if math.Abs(inv[i]-ref.RopeInvFreq[i]) > 1e-15*math.Max(1, ref.RopeInvFreq[i]) {
				t.Errorf("%s: inv_freq[%d] = %v, torch %v", name, i, inv[i], ref.RopeInvFreq[i])
			}
			if math.Abs(float64(inv32[i])-ref.RopeInvFreq[i]) > 1e-6*ref.RopeInvFreq[i] {
				t.Errorf("%s: kernels inv_freq[%d] = %v, torch %v", name, i, inv32[i], ref.RopeInvFreq[i])
			}
		}
	}
}

func equalConfig(a, b Config) bool {
	return reflect.DeepEqual(a, b)
}

// The Llama-3 scaling leaves high frequencies alone, divides low ones by
// the factor and blends the band between (checked here on the fixture).
func TestRopeLlama3Bands(t *testing.T) {
	c, err := LoadConfig(filepath.Join(fixtures, "llama-f32"))
	if err != nil {
		t.Fatal(err)
	}
	plain := *c
	plain.RopeScaling = RopeScaling{}
	s, p := c.RopeInvFreq(), plain.RopeInvFreq()
	if s[0] != p[0] {
		t.Errorf("high frequency changed: %v vs %v", s[0], p[0])
	}
	if s[1] >= p[1] || s[1] <= p[1]/8 {
		t.Errorf("medium frequency not blended: %v vs %v", s[1], p[1])
	}
	for i := 2; i < len(s); i++ {
		if math.Abs(s[i]-p[i]/8) > 1e-18 {
			t.Errorf("low frequency %d: %v, want %v", i, s[i], p[i]/8)
		}
	}
}

func TestRopeLinear(t *testing.T) {
	c, err := ParseConfig(withKey(t, "rope_scaling", `{"type": "linear", "factor": 4}`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	plain := *c
	plain.RopeScaling = RopeScaling{}
	s, p := c.RopeInvFreq(), plain.RopeInvFreq()
	for i := range s {
		if s[i] != p[i]/4 {
			t.Errorf("linear inv_freq[%d] = %v, want %v", i, s[i], p[i]/4)
		}
	}
}

const goodConfig = `{"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 320,
 "rms_norm_eps": 1e-6, "rope_theta": 10000, "tie_word_embeddings": false, "hidden_act": "silu"}`

// withKey returns goodConfig with key set to the raw JSON value (or removed when value is "").
func withKey(t *testing.T, key, value string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(goodConfig), &m); err != nil {
		t.Fatal(err)
	}
	if value == "" {
		delete(m, key)
	} else {
		m[key] = json.RawMessage(value)
	}
	b, _ := json.Marshal(m)
	return b
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		key, value, want string
	}{
		{"model_type", `"mistral"`, `key "model_type": unsupported model_type "mistral" (supported: llama, qwen2, qwen3)`},
		{"model_type", "", `required key "model_type" is missing`},
		{"hidden_size", "", `required key "hidden_size" is missing`},
		{"hidden_size", `"64"`, `key "hidden_size": expected int, got JSON string`},
		{"num_hidden_layers", `0`, `key "num_hidden_layers": must be positive`},
		{"num_key_value_heads", `3`, `key "num_key_value_heads": 3 does not divide num_attention_heads 4`},
		{"hidden_act", `"gelu"`, `key "hidden_act": "gelu" is not supported`},
		{"use_sliding_window", `true`, `key "use_sliding_window": sliding-window attention is not supported`},
		{"rope_scaling", `{"rope_type": "yarn", "factor": 4.0}`, `key "rope_scaling.rope_type": "yarn" is not supported`},
		{"rope_scaling", `{"type": "dynamic", "factor": 2.0}`, `key "rope_scaling.type": "dynamic" is not supported`},
		{"rope_scaling", `{"rope_type": "linear"}`, `required key "rope_scaling.factor" is missing`},
		{"rope_scaling", `{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}`, `required key "rope_scaling.original_max_position_embeddings" is missing`},
		{"rope_scaling", `{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}`, `key "rope_scaling.high_freq_factor": 1 must exceed low_freq_factor 4`},
		{"rope_scaling", `[1]`, `key "rope_scaling": expected an object or null`},
		{"rms_norm_eps", `-1`, `key "rms_norm_eps": must be a positive number`},
		{"head_dim", `15`, `key "head_dim": rotary embeddings need an even head dim, got 15`},
		{"eos_token_id", `"x"`, `key "eos_token_id": expected an integer or a list of integers`},
		{"mlp_bias", `true`, `key "mlp_bias": true is not supported`},
	}
	for _, c := range cases {
		_, err := ParseConfig(withKey(t, c.key, c.value), "dir/config.json")
		if err == nil {
			t.Errorf("%s=%s accepted", c.key, c.value)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "dir/config.json") {
			t.Errorf("%s=%s: error %q lacks %q or the file name", c.key, c.value, err, c.want)
		}
	}
	if _, err := ParseConfig([]byte(`{"model_type": `), "x/config.json"); err == nil || !strings.Contains(err.Error(), "x/config.json") {
		t.Errorf("bad JSON: %v", err)
	}
	for _, arch := range []string{"qwen3", "llama"} {
		raw := withKey(t, "attention_bias", "true")
		raw = []byte(strings.Replace(string(raw), `"qwen2"`, `"`+arch+`"`, 1))
		if _, err := ParseConfig(raw, "c.json"); err == nil || !strings.Contains(err.Error(), `key "attention_bias": true is not supported for `+arch) {
			t.Errorf("%s attention_bias: %v", arch, err)
		}
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing file: %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	raw := []byte(`{"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
		"num_hidden_layers": 2, "vocab_size": 320, "dtype": "bfloat16", "rope_scaling": {"rope_type": "default"}, "bos_token_id": null}`)
	c, err := ParseConfig(raw, "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDim != 128 || c.NumKVHeads != 4 || c.RMSNormEps != 1e-6 || c.RopeTheta != 10000 || c.TorchDType != "bfloat16" ||
		c.BOSTokenID != -1 || c.EOSTokenIDs != nil || c.RopeScaling.Type != "" || c.MaxPositions != 32768 || c.AttentionBias {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ParseConfig(withKey(t, "attention_bias", "false"), "c.json")
	if err != nil || !c.AttentionBias || c.HeadDim != 16 {
		t.Errorf("qwen2 always has q/k/v bias and D = C/Hq: %+v %v", c, err)
	}
}

// The benchmark model's config (weights are generated at bench time by
// testdata/make_fixtures.py --small DIR) parses and sizes as documented.
func TestSmallBenchConfig(t *testing.T) {
	c, err := LoadConfig("../testdata/bench/small")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := Specs(c)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range specs {
		n += prod(s.Shape)
	}
	if c.NumLayers != 8 || c.HiddenSize != 512 || n != 28326400 {
		t.Errorf("%v: %d parameters, want 28326400", c, n)
	}
}
