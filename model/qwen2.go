package model

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/graph"
)

// Qwen2 (and Qwen2.5): a Llama-style decoder whose q, k and v projections
// carry biases (o_proj does not). Hugging Face: Qwen2ForCausalLM.

// Qwen2Layer is one Qwen2 decoder layer.
type Qwen2Layer struct {
	Attention
	QBias *Tensor `st:"model.layers.%d.self_attn.q_proj.bias" shape:"Hq*D"`  // [Hq·D]
	KBias *Tensor `st:"model.layers.%d.self_attn.k_proj.bias" shape:"Hkv*D"` // [Hkv·D]
	VBias *Tensor `st:"model.layers.%d.self_attn.v_proj.bias" shape:"Hkv*D"` // [Hkv·D]
	MLP
}

// Qwen2Weights are the host weights of a Qwen2 checkpoint.
type Qwen2Weights struct {
	Head
	Layers []Qwen2Layer `st:"layers"` // [L]
}

// Params lists the distinct tensors (see Weights).
func (w *Qwen2Weights) Params() []*Tensor { return params(w) }

type qwen2Arch struct{}

func (qwen2Arch) CheckConfig(c *Config) error {
	c.AttentionBias = true // Qwen2Attention always has q/k/v biases
	return nil
}

func (qwen2Arch) NewWeights(c *Config) Weights {
	return &Qwen2Weights{Layers: make([]Qwen2Layer, c.NumLayers)}
}

func init() { Register("qwen2", qwen2Arch{}) }

// Forward pass: q, k and v get their biases after the projection (and its
// LoRA branch): y = (x·Wᵀ + (α/r)·B A x) + b.

func (qwen2Arch) layerTensors(l int) []string {
	p := fmt.Sprintf("model.layers.%d.self_attn.", l)
	return []string{p + "q_proj.bias", p + "k_proj.bias", p + "v_proj.bias"}
}

func (qwen2Arch) qkvGraph(c *gctx, l int, q, k, v *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, *gorgonia.Node, error) {
	out := [3]*gorgonia.Node{q, k, v}
	for i, b := range c.m.layers[l].extra {
		var err error
		if out[i], err = graph.AddBias(out[i], c.in(b)); err != nil {
			return nil, nil, nil, err
		}
	}
	return out[0], out[1], out[2], nil
}

func (qwen2Arch) qkvDecode(d *KVCache, l int, q, k, v kernels.Buffer, n int) {
	c, bias := d.m.Config, d.m.layers[l].extra
	d.m.be.AddBias(q, q, bias[0].W, n, c.NumHeads*c.HeadDim)
	d.m.be.AddBias(k, k, bias[1].W, n, c.NumKVHeads*c.HeadDim)
	d.m.be.AddBias(v, v, bias[2].W, n, c.NumKVHeads*c.HeadDim)
}
