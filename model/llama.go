package model

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// Llama (3.x): the plain pre-norm decoder: no biases, optional Llama-3 RoPE
// frequency scaling (Config.RopeInvFreq), often tied embeddings (3.2 1B/3B).
// Hugging Face: LlamaForCausalLM.

// LlamaLayer is one Llama decoder layer.
type LlamaLayer struct {
	Attention
	MLP
}

// LlamaWeights are the host weights of a Llama checkpoint.
type LlamaWeights struct {
	Head
	Layers []LlamaLayer `st:"layers"` // [L]
}

// Params lists the distinct tensors (see Weights).
func (w *LlamaWeights) Params() []*Tensor { return params(w) }

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

// Forward pass: nothing beyond the shared decoder; the Llama-3 frequency
// scaling lives in the RoPE tables (kernels.RopeTables with
// Config.RopeScaling), built once in Open.

func (llamaArch) layerTensors(int) []string { return nil }

func (llamaArch) qkvGraph(_ *gctx, _ int, q, k, v *gorgonia.Node) (*gorgonia.Node, *gorgonia.Node, *gorgonia.Node, error) {
	return q, k, v, nil
}

func (llamaArch) qkvDecode(*KVCache, int, kernels.Buffer, kernels.Buffer, kernels.Buffer, int) {}
