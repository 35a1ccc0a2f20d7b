package safetensors

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// File is one memory-mapped, validated safetensors file. Slices returned by
// Bytes alias the mapping and are valid until Close; every other accessor
// returns a copy.
type File struct {
	path   string
	data   []byte // the whole file, mmapped read-only
	hdr    *Header
	byName map[string]int
}

// Open maps path read-only and validates its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("safetensors: %s: not a regular file", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("safetensors: %s: truncated: %d bytes, need at least 8 for the header length", path, size)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("safetensors: %s: file of %d bytes is too large to map", path, size)
	}
	data, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: mmap: %w", path, err)
	}
	hdr, err := ParseHeader(data)
	if err != nil {
		_ = unix.Munmap(data)
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	f := &File{path: path, data: data, hdr: hdr, byName: make(map[string]int, len(hdr.Tensors))}
	for i, t := range hdr.Tensors {
		f.byName[t.Name] = i
	}
	return f, nil
}

// Close unmaps the file. Slices from Bytes must not be used afterwards.
func (f *File) Close() error {
	if f.data == nil {
		return nil
	}
	err := unix.Munmap(f.data)
	f.data = nil
	if err != nil {
		return fmt.Errorf("safetensors: %s: munmap: %w", f.path, err)
	}
	return nil
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Tensors lists the tensors sorted by name.
func (f *File) Tensors() []TensorInfo { return f.hdr.Tensors }

// Names lists the tensor names, sorted.
func (f *File) Names() []string {
	out := make([]string, len(f.hdr.Tensors))
	for i, t := range f.hdr.Tensors {
		out[i] = t.Name
	}
	return out
}

// Metadata is the header's "__metadata__" map (nil when absent).
func (f *File) Metadata() map[string]string { return f.hdr.Metadata }

// Info returns the description of the named tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.hdr.Tensors[i], true
}

// Bytes returns the raw little-endian bytes of the named tensor, aliasing the
// mapping (read-only; valid until Close).
func (f *File) Bytes(name string) ([]byte, TensorInfo, error) {
	if f.data == nil {
		return nil, TensorInfo{}, fmt.Errorf("safetensors: %s: file is closed", f.path)
	}
	t, ok := f.Info(name)
	if !ok {
		return nil, TensorInfo{}, fmt.Errorf("safetensors: %s: no tensor %q", f.path, name)
	}
	return f.data[f.hdr.DataStart+t.Begin : f.hdr.DataStart+t.End], t, nil
}

// Float32 returns the named tensor converted to float32 (from F32, F16, BF16
// or F64) with its description.
func (f *File) Float32(name string) ([]float32, TensorInfo, error) {
	b, t, err := f.Bytes(name)
	if err != nil {
		return nil, t, err
	}
	out := make([]float32, t.NumElements())
	if err := DecodeFloat32(out, b, t.DType); err != nil {
		return nil, t, fmt.Errorf("safetensors: %s: tensor %q: %w", f.path, name, err)
	}
	return out, t, nil
}

// Float64 returns the named tensor converted to float64 (from F64, F32, F16 or BF16).
func (f *File) Float64(name string) ([]float64, TensorInfo, error) {
	b, t, err := f.Bytes(name)
	if err != nil {
		return nil, t, err
	}
	out := make([]float64, t.NumElements())
	if err := decodeFloat64(out, b, t.DType); err != nil {
		return nil, t, fmt.Errorf("safetensors: %s: tensor %q: %w", f.path, name, err)
	}
	return out, t, nil
}

// BF16 returns a copy of a BF16 tensor's raw bit patterns, for backends that
// store weights as bf16. Any other dtype is an error.
func (f *File) BF16(name string) ([]uint16, TensorInfo, error) {
	b, t, err := f.Bytes(name)
	if err != nil {
		return nil, t, err
	}
	if t.DType != BF16 {
		return nil, t, fmt.Errorf("safetensors: %s: tensor %q is %s, not BF16", f.path, name, t.DType)
	}
	out := make([]uint16, t.NumElements())
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out, t, nil
}
