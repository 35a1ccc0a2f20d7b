package ckpt

// Parameter files: the values of a list of model params as one safetensors
// file (F32, keyed by name, metadata {"format": "pt"}): PPO's
// value_head.safetensors, full fine-tuning's model.safetensors.

import (
	"fmt"
	"slices"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
)

// WriteParams writes the params' values to path atomically.
func WriteParams(be kernels.Backend, path string, params []*model.Param) error {
	var ts []safetensors.Tensor
	for _, p := range params {
		host := make([]float32, p.Len())
		be.CopyOut(host, p.W)
		ts = append(ts, safetensors.FromFloat32(p.Name, p.Shape, host))
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("write params %s: %w", path, err)
	}
	if err := safetensors.WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("write params: %w", err)
	}
	return nil
}

// ReadParams loads every param's value from a file written by WriteParams;
// names and shapes must match.
func ReadParams(be kernels.Backend, path string, params []*model.Param) (err error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("read params: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("read params: %w", cerr)
		}
	}()
	for _, p := range params {
		host, info, err := f.Float32(p.Name)
		if err != nil {
			return fmt.Errorf("read params: %s: tensor %q: %w", path, p.Name, err)
		}
		if !slices.Equal(info.Shape, p.Shape) || len(host) != p.Len() {
			return fmt.Errorf("read params: %s: tensor %q has shape %v, want %v", path, p.Name, info.Shape, p.Shape)
		}
		be.CopyIn(p.W, host)
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("read params %s: %w", path, err)
	}
	return nil
}
