package model

// Saving what a run trains besides LoRA adapters (lora.go exports those in
// PEFT's layout): the PPO value head (RUN/checkpoints/…/value_head.safetensors)
// and, for full fine-tuning, the whole model as a Hugging Face directory.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/argrl/argrl/model/safetensors"
)

// host copies a parameter to the host.
func (m *Model) host(p *Param) []float32 {
	out := make([]float32, p.Len())
	m.be.CopyOut(out, p.W)
	return out
}

// ExportValueHead writes the value head (value_head.weight [1, C],
// value_head.bias [1], F32) to path atomically.
func (m *Model) ExportValueHead(path string) error {
	if m.vw == nil {
		return fmt.Errorf("model: ExportValueHead %s: the model has no value head", path)
	}
	ts := []safetensors.Tensor{
		safetensors.FromFloat32(m.vw.Name, m.vw.Shape, m.host(m.vw)),
		safetensors.FromFloat32(m.vb.Name, m.vb.Shape, m.host(m.vb)),
	}
	if err := m.be.Sync(); err != nil {
		return fmt.Errorf("model: ExportValueHead %s: %w", path, err)
	}
	if err := safetensors.WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("model: ExportValueHead: %w", err)
	}
	return nil
}

// ImportValueHead loads a file written by ExportValueHead.
func (m *Model) ImportValueHead(path string) error {
	if m.vw == nil {
		return fmt.Errorf("model: ImportValueHead %s: the model has no value head (Options.ValueHead)", path)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	if n := len(f.Tensors()); n != 2 {
		return fmt.Errorf("model: %s: %d tensors, want value_head.weight and value_head.bias", path, n)
	}
	for _, p := range []*Param{m.vw, m.vb} {
		info, ok := f.Info(p.Name)
		if !ok {
			return fmt.Errorf("model: %s: tensor %s is missing", path, p.Name)
		}
		if !sameShape(info.Shape, p.Shape) {
			return fmt.Errorf("model: %s: tensor %s has shape %v, want %v", path, p.Name, info.Shape, p.Shape)
		}
		data, _, err := f.Float32(p.Name)
		if err != nil {
			return fmt.Errorf("model: %w", err)
		}
		m.be.CopyIn(p.W, data)
	}
	if err := m.be.Sync(); err != nil {
		return fmt.Errorf("model: ImportValueHead %s: %w", path, err)
	}
	return nil
}

// SaveCheckpoint writes the current weights as a Hugging Face model
// directory: dir/config.json (copied from the source) and
// dir/model.safetensors (F32; a tied lm_head is not stored). Merged
// adapters are saved merged; unmerged adapters are not included (use
// ExportAdapter). This is how a full fine-tuning run saves its model.
func (m *Model) SaveCheckpoint(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("model: SaveCheckpoint: %w", err)
	}
	var ts []safetensors.Tensor
	for _, p := range m.params {
		if _, ok := m.byName[p.Name]; ok {
			ts = append(ts, safetensors.FromFloat32(p.Name, p.Shape, m.host(p)))
		}
	}
	if err := m.be.Sync(); err != nil {
		return fmt.Errorf("model: SaveCheckpoint %s: %w", dir, err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("model: SaveCheckpoint: %w", err)
	}
	cfg, err := os.ReadFile(m.Config.Path)
	if err != nil {
		return fmt.Errorf("model: SaveCheckpoint: %w", err)
	}
	err = safetensors.WriteAtomic(filepath.Join(dir, "config.json"), func(w io.Writer) error {
		_, err := w.Write(cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("model: SaveCheckpoint: %w", err)
	}
	return nil
}
