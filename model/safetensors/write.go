package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
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
	ts := append([]Tensor(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	hdr := make(map[string]any, len(ts)+1)
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for i, t := range ts {
		if t.Name == "" || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		}
		if i > 0 && ts[i-1].Name == t.Name {
			return fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		size := t.DType.Size()
		if size == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
			n *= d
		}
		if len(t.Data) != n*size {
			return fmt.Errorf("safetensors: tensor %q: %s shape %v needs %d bytes, have %d", t.Name, t.DType, t.Shape, n*size, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = map[string]any{
			"dtype":        t.DType,
			"shape":        shape,
			"data_offsets": [2]int64{off, off + int64(len(t.Data))},
		}
		off += int64(len(t.Data))
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
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: write: %w", err)
		}
	}
	return nil
}

// WriteFile writes tensors to path atomically: a temporary file in the same
// directory is written and fsynced, then renamed over path, and the directory
// is fsynced. A failure leaves any previous file at path untouched.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	return WriteAtomic(path, func(w io.Writer) error { return Encode(w, tensors, metadata) })
}

// WriteAtomic writes path through fill with the temp + fsync + rename
// protocol of WriteFile. It is exported for other small files that must
// appear atomically (adapter_config.json, index files).
func WriteAtomic(path string, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err = fill(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if err = tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("safetensors: %s: fsync: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil && !errors.Is(serr, os.ErrInvalid) {
			return fmt.Errorf("safetensors: fsync %s: %w", dir, serr)
		}
	}
	return nil
}
