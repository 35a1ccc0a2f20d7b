// Package optim updates a model's trainable tensors from their gradients:
// AdamW (this file), global grad-norm clipping (clip.go) and the
// learning-rate schedules (schedule.go).
//
// The optimizer never sees the model: it gets the trainable tensors as
// *model.Param (name, shape, value buffer W, gradient buffer G) living on a
// kernels.Backend. AdamW owns two state buffers per param (m, v: Adam's
// first and second moments, F32, zero-initialized) and calls
// Backend.AdamW once per param per step:
//
//	t = step+1
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	w -= lr·( (m/(1−β1ᵗ)) / (sqrt(v/(1−β2ᵗ)) + ε) + wd·w )    (wd = 0 where AdamWConfig.NoDecay says so)
//
// An Optimizer exports its resumable state as named tensors and scalars
// (State) and restores it from them (SetState); a checkpoint stores them
// as optimizer.safetensors (trainer/ckpt) without knowing the optimizer.
// AdamW's state is, for each param name N, tensors "m.N" and "v.N" (F32,
// the param's shape) and the scalars {"step": "<t>", "format":
// "argrl-adamw"}. F32 bytes round-trip exactly, so export → restore is
// bit-exact.
package optim

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
)

// Optimizer updates a fixed list of params; State and SetState carry
// everything a resumed run needs to continue bit-identically.
type Optimizer interface {
	Params() []*model.Param
	Step(lr float64) error
	State() (State, error)
	SetState(State) error
	Free()
}

// State is an optimizer's resumable state: named tensors and scalars
// (as strings, the way safetensors metadata holds them).
type State struct {
	Tensors []safetensors.Tensor
	Scalars map[string]string
}

// AdamWConfig holds AdamW's hyper-parameters (optim.beta1, optim.beta2,
// optim.eps, optim.weight_decay). The learning rate is given per step.
type AdamWConfig struct {
	Beta1, Beta2, Eps, WeightDecay float64
	// NoDecay names the params excluded from weight decay (nil: none);
	// NormsAndBiases is Hugging Face's choice.
	NoDecay func(name string) bool
}

// NormsAndBiases reports whether a param is a bias or a norm weight, the
// tensors Hugging Face excludes from weight decay.
func NormsAndBiases(name string) bool {
	return strings.HasSuffix(name, ".bias") || strings.HasSuffix(name, "norm.weight")
}

