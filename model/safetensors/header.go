// Package safetensors reads and writes the safetensors checkpoint format used
// by Hugging Face: an 8-byte little-endian header length N, N bytes of JSON
// header, then the raw little-endian tensor data.
//
//	header = {"name": {"dtype": "BF16", "shape": [V, C], "data_offsets": [begin, end]},
//	          ..., "__metadata__": {"format": "pt"}}
//
// Offsets are relative to the first byte after the header. Files are
// memory-mapped read-only; F32, F16, BF16 and F64 tensors convert to float32
// on read, and raw bytes (for example BF16 for bf16 device storage) stay
// available without conversion. Writing produces sorted keys, 8-byte aligned
// headers and an atomic temp-file + fsync + rename.
//
// Every header is validated before any tensor is touched: header length
// sanity (≤ MaxHeaderSize), known dtypes, shape×dtype size equal to the byte
// span, offsets inside the file, and tensors that neither overlap nor leave
// gaps (as the reference Rust implementation requires). Errors name the file
// and the tensor.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// MaxHeaderSize bounds the JSON header (the reference implementation's limit).
const MaxHeaderSize = 100 << 20

// DType is a safetensors element type as spelled in the header.
type DType string

// The dtypes of the safetensors specification. Only the floating types
// convert to float32; the others can be parsed, validated and read raw.
const (
	F64    DType = "F64"
	F32    DType = "F32"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I64    DType = "I64"
	I32    DType = "I32"
	I16    DType = "I16"
	I8     DType = "I8"
	U64    DType = "U64"
	U32    DType = "U32"
	U16    DType = "U16"
	U8     DType = "U8"
	Bool   DType = "BOOL"
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
)

var dtypeSize = map[DType]int{
	F64: 8, F32: 4, F16: 2, BF16: 2,
	I64: 8, I32: 4, I16: 2, I8: 1,
	U64: 8, U32: 4, U16: 2, U8: 1,
	Bool: 1, F8E4M3: 1, F8E5M2: 1,
}

// Size is the element size in bytes, or 0 for an unknown dtype.
func (d DType) Size() int { return dtypeSize[d] }

// TensorInfo describes one tensor of a header. Begin and End are byte offsets
// relative to the start of the data section.
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// NumElements is the product of the shape (1 for a scalar).
func (t TensorInfo) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Header is a parsed, validated safetensors header.
type Header struct {
	Tensors   []TensorInfo      // sorted by name
	Metadata  map[string]string // "__metadata__", nil when absent
	DataStart int64             // 8 + header length: file offset of the data section
}

type rawTensor struct {
	DType       *string  `json:"dtype"`
	Shape       *[]int64 `json:"shape"`
	DataOffsets *[]int64 `json:"data_offsets"`
}

// ParseHeader parses and validates the header of a complete safetensors file
// held in data. Errors are plain (no file name); Open wraps them.
func ParseHeader(data []byte) (*Header, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("truncated: %d bytes, need at least 8 for the header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the %d-byte limit (not a safetensors file?)", n, MaxHeaderSize)
	}
	if n < 2 {
		return nil, fmt.Errorf("header length %d is too small for a JSON object", n)
	}
	if uint64(len(data)-8) < n {
		return nil, fmt.Errorf("truncated: header length %d but only %d bytes follow", n, len(data)-8)
	}
	raw := data[8 : 8+n]
	if raw[0] != '{' {
		return nil, fmt.Errorf("header does not start with '{' (not a safetensors file?)")
	}
	var entries map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("header JSON: %w", err)
	}
	// Only trailing padding (spaces) may follow the object.
	if rest := bytes.TrimRight(raw[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("header JSON: trailing data after the object")
	}
	h := &Header{DataStart: 8 + int64(n)}
	dataLen := int64(len(data)) - h.DataStart
	for name, msg := range entries {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("__metadata__ must map strings to strings: %w", err)
			}
			continue
		}
		t, err := parseEntry(name, msg)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, t)
	}
	if err := checkLayout(h.Tensors, dataLen); err != nil {
		return nil, err
	}
	sort.Slice(h.Tensors, func(i, j int) bool { return h.Tensors[i].Name < h.Tensors[j].Name })
	return h, nil
}

func parseEntry(name string, msg json.RawMessage) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	if name == "" {
		return t, errors.New("tensor with an empty name")
	}
	var r rawTensor
	if err := json.Unmarshal(msg, &r); err != nil {
		return t, fmt.Errorf("tensor %q: %w", name, err)
	}
	switch {
	case r.DType == nil:
		return t, fmt.Errorf("tensor %q: missing \"dtype\"", name)
	case r.Shape == nil:
		return t, fmt.Errorf("tensor %q: missing \"shape\"", name)
	case r.DataOffsets == nil:
		return t, fmt.Errorf("tensor %q: missing \"data_offsets\"", name)
	}
	t.DType = DType(*r.DType)
	size := t.DType.Size()
	if size == 0 {
		return t, fmt.Errorf("tensor %q: unknown dtype %q", name, *r.DType)
	}
	// Byte size, with overflow checks: a hostile shape must not wrap around.
	nbytes := int64(size)
	t.Shape = make([]int, len(*r.Shape))
	for i, d := range *r.Shape {
		if d < 0 {
			return t, fmt.Errorf("tensor %q: negative dimension %d in shape %v", name, d, *r.Shape)
		}
		if d > 0 && nbytes > math.MaxInt64/d {
			return t, fmt.Errorf("tensor %q: shape %v is too large", name, *r.Shape)
		}
		nbytes *= d
		t.Shape[i] = int(d)
	}
	off := *r.DataOffsets
	if len(off) != 2 {
		return t, fmt.Errorf("tensor %q: data_offsets must have 2 elements, got %d", name, len(off))
	}
	t.Begin, t.End = off[0], off[1]
	if t.Begin < 0 || t.End < t.Begin {
		return t, fmt.Errorf("tensor %q: invalid data_offsets [%d, %d]", name, t.Begin, t.End)
	}
	if t.End-t.Begin != nbytes {
		return t, fmt.Errorf("tensor %q: %s shape %v needs %d bytes but data_offsets [%d, %d] span %d",
			name, t.DType, t.Shape, nbytes, t.Begin, t.End, t.End-t.Begin)
	}
	return t, nil
}

// checkLayout requires the tensors to tile the data section exactly: sorted
// by offset, each begins where the previous one ends, and the last ends at
// the end of the file.
func checkLayout(ts []TensorInfo, dataLen int64) error {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool {
		ta, tb := ts[order[a]], ts[order[b]]
		if ta.Begin != tb.Begin {
			return ta.Begin < tb.Begin
		}
		if ta.End != tb.End {
			return ta.End < tb.End
		}
		return ta.Name < tb.Name
	})
	var pos int64
	prev := ""
	for _, i := range order {
		t := ts[i]
		if t.End > dataLen {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] run past the end of the data (%d bytes; truncated file?)",
				t.Name, t.Begin, t.End, dataLen)
		}
		if t.Begin < pos {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q (ends at %d)", t.Name, t.Begin, t.End, prev, pos)
		}
		if t.Begin > pos {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] leave a gap after byte %d", t.Name, t.Begin, t.End, pos)
		}
		pos = t.End
		prev = t.Name
	}
	if pos != dataLen {
		return fmt.Errorf("data section is %d bytes but the tensors cover %d (trailing bytes or truncated header?)", dataLen, pos)
	}
	return nil
}
