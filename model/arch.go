package model

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/argrl/argrl/model/safetensors"
)

// Arch is one decoder architecture, registered under its Hugging Face
// model_type by the file that implements it (qwen2.go, qwen3.go, llama.go).
type Arch interface {
	// CheckConfig rejects config values the architecture does not
	// implement, naming the key, and fills fields the architecture fixes
	// (qwen2 always has q/k/v biases).
	CheckConfig(c *Config) error
	// NewWeights returns the architecture's empty weight struct for c, with
	// c.NumLayers layers allocated. LoadWeights fills its tagged fields.
	NewWeights(c *Config) Weights
}

// Weights is a loaded weight struct of one architecture. Its *Tensor fields
// carry struct tags:
//
//	st:"model.layers.%d.self_attn.q_proj.weight"  checkpoint name (%d = layer)
//	shape:"Hq*D,C"                               expected shape over V, C, F, Hq, Hkv, D
//	tied:"model.embed_tokens.weight"             with tie_word_embeddings, share that tensor
//
// Layers live in a slice field tagged st:"layers".
type Weights interface {
	// Params lists every distinct tensor in declaration order (a tied
	// lm_head is the embedding and appears once).
	Params() []*Tensor
}

var registry = struct {
	sync.Mutex
	m map[string]Arch
}{m: map[string]Arch{}}

// Register makes an architecture available under a config.json model_type.
// Architectures call it from init. Registering a name twice keeps the later one.
func Register(name string, a Arch) {
	registry.Lock()
	defer registry.Unlock()
	registry.m[name] = a
}

// ArchNames lists the registered model types, sorted.
func ArchNames() []string {
	registry.Lock()
	defer registry.Unlock()
	out := make([]string, 0, len(registry.m))
	for n := range registry.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// LookupArch returns the architecture registered for model_type name.
func LookupArch(name string) (Arch, error) { return lookupArch(name) }

func lookupArch(name string) (Arch, error) {
	registry.Lock()
	a, ok := registry.m[name]
	registry.Unlock()
	if !ok {
		return nil, fmt.Errorf("unsupported model_type %q (supported: %s)", name, supportedTypes())
	}
	return a, nil
}

// Checkpoint is a Hugging Face model directory loaded into host memory.
type Checkpoint struct {
	Dir     string
	Config  *Config
	Weights Weights // *Qwen2Weights, *Qwen3Weights or *LlamaWeights
}

// Load reads dir/config.json and the directory's safetensors checkpoint
// (single or sharded), checks every tensor against the config and converts
// the weights to float32. The files are unmapped before it returns.
func Load(dir string) (*Checkpoint, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer set.Close()
	w, err := LoadWeights(cfg, set)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{Dir: dir, Config: cfg, Weights: w}, nil
}
