package model

import "fmt"

// Llama (3.x): the plain pre-norm decoder: no biases, optional Llama-3 RoPE
// frequency scaling (rope_scaling), often tied
// embeddings (3.2 1B/3B). Hugging Face: LlamaForCausalLM.

// LlamaLayer is one Llama decoder layer.
type LlamaLayer struct {
	Attention
	MLP
}

// forward is the shared decoder layer, nothing added.
func (l *LlamaLayer) forward(o ops, x act, layer int) act {
	q, k, v := l.project(o, x)
	return l.MLP.forward(o, l.attend(o, x, q, k, v, layer))
}

// LlamaWeights is a Llama checkpoint on a backend.
type LlamaWeights struct {
	Head
	Layers []LlamaLayer `st:"layers"` // [L]
}

func (w *LlamaWeights) numLayers() int           { return len(w.Layers) }
func (w *LlamaWeights) layer(i int) decoderLayer { return &w.Layers[i] }

type llamaArch struct{}

func (llamaArch) CheckConfig(c *Config) error {
	if c.AttentionBias {
		return fmt.Errorf("key \"attention_bias\": true is not supported for llama")
	}
	return nil
}

func (llamaArch) NewWeights(c *Config) Weights {
	return &LlamaWeights{Layers: make([]LlamaLayer, c.NumLayers)}
}

func init() { Register("llama", llamaArch{}) }
