package model

import (
	"math"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// tmpUpload stands in for kernels.Backend.Upload until it lands.
func tmpUpload(be kernels.Backend, b kernels.Buffer, raw []byte, dt safetensors.DType) {
	n := b.Len()
	f := make([]float32, n)
	for i := range f {
		if dt == safetensors.BF16 {
			f[i] = safetensors.BF16ToFloat32(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8)
		} else {
			u := uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24
			f[i] = math.Float32frombits(u)
		}
	}
	be.CopyIn(b, f)
}
