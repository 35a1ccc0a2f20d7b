package kernels

import "math"

// RopeInvFreq returns the D/2 default rotary inverse frequencies, computed
// in float32 the way Hugging Face transformers does (so that tables match
// its cos/sin up to the final rounding), or nil unless D is positive and
// even:
//
//	inv[i] = 1 / theta^(float32(2i)/D)        (float32)
//
// Frequency scaling (a checkpoint's rope_scaling) is model knowledge: the
// model adjusts these before building the tables.
func RopeInvFreq(D int, theta float64) []float32 {
	if D <= 0 || D%2 != 0 {
		return nil
	}
	inv := make([]float32, D/2)
	for i := range inv {
		e := float32(2*i) / float32(D)
		inv[i] = 1 / float32(math.Pow(theta, float64(e)))
	}
	return inv
}

// RopeTables returns the cos and sin tables [maxPos, D/2] that RoPE reads,
// for the D/2 inverse frequencies inv:
//
//	for p := 0; p < maxPos; p++ {
//		for i := 0; i < D/2; i++ {
//			a := float32(p) * inv[i]                  // float32 product, as HF
//			cos[p*D/2+i] = float32(math.Cos(float64(a)))
//			sin[p*D/2+i] = float32(math.Sin(float64(a)))
//		}
//	}
//
// It returns nil tables when inv is empty or maxPos < 0.
func RopeTables(inv []float32, maxPos int) (cos, sin []float32) {
	if len(inv) == 0 || maxPos < 0 {
		return nil, nil
	}
	h := len(inv)
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
