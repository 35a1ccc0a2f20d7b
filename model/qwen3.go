package model

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/graph"
)

// Qwen3: a Llama-style decoder without projection biases that applies an
// RMSNorm over the head dim to each query and key head before RoPE. The head
// dim comes from config.json (head_dim), independent of C/Hq.
// Hugging Face: Qwen3ForCausalLM.

// Qwen3Layer is one Qwen3 decoder layer.
type Qwen3Layer struct {
	Attention
	QNorm *Tensor `st:"model.layers.%d.self_attn.q_norm.weight" shape:"D"` // [D], shared by the Hq heads
	KNorm *Tensor `st:"model.layers.%d.self_attn.k_norm.weight" shape:"D"` // [D], shared by the Hkv heads
	MLP
}

// Qwen3Weights are the host weights of a Qwen3 checkpoint.
type Qwen3Weights struct {
	Head
	Layers []Qwen3Layer `st:"layers"` // [L]
}

// Params lists the distinct tensors (see Weights).
func (w *Qwen3Weights) Params() []*Tensor { return params(w) }

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

// Forward pass: after the projections, every query and key head is
// RMS-normalized over D with q_norm / k_norm (eps = rms_norm_eps), before
// RoPE. v is unchanged.

func (qwen3Arch) layerTensors(l int) []string {
	p := fmt.Sprintf("model.layers.%d.self_attn.", l)
	return []string{p + "q_norm.weight", p + "k_norm.weight"}
}

func (qwen3Arch) qkvGraph(c *gctx, l int, q, k, v *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, *gorgonia.Node, error) {
	norms := c.m.layers[l].extra
	q, err := graph.RMSNorm(q, c.in(norms[0]), c.m.eps)
	if err != nil {
		return nil, nil, nil, err
	}
	if k, err = graph.RMSNorm(k, c.in(norms[1]), c.m.eps); err != nil {
		return nil, nil, nil, err
	}
	return q, k, v, nil
}

func (qwen3Arch) qkvDecode(d *KVCache, l int, q, k, v kernels.Buffer, n int) {
	m, c, norms := d.m, d.m.Config, d.m.layers[l].extra
	m.be.RMSNorm(q, d.scratchRstd(n*c.NumHeads), q, norms[0].W, n*c.NumHeads, c.HeadDim, m.eps)
	m.be.RMSNorm(k, d.scratchRstd(n*c.NumKVHeads), k, norms[1].W, n*c.NumKVHeads, c.HeadDim, m.eps)
}
