package kernels

import (
	"fmt"
	"math"
)

// RopeScaling is a checkpoint's rope_scaling block (config.json).
//
//	Type "llama3" (rope_type or type): Llama-3.1/3.2 frequency smoothing with
//	Factor, LowFreqFactor, HighFreqFactor, OriginalMaxPositionEmbeddings.
//	Type "linear": every frequency divided by Factor.
//	Type "" or "default": no scaling.
//
// Other types (dynamic, yarn, longrope) are refused by Validate.
type RopeScaling struct {
	Type                          string  `json:"rope_type"`
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
}

// Validate reports an unsupported type or inconsistent parameters.
func (s *RopeScaling) Validate() error {
	if s == nil {
		return nil
	}
	switch s.Type {
	case "", "default":
		return nil
	case "linear":
		if !(s.Factor > 0) {
			return fmt.Errorf("rope_scaling: linear needs factor > 0, got %v", s.Factor)
		}
		return nil
	case "llama3":
		if !(s.Factor > 0) || !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) || s.OriginalMaxPositionEmbeddings <= 0 {
			return fmt.Errorf("rope_scaling: llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0, got %+v", *s)
		}
		return nil
	}
	return fmt.Errorf("rope_scaling: unsupported rope_type %q (supported: default, linear, llama3)", s.Type)
}

// RopeInvFreq returns the D/2 inverse frequencies, computed in float32 the
// way Hugging Face transformers does (so tables match its cos/sin bit for
// bit up to the final cos/sin rounding):
//
//	inv[i] = 1 / theta^(float32(2i)/D)                       (float32)
//	llama3: wavelen = 2π/inv[i]; lo = orig/low_freq_factor; hi = orig/high_freq_factor
//	  wavelen < hi:  inv[i] unchanged
//	  wavelen > lo:  inv[i] / factor
//	  otherwise:     s = (orig/wavelen − low_freq_factor)/(high_freq_factor − low_freq_factor)
//	                 inv[i] = (1−s)·inv[i]/factor + s·inv[i]
//	linear: inv[i] / factor
func RopeInvFreq(D int, theta float64, scaling *RopeScaling) []float32 {
	if D <= 0 || D%2 != 0 {
		return nil
	}
	inv := make([]float32, D/2)
	for i := range inv {
		e := float32(2*i) / float32(D)
		inv[i] = 1 / float32(math.Pow(theta, float64(e)))
	}
	if scaling == nil {
		return inv
	}
	switch scaling.Type {
	case "linear":
		f := float32(scaling.Factor)
		for i := range inv {
			inv[i] /= f
		}
	case "llama3":
		factor := float32(scaling.Factor)
		lf, hf := float32(scaling.LowFreqFactor), float32(scaling.HighFreqFactor)
		orig := float32(scaling.OriginalMaxPositionEmbeddings)
		lo, hi := orig/lf, orig/hf
		for i, f := range inv {
			wavelen := 2 * float32(math.Pi) / f
			switch {
			case wavelen < hi:
			case wavelen > lo:
				inv[i] = f / factor
			default:
				s := (orig/wavelen - lf) / (hf - lf)
				inv[i] = (1-s)*f/factor + s*f
			}
		}
	}
	return inv
}

// RopeTables returns the cos and sin tables [maxPos, D/2] that RoPE reads:
//
//	for p := 0; p < maxPos; p++ {
//		for i := 0; i < D/2; i++ {
//			a := float32(p) * inv[i]                  // float32 product, as HF
//			cos[p*D/2+i] = float32(math.Cos(float64(a)))
//			sin[p*D/2+i] = float32(math.Sin(float64(a)))
//		}
//	}
//
// with inv = RopeInvFreq(D, theta, scaling). It returns nil tables when D is
// not a positive even number or maxPos < 0; check scaling.Validate() first.
func RopeTables(D, maxPos int, theta float64, scaling *RopeScaling) (cos, sin []float32) {
	inv := RopeInvFreq(D, theta, scaling)
	if inv == nil || maxPos < 0 {
		return nil, nil
	}
	h := D / 2
	cos = make([]float32, maxPos*h)
	sin = make([]float32, maxPos*h)
	for p := 0; p < maxPos; p++ {
		for i := 0; i < h; i++ {
			a := float32(p) * inv[i]
			cos[p*h+i] = float32(math.Cos(float64(a)))
			sin[p*h+i] = float32(math.Sin(float64(a)))
		}
	}
	return cos, sin
}
