package model

import (
	"fmt"
	"math"
)

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

// llama3InvFreq applies Llama-3.1's rope_scaling "llama3" to the float32
// inverse frequencies in place, as Hugging Face's _compute_llama3_parameters
// does (in float32):
//
//	wavelen = 2π/inv[i]; lo = orig/low_freq_factor; hi = orig/high_freq_factor
//	wavelen < hi:  inv[i] unchanged (high frequencies)
//	wavelen > lo:  inv[i] / factor  (low frequencies)
//	otherwise:     s = (orig/wavelen − low_freq_factor)/(high_freq_factor − low_freq_factor)
//	               inv[i] = (1−s)·inv[i]/factor + s·inv[i]
func llama3InvFreq(inv []float32, s RopeScaling) {
	factor := float32(s.Factor)
	lf, hf := float32(s.LowFreqFactor), float32(s.HighFreqFactor)
	orig := float32(s.OriginalMaxPositionEmbeddings)
	lo, hi := orig/lf, orig/hf
	for i, f := range inv {
		wavelen := 2 * float32(math.Pi) / f
		switch {
		case wavelen < hi:
		case wavelen > lo:
			inv[i] = f / factor
		default:
			sm := (orig/wavelen - lf) / (hf - lf)
			inv[i] = (1-sm)*f/factor + sm*f
		}
	}
}
