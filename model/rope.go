package model

// Rotary position embeddings: config.json's rope_scaling (read by
// config.go) adjusts the default inverse frequencies before the kernels
// build the cos/sin tables:
//
//	inv[i] = 1 / theta^(2i/D)         kernels.RopeInvFreq (float32, as Hugging Face)
//	linear: inv[i] / factor            (any architecture)
//	llama3: frequency bands            (llama.go, llama3InvFreq)

import "github.com/argrl/argrl/kernels"

// RopeScaling is a checkpoint's rope_scaling block (config.json).
//
//	Type "llama3" (rope_type or type): Llama-3.1/3.2 frequency smoothing with
//	Factor, LowFreqFactor, HighFreqFactor, OriginalMaxPositionEmbeddings.
//	Type "linear": every frequency divided by Factor.
//	Type "" or "default": no scaling.
//
// Other types (dynamic, yarn, longrope) are refused by ParseConfig.
type RopeScaling struct {
	Type                          string
	Factor                        float64
	LowFreqFactor                 float64
	HighFreqFactor                float64
	OriginalMaxPositionEmbeddings int
}

// ropeInvFreq returns the D/2 float32 inverse frequencies RoPE uses for c,
// rope_scaling applied (nil for an odd head dim).
func (c *Config) ropeInvFreq() []float32 {
	inv := kernels.RopeInvFreq(c.HeadDim, c.RopeTheta)
	if inv == nil {
		return nil
	}
	s := c.RopeScaling
	switch s.Type {
	case "linear":
		f := float32(s.Factor)
		for i := range inv {
			inv[i] /= f
		}
	case "llama3":
		llama3InvFreq(inv, s)
	}
	return inv
}
