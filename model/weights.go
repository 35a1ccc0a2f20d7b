package model

// The tagged weight structs (layers.go and the architecture files) are read
// here, and only here: their tags give every checkpoint name and shape, so
// nothing else spells a tensor name. A checkpoint is checked against the
// config in two passes before anything is allocated: the layer count from
// the header's names (num_hidden_layers may not drive an allocation the
// checkpoint does not back), then every tensor's presence, shape and dtype.

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/argrl/argrl/model/safetensors"
)

// Weights is one architecture's weight struct on a backend (*Qwen2Weights,
// *Qwen3Weights or *LlamaWeights): the runtime module whose layers run the
// forward pass.
type Weights interface {
	head() *Head
	numLayers() int
	layer(i int) decoderLayer
}

// TensorSpec is one tensor a config expects in its checkpoint.
type TensorSpec struct {
	Name  string
	Shape []int
}

// LinearModule is one linear layer a LoRA adapter can target.
type LinearModule struct {
	Path    string // module path, e.g. "model.layers.3.self_attn.q_proj"
	Short   string // e.g. "q_proj"
	Layer   int
	In, Out int // the base weight is [Out, In]
}

// field is one tagged tensor of a weight struct.
type field struct {
	name  string  // checkpoint name, layer index substituted (a Linear's weight: path + ".weight")
	shape string  // shape expression
	tied  string  // checkpoint name of the shared tensor, or ""
	layer int     // layer index, −1 outside the layers slice
	ptr   **Param // the field, or the Linear's W
	lin   *Linear // the Linear a weight belongs to, or nil
}

var (
	paramPtrType  = reflect.TypeOf((*Param)(nil))
	linearPtrType = reflect.TypeOf((*Linear)(nil))
)

// fields walks a weight struct (a pointer) and returns its tagged tensors in
// declaration order, allocating its *Linear modules on the way.
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
		case sf.Type == paramPtrType || sf.Type == linearPtrType:
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
			f := field{name: name, shape: sf.Tag.Get("shape"), tied: sf.Tag.Get("tied"), layer: layer}
			if sf.Type == linearPtrType {
				if fv.IsNil() {
					fv.Set(reflect.ValueOf(&Linear{}))
				}
				f.lin = fv.Interface().(*Linear)
				f.lin.Path = name
				f.name, f.ptr = name+".weight", &f.lin.W
			} else {
				f.ptr = fv.Addr().Interface().(**Param)
			}
			*out = append(*out, f)
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

// layerPrefixes returns the part before "%d" of every per-layer tag of the
// weight struct type t (e.g. "model.layers."), without allocating layers.
func layerPrefixes(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	var visit func(t reflect.Type, inLayers bool)
	visit = func(t reflect.Type, inLayers bool) {
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("st")
			switch {
			case inLayers && strings.Contains(tag, "%d"):
				out[tag[:strings.Index(tag, "%d")]] = true
			case sf.Anonymous && sf.Type.Kind() == reflect.Struct:
				visit(sf.Type, inLayers)
			case tag == "layers" && sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() == reflect.Struct:
				visit(sf.Type.Elem(), true)
			}
		}
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	visit(t, false)
	return out
}

// checkLayerCount compares num_hidden_layers with the layers the
// checkpoint's tensor names hold, before the layers are allocated.
func checkLayerCount(c *Config, a Arch, names []string, where string) error {
	prefixes := layerPrefixes(reflect.TypeOf(a.NewWeights(&Config{})))
	found := 0
	for _, n := range names {
		for p := range prefixes {
			rest, ok := strings.CutPrefix(n, p)
			if !ok {
				continue
			}
			idx, _, _ := strings.Cut(rest, ".")
			if l, err := strconv.Atoi(idx); err == nil && l >= 0 && l < 1<<30 {
				found = max(found, l+1)
			}
		}
	}
	if found != c.NumLayers {
		return fmt.Errorf("model: %s: key \"num_hidden_layers\" is %d, but %s holds %d layers", c.Path, c.NumLayers, where, found)
	}
	return nil
}

// maxElements bounds a tensor's element count from a shape tag (2⁴⁰: far
// above any real model, small enough that products cannot overflow).
const maxElements = 1 << 40

