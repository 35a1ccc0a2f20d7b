package trainer

// Optimizer: AdamW over a list of trainable parameters living on a
// kernels.Backend, with global grad-norm clipping and gradient accumulation.
//
// The model exposes each trainable tensor as a Param (name, shape, value
// buffer W, gradient buffer G). The optimizer never sees the model: it owns
// two state buffers per param (m, v: Adam's first and second moments, F32,
// zero-initialized) and calls Backend.AdamW once per param per step:
//
//	t = step+1
//	m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²
//	w -= lr·( (m/(1−β1ᵗ)) / (sqrt(v/(1−β2ᵗ)) + ε) + wd·w )    (wd = 0 for NoDecay params)
//
// Global grad norm (as torch.nn.utils.clip_grad_norm_): ‖g‖ = sqrt(Σ_p Σ_i g²),
// one Backend.Dot per param into a scratch vector, read back once, summed in
// float64. Clipping multiplies every G by max/(‖g‖+1e-6) when that is < 1
// (AXPBY in place).
//
// optimizer.safetensors holds, for each param name N, tensors "m.N" and
// "v.N" (F32, the param's shape), and metadata {"step": "<t>"}. F32 bytes
// round-trip exactly, so save → load is bit-exact.

import (
	"fmt"
	"math"
	"strconv"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// OptimizerFile is the optimizer state's file name inside a checkpoint.
const OptimizerFile = "optimizer.safetensors"

// Param is one trainable tensor as the model exposes it.
type Param struct {
	Name    string         // unique, stable across runs (e.g. the PEFT tensor name)
	Shape   []int          // logical shape; product = W.Len()
	W       kernels.Buffer // value, F32 [Shape]
	G       kernels.Buffer // gradient, [Shape]
	NoDecay bool           // exclude from weight decay (norm weights, biases)
}

// Numel is the number of elements of the param's shape.
func (p Param) Numel() int {
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

func checkParams(params []Param) error {
	seen := map[string]bool{}
	for i, p := range params {
		if p.Name == "" {
			return fmt.Errorf("param %d has no name", i)
		}
		if seen[p.Name] {
			return fmt.Errorf("param %q appears twice", p.Name)
		}
		seen[p.Name] = true
		if p.W == nil || p.G == nil {
			return fmt.Errorf("param %q: nil value or gradient buffer", p.Name)
		}
		n := p.Numel()
		if p.W.Len() != n || p.G.Len() != n {
			return fmt.Errorf("param %q: shape %v has %d elements, value has %d, gradient %d", p.Name, p.Shape, n, p.W.Len(), p.G.Len())
		}
	}
	return nil
}

// AdamW is decoupled-weight-decay Adam over a fixed list of params.
type AdamW struct {
	be     kernels.Backend
	params []Param
	m, v   []kernels.Buffer // [len(params)], F32, param shapes
	step   int              // updates done so far
	hp     kernels.AdamWParams
}

// NewAdamW allocates zero moment buffers for params, with β1, β2, ε and the
// weight decay of c. The learning rate is given per step.
func NewAdamW(be kernels.Backend, params []Param, c OptimConfig) (*AdamW, error) {
	if err := checkParams(params); err != nil {
		return nil, fmt.Errorf("optimizer: %w", err)
	}
	if !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1) || !(c.Eps > 0) || c.WeightDecay < 0 {
		return nil, fmt.Errorf("optimizer: need 0 ≤ beta1, beta2 < 1, eps > 0, weight_decay ≥ 0; got %v, %v, %v, %v", c.Beta1, c.Beta2, c.Eps, c.WeightDecay)
	}
	o := &AdamW{be: be, params: params,
		hp: kernels.AdamWParams{Beta1: float32(c.Beta1), Beta2: float32(c.Beta2), Eps: float32(c.Eps), WeightDecay: float32(c.WeightDecay)}}
	for _, p := range params {
		o.m = append(o.m, be.Alloc(kernels.F32, p.Numel()))
		o.v = append(o.v, be.Alloc(kernels.F32, p.Numel()))
	}
	return o, nil
}

// Params returns the params the optimizer updates.
func (o *AdamW) Params() []Param { return o.params }

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
		if p.NoDecay {
			hp.WeightDecay = 0
		}
		o.be.AdamW(p.W, p.G, o.m[i], o.v[i], p.Numel(), hp)
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

// Save writes optimizer.safetensors (m and v per param, metadata step) to
// path atomically.
func (o *AdamW) Save(path string) error {
	var ts []safetensors.Tensor
	for i, p := range o.params {
		for _, mv := range []struct {
			pre string
			b   kernels.Buffer
		}{{"m.", o.m[i]}, {"v.", o.v[i]}} {
			host := make([]float32, p.Numel())
			o.be.CopyOut(host, mv.b)
			ts = append(ts, safetensors.FromFloat32(mv.pre+p.Name, p.Shape, host))
		}
	}
	if err := o.be.Sync(); err != nil {
		return fmt.Errorf("optimizer: save %s: %w", path, err)
	}
	meta := map[string]string{"step": strconv.Itoa(o.step), "format": "argrl-adamw"}
	if err := safetensors.WriteFile(path, ts, meta); err != nil {
		return fmt.Errorf("optimizer: save: %w", err)
	}
	return nil
}

// Load restores m, v and the step count from a file written by Save for
// the same params (names and shapes must match; extra tensors are errors).
func (o *AdamW) Load(path string) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("optimizer: %w", err)
	}
	defer f.Close()
	step, err := strconv.Atoi(f.Metadata()["step"])
	if err != nil || step < 0 {
		return fmt.Errorf("optimizer: %s: metadata \"step\" = %q is not a step count", path, f.Metadata()["step"])
	}
	want := map[string]bool{}
	for i, p := range o.params {
		for _, mv := range []struct {
			pre string
			b   kernels.Buffer
		}{{"m.", o.m[i]}, {"v.", o.v[i]}} {
			name := mv.pre + p.Name
			want[name] = true
			host, info, err := f.Float32(name)
			if err != nil {
				return fmt.Errorf("optimizer: %s: tensor %q: %w", path, name, err)
			}
			if info.DType != safetensors.F32 || !sameShape(info.Shape, p.Shape) {
				return fmt.Errorf("optimizer: %s: tensor %q is %s %v, want F32 %v", path, name, info.DType, info.Shape, p.Shape)
			}
			o.be.CopyIn(mv.b, host)
		}
	}
	for _, n := range f.Names() {
		if !want[n] {
			return fmt.Errorf("optimizer: %s: tensor %q matches no trainable param", path, n)
		}
	}
	if err := o.be.Sync(); err != nil {
		return fmt.Errorf("optimizer: load %s: %w", path, err)
	}
	o.step = step
	return nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// GradNorm returns the global L2 norm of the params' gradients.
