package model

// Placing a checked checkpoint on the backend, one tensor at a time, with no
// host copy of the model: frozen matrices keep their storage dtype and are
// mapped in place (a backend in host memory) or uploaded straight from the
// file mapping; only vectors and trainable tensors are widened to f32, one
// tensor at a time.

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// place puts every field of the weight struct on the backend (fs and shapes
// from checkTensors) and wires the model's lists. The set stays open, owned
// by the model, when a buffer maps it.
func (m *Model) place(fs []field, shapes [][]int, set *safetensors.Set) error {
	c := m.Config
	defer func() {
		if m.src == nil { // nothing maps the files: unmap them now
			set.Close()
		}
	}()
	byName := map[string]*Param{}
	for i, f := range fs {
		if f.lin != nil {
			m.linears = append(m.linears, f.lin)
		}
		if f.tied != "" && c.TieWordEmbeddings {
			continue
		}
		info, _ := set.Info(f.name)
		buf, isMapped, err := m.upload(set, info)
		if err != nil {
			return err
		}
		if isMapped {
			m.src = set
		}
		p := &Param{Name: f.name, Shape: shapes[i], W: buf}
		if m.opt.FullFT {
			p.G = m.be.Alloc(kernels.F32, p.Len())
			m.trainable = append(m.trainable, p)
		}
		*f.ptr = p
		byName[f.name] = p
		m.params = append(m.params, p)
		m.byName[f.name] = p
	}
	for _, f := range fs {
		if f.tied != "" && c.TieWordEmbeddings {
			p := byName[f.tied]
			if p == nil {
				return fmt.Errorf("%s is tied to %s, which is not loaded", f.name, f.tied)
			}
			*f.ptr = p
		}
	}
	return m.ropeTables()
}

// upload places one checkpoint tensor: a frozen bf16 or f32 matrix as is,
// anything else widened to f32. It reports whether the buffer maps the file.
func (m *Model) upload(set *safetensors.Set, info safetensors.TensorInfo) (kernels.Buffer, bool, error) {
	n := info.NumElements()
	if !m.opt.FullFT && len(info.Shape) == 2 {
		dt, raw := kernels.F32, info.DType == safetensors.F32
		if info.DType == safetensors.BF16 && !m.opt.F32Weights {
			dt, raw = kernels.BF16, true
		}
		if raw {
			bytes, _, err := set.Bytes(info.Name)
			if err != nil {
				return nil, false, err
			}
			if mp, ok := m.be.(kernels.Mapper); ok {
				if b, err := mp.Map(dt, bytes); err == nil {
					return b, true, nil
				}
			}
			b := m.be.Alloc(dt, n)
			m.be.Upload(b, bytes)
			return b, false, nil
		}
	}
	data, _, err := set.Float32(info.Name)
	if err != nil {
		return nil, false, fmt.Errorf("model: %w", err)
	}
	b := m.be.Alloc(kernels.F32, n)
	m.be.CopyIn(b, data)
	return b, false, nil
}

// ropeTables uploads the RoPE cos/sin tables [maxLen, D/2].
func (m *Model) ropeTables() error {
	c := m.Config
	if m.maxLen > 1<<20 {
		return fmt.Errorf("MaxLen %d is too large", m.maxLen)
	}
	cos, sin := kernels.RopeTables(c.ropeInvFreq(), m.maxLen)
	if cos == nil {
		return fmt.Errorf("cannot build RoPE tables for head_dim %d", c.HeadDim)
	}
	m.cos, m.sin = m.be.Alloc(kernels.F32, len(cos)), m.be.Alloc(kernels.F32, len(sin))
	m.be.CopyIn(m.cos, cos)
	m.be.CopyIn(m.sin, sin)
	return nil
}