// evalShape evaluates a shape tag such as "Hq*D,C" against c.
func evalShape(expr string, c *Config) ([]int, error) {
	if expr == "" {
		return nil, fmt.Errorf("empty shape tag")
	}
	sym := map[string]int{"V": c.VocabSize, "C": c.HiddenSize, "F": c.IntermediateSize,
		"Hq": c.NumHeads, "Hkv": c.NumKVHeads, "D": c.HeadDim}
	var shape []int
	total := 1
	for _, dim := range strings.Split(expr, ",") {
		n := 1
		for _, f := range strings.Split(strings.TrimSpace(dim), "*") {
			f = strings.TrimSpace(f)
			v, ok := sym[f]
			if !ok {
				var err error
				if v, err = strconv.Atoi(f); err != nil {
					return nil, fmt.Errorf("shape tag %q: unknown symbol %q", expr, f)
				}
			}
			if v < 0 || (v > 0 && n > maxElements/v) {
				return nil, fmt.Errorf("shape tag %q: %s = %d gives more than 2^40 elements", expr, f, v)
			}
			n *= v
		}
		if n > 0 && total > maxElements/n {
			return nil, fmt.Errorf("shape tag %q gives more than 2^40 elements", expr)
		}
		total *= n
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

// configFields returns the tagged tensors of a fresh weight struct for c.
func configFields(c *Config) (Weights, []field, error) {
	arch, err := lookupArch(c.ModelType)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	w := arch.NewWeights(c)
	fs, err := fields(w)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %s: %w", c.ModelType, err)
	}
	return w, fs, nil
}

// Specs lists the tensors a checkpoint for c must contain, with their
// shapes, in declaration order (a tied lm_head is not listed).
func Specs(c *Config) ([]TensorSpec, error) {
	_, fs, err := configFields(c)
	if err != nil {
		return nil, err
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

// LinearModules lists every linear layer of the decoder c describes, layer
// by layer in declaration order (AllTargets order). It is empty when c's
// model type is not registered or its shapes do not evaluate.
func LinearModules(c *Config) []LinearModule {
	_, fs, err := configFields(c)
	if err != nil {
		return nil
	}
	var out []LinearModule
	for _, f := range fs {
		if f.lin == nil {
			continue
		}
		shape, err := evalShape(f.shape, c)
		if err != nil || len(shape) != 2 {
			return nil
		}
		short := f.lin.Path[strings.LastIndex(f.lin.Path, ".")+1:]
		out = append(out, LinearModule{Path: f.lin.Path, Short: short, Layer: f.layer, In: shape[1], Out: shape[0]})
	}
	return out
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

// tensorSource is a checkpoint's index: *safetensors.Set satisfies it.
type tensorSource interface {
	Names() []string
	Info(name string) (safetensors.TensorInfo, bool)
	FileOf(name string) string
}

// floatDType reports the dtypes a weight may be stored in.
func floatDType(d safetensors.DType) bool {
	return d == safetensors.F32 || d == safetensors.BF16 || d == safetensors.F16 || d == safetensors.F64
}

// checkTensors checks every tagged tensor of fs against src: present, of
// the shape c implies and of a float dtype, and every tensor of src used.
// The error lists all missing, unexpected and misshapen tensors together,
// naming the files. It returns the shape of each field.
func checkTensors(c *Config, fs []field, src tensorSource) ([][]int, error) {
	used := map[string]bool{}
	shapes := make([][]int, len(fs))
	var missing, bad []string
	for i, f := range fs {
		used[f.name] = true
		want, err := evalShape(f.shape, c)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %s: %w", c.ModelType, f.name, err)
		}
		shapes[i] = want
		if f.tied != "" && c.TieWordEmbeddings {
			continue // a copy saved anyway is ignored, as Hugging Face does
		}
		info, ok := src.Info(f.name)
		switch {
		case !ok:
			missing = append(missing, f.name)
		case !sameShape(info.Shape, want):
			bad = append(bad, fmt.Sprintf("%s in %s has shape %v, config %s wants %v (%s)",
				f.name, src.FileOf(f.name), info.Shape, c.Path, want, f.shape))
		case !floatDType(info.DType):
			return nil, fmt.Errorf("model: safetensors: %s: tensor %q: dtype %s does not convert to float32", src.FileOf(f.name), f.name, info.DType)
		}
	}
	var unexpected []string
	for _, n := range src.Names() {
		if !used[n] && !ignoredTensor(n) {
			unexpected = append(unexpected, n+" (in "+src.FileOf(n)+")")
		}
	}
	if len(missing)+len(bad)+len(unexpected) == 0 {
		return shapes, nil
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
