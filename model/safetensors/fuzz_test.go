package safetensors

import (
	"bytes"
	"testing"
)

// FuzzParseHeader checks that no input makes the header parser panic, and
// that an accepted header describes tensors that lie inside the data.
func FuzzParseHeader(f *testing.F) {
	var buf bytes.Buffer
	_ = Encode(&buf, []Tensor{FromFloat32("w", []int{2, 2}, []float32{1, 2, 3, 4}), FromFloat32AsBF16("b", []int{3}, []float32{1, 2, 3})}, map[string]string{"format": "pt"})
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}`, []byte{0, 0, 0, 0}))
	f.Add(rawFile(`{"a": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 4]}}`, nil))
	f.Add(rawFile(`{"__metadata__": {"k": "v"}}`, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHeader(data)
		if err != nil {
			return
		}
		dataLen := int64(len(data)) - h.DataStart
		for _, ti := range h.Tensors {
			if ti.Begin < 0 || ti.End > dataLen || ti.End-ti.Begin != int64(ti.NumElements()*ti.DType.Size()) {
				t.Fatalf("accepted tensor %+v outside %d data bytes", ti, dataLen)
			}
			out := make([]float32, ti.NumElements())
			_ = DecodeFloat32(out, data[h.DataStart+ti.Begin:h.DataStart+ti.End], ti.DType)
		}
	})
}
