package kernels

import "math"

// BF16FromFloat32 rounds f to bfloat16 (round to nearest, ties to even;
// NaN stays a quiet NaN). This is the conversion CopyIn applies to BF16
// buffers and the one PyTorch's .to(torch.bfloat16) performs.
func BF16FromFloat32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// Float32FromBF16 widens a bfloat16 exactly.
func Float32FromBF16(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}
