package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BF16ToFloat32 widens a bfloat16 exactly: its bits are the top half of a float32.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds to bfloat16, nearest with ties to even (as PyTorch's
// .to(torch.bfloat16)); NaN stays a quiet NaN of the same sign.
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16ToFloat32 widens an IEEE half exactly (subnormals, infinities and NaN included).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal half: man·2⁻²⁴, exact in float32.
	f := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}

// DecodeFloat32 converts the little-endian bytes of len(dst) elements of dt
// to float32 (exactly, but for F64).
func DecodeFloat32(dst []float32, src []byte, dt DType) error {
	n := len(dst)
	switch dt {
	case F32:
		for i := 0; i < n; i++ {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case BF16:
		for i := 0; i < n; i++ {
			dst[i] = BF16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case F16:
		for i := 0; i < n; i++ {
			dst[i] = F16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case F64:
		for i := 0; i < n; i++ {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	default:
		return fmt.Errorf("dtype %s does not convert to float32 (want F32, F16, BF16 or F64)", dt)
	}
	return nil
}

// decodeFloat64 converts the little-endian bytes of n elements of dt to float64.
func decodeFloat64(dst []float64, src []byte, dt DType) error {
	if dt == F64 {
		for i := range dst {
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
		}
		return nil
	}
	tmp := make([]float32, len(dst))
	if err := DecodeFloat32(tmp, src, dt); err != nil {
		return err
	}
	for i, v := range tmp {
		dst[i] = float64(v)
	}
	return nil
}

// EncodeFloat32 writes src as the little-endian bytes of dt into dst
// (len(src)·dt.Size() bytes): F32 as is, BF16 rounded to nearest even.
func EncodeFloat32(dst []byte, src []float32, dt DType) error {
	switch dt {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], Float32ToBF16(v))
		}
	default:
		return fmt.Errorf("cannot encode float32 as %s (want F32 or BF16)", dt)
	}
	return nil
}