// numel is the number of elements of a param's shape.
func numel(p *model.Param) int {
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

func checkParams(params []*model.Param) error {
	seen := map[string]bool{}
	for i, p := range params {
		if p == nil || p.Name == "" {
			return fmt.Errorf("param %d has no name", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("param %q appears twice", p.Name)
		}
		seen[p.Name] = true
		if p.W == nil || p.G == nil {
			return fmt.Errorf("param %q: nil value or gradient buffer", p.Name)
		}
		n := numel(p)
		if p.W.Len() != n || p.G.Len() != n {
			return fmt.Errorf("param %q: shape %v has %d elements, value has %d, gradient %d", p.Name, p.Shape, n, p.W.Len(), p.G.Len())
		}
	}
	return nil
}

// AdamW is decoupled-weight-decay Adam over a fixed list of params.
type AdamW struct {
	be      kernels.Backend
	params  []*model.Param
	noDecay []bool           // [len(params)]
	m, v    []kernels.Buffer // [len(params)], F32, param shapes
	step    int              // updates done so far
	hp      kernels.AdamWParams
}

var _ Optimizer = (*AdamW)(nil)

// NewAdamW allocates zero moment buffers for params.
func NewAdamW(be kernels.Backend, params []*model.Param, c AdamWConfig) (*AdamW, error) {
	if err := checkParams(params); err != nil {
		return nil, fmt.Errorf("optimizer: %w", err)
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) || !(c.Eps > 0) || c.WeightDecay < 0 {
		return nil, fmt.Errorf("optimizer: need 0 ≤ beta1, beta2 < 1, eps > 0, weight_decay ≥ 0; got %v, %v, %v, %v", c.Beta1, c.Beta2, c.Eps, c.WeightDecay)
	}
	o := &AdamW{be: be, params: params,
		hp: kernels.AdamWParams{Beta1: float32(c.Beta1), Beta2: float32(c.Beta2), Eps: float32(c.Eps), WeightDecay: float32(c.WeightDecay)}}
	for _, p := range params {
		o.noDecay = append(o.noDecay, c.NoDecay != nil && c.NoDecay(p.Name))
		o.m = append(o.m, be.Alloc(kernels.F32, numel(p)))
		o.v = append(o.v, be.Alloc(kernels.F32, numel(p)))
	}
	return o, nil
}

// Params returns the params the optimizer updates.
func (o *AdamW) Params() []*model.Param { return o.params }

// Steps is the number of updates done (Adam's t before the next Step).
func (o *AdamW) Steps() int { return o.step }

// Step applies one AdamW update with learning rate lr to every param from
// its current gradient, then syncs the backend.
func (o *AdamW) Step(lr float64) error {
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return fmt.Errorf("optimizer: learning rate %v", lr)
	}
	o.step++
	for i, p := range o.params {
		hp := o.hp
		hp.LR, hp.Step = float32(lr), o.step
		if o.noDecay[i] {
			hp.WeightDecay = 0
		}
		o.be.AdamW(p.W, p.G, o.m[i], o.v[i], numel(p), hp)
	}
	if err := o.be.Sync(); err != nil {
		return fmt.Errorf("optimizer: step %d: %w", o.step, err)
	}
	return nil
}

// Free releases the moment buffers.
func (o *AdamW) Free() {
	for i := range o.m {
		o.be.Free(o.m[i])
		o.be.Free(o.v[i])
	}
	o.m, o.v = nil, nil
}

// momentPrefix names the state tensors of param N: m.N and v.N.
var momentPrefix = [2]string{"m.", "v."}

// moment is m (k = 0) or v (k = 1) of param i.
func (o *AdamW) moment(k, i int) kernels.Buffer {
	if k == 0 {
		return o.m[i]
	}
	return o.v[i]
}

// State returns m and v of every param (m.N, v.N per param, in param
// order) and the step count (see the package header).
func (o *AdamW) State() (State, error) {
	var ts []safetensors.Tensor
	for i, p := range o.params {
		for k, pre := range momentPrefix {
			host := make([]float32, numel(p))
			o.be.CopyOut(host, o.moment(k, i))
			ts = append(ts, safetensors.FromFloat32(pre+p.Name, p.Shape, host))
		}
	}
	if err := o.be.Sync(); err != nil {
		return State{}, fmt.Errorf("optimizer state: %w", err)
	}
	return State{Tensors: ts, Scalars: map[string]string{"step": strconv.Itoa(o.step), "format": "argrl-adamw"}}, nil
}

// SetState restores m, v and the step count from a State of AdamW over the
// same params: names and shapes must match, and a tensor that matches no
// param is an error.
func (o *AdamW) SetState(st State) error {
	step, err := strconv.Atoi(st.Scalars["step"])
	if err != nil || step < 0 {
		return fmt.Errorf("metadata \"step\" = %q is not a step count", st.Scalars["step"])
	}
	byName := make(map[string]safetensors.Tensor, len(st.Tensors))
	for _, t := range st.Tensors {
		byName[t.Name] = t
	}
	want := map[string]bool{}
	for i, p := range o.params {
		for k, pre := range momentPrefix {
			name := pre + p.Name
			want[name] = true
			t, ok := byName[name]
			if !ok {
				return fmt.Errorf("tensor %q is missing", name)
			}
			if t.DType != safetensors.F32 || !slices.Equal(t.Shape, p.Shape) || len(t.Data) != 4*numel(p) {
				return fmt.Errorf("tensor %q is %s %v, want F32 %v", name, t.DType, t.Shape, p.Shape)
			}
			host := make([]float32, numel(p))
			for j := range host {
				host[j] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*j:]))
			}
			o.be.CopyIn(o.moment(k, i), host)
		}
	}
	for _, t := range st.Tensors {
		if !want[t.Name] {
			return fmt.Errorf("tensor %q matches no trainable param", t.Name)
		}
	}
	if err := o.be.Sync(); err != nil {
		return fmt.Errorf("optimizer state: %w", err)
	}
	o.step = step
	return nil
}
