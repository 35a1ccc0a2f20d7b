package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/argrl/argrl/internal/atomicfile"
)

// Tensor is one tensor to write: little-endian Data of Shape in DType.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// FromFloat32 makes an F32 tensor.
func FromFloat32(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{Name: name, DType: F32, Shape: append([]int(nil), shape...), Data: b}
}

// FromFloat32AsBF16 makes a BF16 tensor by rounding data (nearest, ties to even).
func FromFloat32AsBF16(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 2*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint16(b[2*i:], Float32ToBF16(v))
	}
	return Tensor{Name: name, DType: BF16, Shape: append([]int(nil), shape...), Data: b}
}

// FromBF16 makes a BF16 tensor from raw bfloat16 bit patterns.
func FromBF16(name string, shape []int, data []uint16) Tensor {
	b := make([]byte, 2*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return Tensor{Name: name, DType: BF16, Shape: append([]int(nil), shape...), Data: b}
}

// Encode writes tensors in safetensors form to w: keys sorted by name, data
// laid out in the same order, header padded with spaces to a multiple of 8
// bytes. metadata may be nil.
func Encode(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	es := make([]Entry, len(tensors))
	for i, t := range tensors {
		es[i] = Entry{Name: t.Name, DType: t.DType, Shape: t.Shape, size: int64(len(t.Data)), data: t.Data}
	}
	return EncodeStream(w, es, metadata)
}

// Entry is one tensor of a streamed file: its description and Fill, which
// writes exactly its little-endian bytes (product of Shape × DType size).
type Entry struct {
	Name  string
	DType DType
	Shape []int
	Fill  func(w io.Writer) error

	size int64  // the byte count Tensor.Data holds (Encode), or −1
	data []byte // Tensor.Data (Encode)
}

// NBytes is the size of an entry's data: shape × dtype size (0 for an unknown dtype).
func (e Entry) NBytes() int64 {
	n := int64(e.DType.Size())
	for _, d := range e.Shape {
		n *= int64(d)
	}
	return n
}

// EncodeStream writes entries in safetensors form to w, as Encode, calling
// each entry's Fill in name order: a file of any size is written with only
// what Fill holds in memory. A Fill that writes a different number of bytes
// than the entry's shape needs is an error.
func EncodeStream(w io.Writer, entries []Entry, metadata map[string]string) error {
	es := append([]Entry(nil), entries...)
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	hdr := make(map[string]any, len(es)+1)
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for i, t := range es {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if i > 0 && es[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		if t.DType.Size() == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
		}
		n := t.NBytes()
		if t.Fill == nil && t.size != n {
			return fmt.Errorf("safetensors: tensor %q: %s shape %v needs %d bytes, have %d", t.Name, t.DType, t.Shape, n, t.size)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = map[string]any{
			"dtype":        t.DType,
			"shape":        shape,
			"data_offsets": [2]int64{off, off + n},
		}
		off += n
	}
	js, err := json.Marshal(hdr) // map keys are emitted sorted
	if err != nil {
		return fmt.Errorf("safetensors: header: %w", err)
	}
	if pad := (8 - len(js)%8) % 8; pad > 0 {
		js = append(js, bytes.Repeat([]byte(" "), pad)...)
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	if _, err := w.Write(js); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	for _, t := range es {
		if t.Fill == nil {
			if _, err := w.Write(t.data); err != nil {
				return fmt.Errorf("safetensors: write: %w", err)
			}
			continue
		}
		cw := &countWriter{w: w}
		if err := t.Fill(cw); err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		if cw.n != t.NBytes() {
			return fmt.Errorf("safetensors: tensor %q: wrote %d bytes, its %s shape %v needs %d", t.Name, cw.n, t.DType, t.Shape, t.NBytes())
		}
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// WriteFile writes tensors to path atomically: a temporary file in the same
// directory is written and fsynced, then renamed over path, and the directory
// is fsynced. A failure leaves any previous file at path untouched.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	return WriteAtomic(path, func(w io.Writer) error { return Encode(w, tensors, metadata) })
}

// WriteAtomic writes path through fill with the temp + fsync + rename
// protocol of WriteFile (internal/atomicfile; mode 0666 less the umask). It
// is exported for other small files that must appear atomically
// (adapter_config.json, index files).
func WriteAtomic(path string, fill func(io.Writer) error) error {
	return atomicfile.Write(path, fill)
}

// WriteIndex writes a Hugging Face model.safetensors.index.json atomically:
// {"metadata": {"total_size": N}, "weight_map": {tensor: shard file name}}.
func WriteIndex(path string, weightMap map[string]string, totalSize int64) error {
	js, err := json.MarshalIndent(index{Metadata: map[string]any{"total_size": totalSize}, WeightMap: weightMap}, "", "  ")
	if err != nil {
		return fmt.Errorf("safetensors: index: %w", err)
	}
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	})
}