func GradNorm(be kernels.Backend, params []Param) (float64, error) {
	if len(params) == 0 {
		return 0, nil
	}
	scratch := be.Alloc(kernels.F32, len(params))
	defer be.Free(scratch)
	for i, p := range params {
		be.Dot(be.View(scratch, i, 1), p.G, p.G, p.Numel())
	}
	sq := make([]float32, len(params))
	be.CopyOut(sq, scratch)
	if err := be.Sync(); err != nil {
		return 0, fmt.Errorf("grad norm: %w", err)
	}
	var s float64
	for _, v := range sq {
		s += float64(v)
	}
	return math.Sqrt(s), nil
}

// ClipGradNorm computes the global grad norm and, when maxNorm > 0 and the
// norm exceeds it, scales every gradient by maxNorm/(norm+1e-6). It returns
// the norm before clipping. A non-finite norm leaves the gradients as they
// are (the caller's NaN guard stops the run).
func ClipGradNorm(be kernels.Backend, params []Param, maxNorm float64) (float64, error) {
	norm, err := GradNorm(be, params)
	if err != nil {
		return norm, err
	}
	if maxNorm <= 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, nil
	}
	if c := maxNorm / (norm + 1e-6); c < 1 {
		for _, p := range params {
			be.AXPBY(p.G, p.G, nil, float32(c), 0, p.Numel())
		}
		if err := be.Sync(); err != nil {
			return norm, fmt.Errorf("grad clip: %w", err)
		}
	}
	return norm, nil
}

// GradAccum sums micro-batch gradients into buffers of its own, for models
// whose backward pass overwrites G: Zero, then Add(scale) after each
// micro-batch's backward, then step an optimizer built over Params().
type GradAccum struct {
	be     kernels.Backend
	src    []Param
	params []Param // src with G replaced by the accumulators
}

// NewGradAccum allocates one zeroed F32 accumulator per param.
func NewGradAccum(be kernels.Backend, params []Param) (*GradAccum, error) {
	if err := checkParams(params); err != nil {
		return nil, fmt.Errorf("grad accumulation: %w", err)
	}
	a := &GradAccum{be: be, src: params}
	for _, p := range params {
		q := p
		q.G = be.Alloc(kernels.F32, p.Numel())
		a.params = append(a.params, q)
	}
	return a, nil
}

// Params returns the params with G = the accumulated gradients.
func (a *GradAccum) Params() []Param { return a.params }

// Zero clears the accumulators.
func (a *GradAccum) Zero() {
	for _, p := range a.params {
		a.be.Fill(p.G, 0)
	}
}

// Add accumulates acc += scale·G for every param.
func (a *GradAccum) Add(scale float64) {
	for i, p := range a.params {
		a.be.AXPBY(p.G, p.G, a.src[i].G, 1, float32(scale), p.Numel())
	}
}

// Free releases the accumulators.
func (a *GradAccum) Free() {
	for _, p := range a.params {
		a.be.Free(p.G)
	}
	a.params = nil
}

// WriteParams writes the params' values to a safetensors file (F32, keyed
// by Param.Name) atomically: value_head.safetensors, or full weights.
func WriteParams(be kernels.Backend, path string, params []Param) error {
	var ts []safetensors.Tensor
	for _, p := range params {
		host := make([]float32, p.Numel())
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
func ReadParams(be kernels.Backend, path string, params []Param) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("read params: %w", err)
	}
	defer f.Close()
	for _, p := range params {
		host, info, err := f.Float32(p.Name)
		if err != nil {
			return fmt.Errorf("read params: %s: tensor %q: %w", path, p.Name, err)
		}
		if !sameShape(info.Shape, p.Shape) {
			return fmt.Errorf("read params: %s: tensor %q has shape %v, want %v", path, p.Name, info.Shape, p.Shape)
		}
		be.CopyIn(p.W, host)
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("read params %s: %w", path, err)
	}
	return nil
}
