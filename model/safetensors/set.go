package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// IndexName is the Hugging Face index of a sharded checkpoint.
const IndexName = "model.safetensors.index.json"

// SingleName is the Hugging Face name of an unsharded checkpoint.
const SingleName = "model.safetensors"

// Set is a checkpoint spread over one or more files (shards), addressed by
// tensor name. It satisfies the same read API as File.
type Set struct {
	files []*File
	where map[string]*File
	names []string // sorted
}

type index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// OpenDir opens the checkpoint of a Hugging Face model directory: the shards
// listed by model.safetensors.index.json when it exists, else model.safetensors.
func OpenDir(dir string) (*Set, error) {
	idx := filepath.Join(dir, IndexName)
	if _, err := os.Stat(idx); err == nil {
		return OpenIndex(idx)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	single := filepath.Join(dir, SingleName)
	if _, err := os.Stat(single); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("safetensors: %s: neither %s nor %s exists", dir, IndexName, SingleName)
		}
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return OpenFiles(single)
}

// OpenIndex opens the shards named by a model.safetensors.index.json and
// checks that every tensor lives in the shard the index names, and that no
// shard holds a tensor the index does not list.
func OpenIndex(path string) (*Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var ix index
	if err := json.Unmarshal(raw, &ix); err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	if len(ix.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: key \"weight_map\" is missing or empty", path)
	}
	shardSet := map[string]bool{}
	for name, shard := range ix.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("safetensors: %s: weight_map[%q] = %q is not a file name in the model directory", path, name, shard)
		}
		shardSet[shard] = true
	}
	shards := make([]string, 0, len(shardSet))
	for s := range shardSet {
		shards = append(shards, filepath.Join(filepath.Dir(path), s))
	}
	sort.Strings(shards)
	s, err := OpenFiles(shards...)
	if err != nil {
		return nil, fmt.Errorf("%w (shard listed in %s)", err, path)
	}
	for name, shard := range ix.WeightMap {
		f, ok := s.where[name]
		if !ok {
			s.Close()
			return nil, fmt.Errorf("safetensors: %s: tensor %q is mapped to %s, which does not contain it", path, name, shard)
		}
		if filepath.Base(f.Path()) != shard {
			s.Close()
			return nil, fmt.Errorf("safetensors: %s: tensor %q is mapped to %s but found in %s", path, name, shard, f.Path())
		}
	}
	if len(s.where) != len(ix.WeightMap) {
		for _, n := range s.names {
			if _, ok := ix.WeightMap[n]; !ok {
				f := s.where[n]
				s.Close()
				return nil, fmt.Errorf("safetensors: %s: tensor %q in %s is not listed in the index", path, n, f.Path())
			}
		}
	}
	return s, nil
}

// OpenFiles opens the given files as one checkpoint. A tensor name present in
// two files is an error naming both.
func OpenFiles(paths ...string) (*Set, error) {
	if len(paths) == 0 {
		return nil, errors.New("safetensors: no files to open")
	}
	s := &Set{where: map[string]*File{}}
	for _, p := range paths {
		f, err := Open(p)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.files = append(s.files, f)
		for _, t := range f.Tensors() {
			if prev, dup := s.where[t.Name]; dup {
				s.Close()
				return nil, fmt.Errorf("safetensors: tensor %q is in both %s and %s", t.Name, prev.Path(), p)
			}
			s.where[t.Name] = f
			s.names = append(s.names, t.Name)
		}
	}
	sort.Strings(s.names)
	return s, nil
}

// Close unmaps every file.
func (s *Set) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}

// Files lists the paths of the shards in open order.
func (s *Set) Files() []string {
	out := make([]string, len(s.files))
	for i, f := range s.files {
		out[i] = f.Path()
	}
	return out
}

// Names lists every tensor name, sorted.
func (s *Set) Names() []string { return s.names }

// Info describes the named tensor.
func (s *Set) Info(name string) (TensorInfo, bool) {
	f, ok := s.where[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Info(name)
}

// FileOf is the path of the shard holding name ("" if none).
func (s *Set) FileOf(name string) string {
	if f, ok := s.where[name]; ok {
		return f.Path()
	}
	return ""
}

func (s *Set) file(name string) (*File, error) {
	f, ok := s.where[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: no tensor %q in %s", name, strings.Join(s.Files(), ", "))
	}
	return f, nil
}

// Bytes returns the raw bytes of the named tensor (aliasing the mapping).
func (s *Set) Bytes(name string) ([]byte, TensorInfo, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, TensorInfo{}, err
	}
	return f.Bytes(name)
}

// Float32 returns the named tensor converted to float32.
func (s *Set) Float32(name string) ([]float32, TensorInfo, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, TensorInfo{}, err
	}
	return f.Float32(name)
}

// Float64 returns the named tensor converted to float64.
func (s *Set) Float64(name string) ([]float64, TensorInfo, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, TensorInfo{}, err
	}
	return f.Float64(name)
}

// BF16 returns a copy of a BF16 tensor's raw bit patterns.
func (s *Set) BF16(name string) ([]uint16, TensorInfo, error) {
	f, err := s.file(name)
	if err != nil {
		return nil, TensorInfo{}, err
	}
	return f.BF16(name)
}
