package ckpt

// optimizer.safetensors: the tensors and scalars of an optim.Optimizer's
// State, as one safetensors file (tensors by name, scalars as metadata).
// The checkpoint does not know which optimizer wrote it; SetState checks
// that the file fits the optimizer that reads it.

import (
	"fmt"

	"github.com/argrl/argrl/model/safetensors"
	"github.com/argrl/argrl/trainer/optim"
)

// SaveOptimizer writes o's state to path atomically.
func SaveOptimizer(path string, o optim.Optimizer) error {
	st, err := o.State()
	if err != nil {
		return fmt.Errorf("optimizer: save %s: %w", path, err)
	}
	if err := safetensors.WriteFile(path, st.Tensors, st.Scalars); err != nil {
		return fmt.Errorf("optimizer: save: %w", err)
	}
	return nil
}

// LoadOptimizer restores o from a file written by SaveOptimizer.
func LoadOptimizer(path string, o optim.Optimizer) (err error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("optimizer: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("optimizer: %w", cerr)
		}
	}()
	st := optim.State{Scalars: f.Metadata()}
	for _, name := range f.Names() {
		b, info, err := f.Bytes(name)
		if err != nil {
			return fmt.Errorf("optimizer: %w", err)
		}
		st.Tensors = append(st.Tensors, safetensors.Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	if err := o.SetState(st); err != nil {
		return fmt.Errorf("optimizer: %s: %w", path, err)
	}
	return nil
}
