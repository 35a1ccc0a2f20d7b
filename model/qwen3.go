package model

import "fmt"

// Qwen3: a Llama-style decoder without projection biases that applies an
// RMSNorm over the head dim to each query and key head before RoPE. The head
// dim comes from config.json (head_dim), independent of C/Hq.
// Hugging Face: Qwen3ForCausalLM.

// Qwen3Layer is one Qwen3 decoder layer.
type Qwen3Layer struct {
	Attention
	QNorm *Param `st:"model.layers.%d.self_attn.q_norm.weight" shape:"D"` // [D], shared by the Hq heads
	KNorm *Param `st:"model.layers.%d.self_attn.k_norm.weight" shape:"D"` // [D], shared by the Hkv heads
	MLP
}

// forward: after the projections, every query and key head is
// RMS-normalized over D with q_norm / k_norm (eps = rms_norm_eps), before
// RoPE. v is unchanged.
func (l *Qwen3Layer) forward(o ops, x act, layer int) act {
	q, k, v := l.project(o, x)
	q, k = o.rmsNorm(q, l.QNorm), o.rmsNorm(k, l.KNorm)
	return l.MLP.forward(o, l.attend(o, x, q, k, v, layer))
}

// Qwen3Weights is a Qwen3 checkpoint on a backend.
type Qwen3Weights struct {
	Head
	Layers []Qwen3Layer `st:"layers"` // [L]
}

func (w *Qwen3Weights) numLayers() int           { return len(w.Layers) }
func (w *Qwen3Weights) layer(i int) decoderLayer { return &w.Layers[i] }

type qwen3Arch struct{}

func (qwen3Arch) CheckConfig(c *Config) error {
	if c.AttentionBias {
		return fmt.Errorf("key \"attention_bias\": true is not supported for qwen3")
	}
	return nil
}

func (qwen3Arch) NewWeights(c *Config) Weights {
	return &Qwen3Weights{Layers: make([]Qwen3Layer, c.NumLayers)}
}

func init() { Register("qwen3", qwen3Arch{}) }
