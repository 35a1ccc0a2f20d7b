package model

// Qwen2 (and Qwen2.5): a Llama-style decoder whose q, k and v projections
// carry biases (o_proj does not). Hugging Face: Qwen2ForCausalLM.

// Qwen2Layer is one Qwen2 decoder layer.
type Qwen2Layer struct {
	Attention
	QBias *Param `st:"model.layers.%d.self_attn.q_proj.bias" shape:"Hq*D"`  // [Hq·D]
	KBias *Param `st:"model.layers.%d.self_attn.k_proj.bias" shape:"Hkv*D"` // [Hkv·D]
	VBias *Param `st:"model.layers.%d.self_attn.v_proj.bias" shape:"Hkv*D"` // [Hkv·D]
	MLP
}

// forward: q, k and v get their biases after the projection (and its LoRA
// branch): y = (x·Wᵀ + (α/r)·B A x) + b; or, folded into a fused GEMM in
// the CUDA bf16 modes (fused.go), y = (x·Wᵀ + b) + (α/r)·B A x.
func (l *Qwen2Layer) forward(o ops, x act, layer int) act {
	q, k, v := l.projectBias(o, x, l.QBias, l.KBias, l.VBias)
	return l.MLP.forward(o, l.attend(o, x, q, k, v, layer))
}

// Qwen2Weights is a Qwen2 checkpoint on a backend.
type Qwen2Weights struct {
	Head
	Layers []Qwen2Layer `st:"layers"` // [L]
}

func (w *Qwen2Weights) numLayers() int           { return len(w.Layers) }
func (w *Qwen2Weights) layer(i int) decoderLayer { return &w.Layers[i] }

type qwen2Arch struct{}

func (qwen2Arch) CheckConfig(c *Config) error {
	c.AttentionBias = true // Qwen2Attention always has q/k/v biases
	return nil
}

func (qwen2Arch) NewWeights(c *Config) Weights {
	return &Qwen2Weights{Layers: make([]Qwen2Layer, c.NumLayers)}
}

func init() { Register("qwen2", qwen2Arch{}) }
