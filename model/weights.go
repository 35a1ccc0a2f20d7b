package model

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/argrl/argrl/model/safetensors"
)

// Tensor is a host tensor: row-major float32 Data of Shape. Weights loaded
// from BF16 or F16 are widened exactly, so converting Data back to the
// storage DType (e.g. for bf16 device buffers) gives the original bits.
type Tensor struct {
	Name  string            // checkpoint name, e.g. "model.layers.0.self_attn.q_proj.weight"
	Shape []int             // e.g. [Hq·D, C]
	Data  []float32         // len = product of Shape
	DType safetensors.DType // storage dtype in the checkpoint (F32, BF16, F16); "" if made in memory
}

// NewTensor allocates a zero tensor.
func NewTensor(name string, shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &Tensor{Name: name, Shape: append([]int(nil), shape...), Data: make([]float32, n)}
}

// TensorSource is a checkpoint to load from; *safetensors.Set satisfies it.
type TensorSource interface {
	Names() []string
	Info(name string) (safetensors.TensorInfo, bool)
	Float32(name string) ([]float32, safetensors.TensorInfo, error)
	FileOf(name string) string
}

// TensorSpec is one tensor a config expects in its checkpoint.
type TensorSpec struct {
	Name  string
	Shape []int
}

// field is one tagged *Tensor field of a weight struct.
type field struct {
	name  string // checkpoint name, layer index substituted
	shape string // shape expression
	tied  string // checkpoint name of the shared tensor, or ""
	ptr   **Tensor
}

var tensorPtrType = reflect.TypeOf((*Tensor)(nil))

// fields walks a weight struct (a pointer) and returns its tagged tensor fields.
func fields(w any) ([]field, error) {
	v := reflect.ValueOf(w)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("weights %T: want a non-nil pointer to a struct", w)
	}
	var out []field
	err := walk(v.Elem(), -1, &out)
	return out, err
}

func walk(v reflect.Value, layer int, out *[]field) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf, fv := t.Field(i), v.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("st")
		switch {
		case sf.Type == tensorPtrType:
			if tag == "" {
				continue // an untagged tensor is not a checkpoint weight
			}
			name := tag
			if strings.Contains(tag, "%d") {
				if layer < 0 {
					return fmt.Errorf("field %s: tag %q needs a layer index outside a layers slice", sf.Name, tag)
				}
				name = fmt.Sprintf(tag, layer)
			}
			*out = append(*out, field{name: name, shape: sf.Tag.Get("shape"), tied: sf.Tag.Get("tied"),
				ptr: fv.Addr().Interface().(**Tensor)})
		case sf.Anonymous && sf.Type.Kind() == reflect.Struct:
			if err := walk(fv, layer, out); err != nil {
				return err
			}
		case tag == "layers" && sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Struct:
			for j := 0; j < fv.Len(); j++ {
				if err := walk(fv.Index(j), j, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// evalShape evaluates a shape tag such as "Hq*D,C" against c.
func evalShape(expr string, c *Config) ([]int, error) {
	if expr == "" {
		return nil, fmt.Errorf("empty shape tag")
	}
	sym := map[string]int{"V": c.VocabSize, "C": c.HiddenSize, "F": c.IntermediateSize,
		"Hq": c.NumHeads, "Hkv": c.NumKVHeads, "D": c.HeadDim}
	var shape []int
	for _, dim := range strings.Split(expr, ",") {
		n := 1
		for _, f := range strings.Split(strings.TrimSpace(dim), "*") {
			f = strings.TrimSpace(f)
			if v, ok := sym[f]; ok {
				n *= v
			} else if v, err := strconv.Atoi(f); err == nil {
				n *= v
			} else {
				return nil, fmt.Errorf("shape tag %q: unknown symbol %q", expr, f)
			}
		}
		shape = append(shape, n)
	}
	return shape, nil
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

// Specs lists the tensors a checkpoint for c must contain, with their
// shapes, in declaration order (a tied lm_head is not listed).
func Specs(c *Config) ([]TensorSpec, error) {
	arch, err := lookupArch(c.ModelType)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	fs, err := fields(arch.NewWeights(c))
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", c.ModelType, err)
	}
	var out []TensorSpec
	for _, f := range fs {
		if f.tied != "" && c.TieWordEmbeddings {
			continue
		}
		shape, err := evalShape(f.shape, c)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %s: %w", c.ModelType, f.name, err)
		}
		out = append(out, TensorSpec{Name: f.name, Shape: shape})
	}
	return out, nil
}

// ignoredTensor reports checkpoint entries that carry no weights: the rotary
// inverse frequencies some older Llama checkpoints saved.
func ignoredTensor(name string) bool {
	return strings.HasSuffix(name, ".rotary_emb.inv_freq")
}

// listNames formats up to 8 names and a count of the rest.
func listNames(ns []string) string {
	const max = 8
	if len(ns) <= max {
		return strings.Join(ns, ", ")
	}
	return fmt.Sprintf("%s, ... and %d more", strings.Join(ns[:max], ", "), len(ns)-max)
}

// LoadWeights fills the architecture's weight struct for c from src. Every
// tagged tensor must be present with the shape the config implies; every
// tensor of src must be used. The error lists all missing, unexpected and
// misshapen tensors together, naming the files.
func LoadWeights(c *Config, src TensorSource) (Weights, error) {
	arch, err := lookupArch(c.ModelType)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", c.Path, err)
	}
	w := arch.NewWeights(c)
	fs, err := fields(w)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", c.ModelType, err)
	}
	used := map[string]bool{}
	var missing, bad []string
	byName := map[string]*Tensor{}
	var tied []field
	for _, f := range fs {
		used[f.name] = true
		if f.tied != "" && c.TieWordEmbeddings {
			tied = append(tied, f) // a copy saved anyway is ignored, as Hugging Face does
			continue
		}
		want, err := evalShape(f.shape, c)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %s: %w", c.ModelType, f.name, err)
		}
		info, ok := src.Info(f.name)
		if !ok {
			missing = append(missing, f.name)
			continue
		}
		if !sameShape(info.Shape, want) {
			bad = append(bad, fmt.Sprintf("%s in %s has shape %v, config %s wants %v (%s)",
				f.name, src.FileOf(f.name), info.Shape, c.Path, want, f.shape))
			continue
		}
		data, _, err := src.Float32(f.name)
		if err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		t := &Tensor{Name: f.name, Shape: want, Data: data, DType: info.DType}
		*f.ptr = t
		byName[f.name] = t
	}
	for _, f := range tied {
		t, ok := byName[f.tied]
		if !ok {
			if len(missing) == 0 && len(bad) == 0 {
				return nil, fmt.Errorf("model: %s: %s is tied to %s, which is not loaded", c.ModelType, f.name, f.tied)
			}
			continue
		}
		*f.ptr = t
	}
	var unexpected []string
	for _, n := range src.Names() {
		if !used[n] && !ignoredTensor(n) {
			unexpected = append(unexpected, n+" (in "+src.FileOf(n)+")")
		}
	}
	if len(missing)+len(bad)+len(unexpected) == 0 {
		return w, nil
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing tensors: "+listNames(missing))
	}
	if len(bad) > 0 {
		parts = append(parts, "wrong shapes: "+listNames(bad))
	}
	if len(unexpected) > 0 {
		parts = append(parts, "unexpected tensors: "+listNames(unexpected))
	}
	return nil, fmt.Errorf("model: %s checkpoint does not match %s: %s", c.ModelType, c.Path, strings.Join(parts, "; "))
}

// params returns the distinct loaded tensors of a weight struct in
// declaration order; the Weights implementations call it.
func params(w any) []*Tensor {
	fs, err := fields(w)
	if err != nil {
		return nil
	}
	seen := map[*Tensor]bool{}
	var out []*Tensor
	for _, f := range fs {
		if t := *f.ptr; t != nil && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// ParamsByName indexes w.Params() by checkpoint name.
func ParamsByName(w Weights) map[string]*Tensor {
	m := map[string]*Tensor{}
	for _, t := range w.Params() {
		m[t.Name] = t
	}
	return m
}
