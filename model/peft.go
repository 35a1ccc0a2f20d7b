package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/internal/sha256sums"
	"github.com/argrl/argrl/model/safetensors"
)

// LoRA adapters in PEFT's on-disk layout, so that PEFT and vLLM load what
// argrl trains and argrl loads what they train:
//
//	adapter_config.json        {"peft_type": "LORA", "r": 32, "lora_alpha": 64, "target_modules": [...], ...}
//	adapter_model.safetensors  base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight  [r, in]
//	                           base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight  [out, r]
//
// A LoRA-adapted linear layer computes W x + (α/r)·B A x (α/√r with rsLoRA).

// PEFT file names inside an adapter directory.
const (
	AdapterConfigName  = "adapter_config.json"
	AdapterWeightsName = "adapter_model.safetensors"
	peftPrefix         = "base_model.model."
)

// AllTargets are the linear layers of every supported decoder, in layer order.
var AllTargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// Tensor is a host tensor of an adapter: row-major float32 Data of Shape.
type Tensor struct {
	Name  string            // e.g. "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	Shape []int             // e.g. [r, in]
	Data  []float32         // len = product of Shape
	DType safetensors.DType // storage dtype in the file; "" if made in memory
}

// NewTensor allocates a zero tensor.
func NewTensor(name string, shape ...int) *Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &Tensor{Name: name, Shape: append([]int(nil), shape...), Data: make([]float32, n)}
}

// LoRA is the adapter pair of one linear layer.
type LoRA struct {
	A *Tensor // [r, in]
	B *Tensor // [out, r]
}

// Adapter is a LoRA adapter in host memory.
type Adapter struct {
	R         int      // rank r
	Alpha     float64  // lora_alpha α
	Dropout   float64  // lora_dropout, applied to the LoRA input while training
	RSLoRA    bool     // use_rslora: scale α/√r instead of α/r
	Targets   []string // short module names, AllTargets order
	BaseModel string   // base_model_name_or_path

	Modules map[string]*LoRA // by module path, one per targeted linear layer
}

// Scale is the factor applied to B A x: α/r, or α/√r with rsLoRA.
func (a *Adapter) Scale() float64 {
	if a.RSLoRA {
		return a.Alpha / math.Sqrt(float64(a.R))
	}
	return a.Alpha / float64(a.R)
}

// NewAdapter allocates a zero adapter (A and B all zero) for the targeted
// layers of c. Initialization (Kaiming-uniform A, zero B) is the trainer's.
func NewAdapter(c *Config, r int, alpha, dropout float64, targets []string) (*Adapter, error) {
	a := &Adapter{R: r, Alpha: alpha, Dropout: dropout, Modules: map[string]*LoRA{}}
	ts, err := orderTargets(targets)
	if err != nil {
		return nil, fmt.Errorf("model: lora: %w", err)
	}
	a.Targets = ts
	if r <= 0 {
		return nil, fmt.Errorf("model: lora: rank r must be positive, got %d", r)
	}
	for _, m := range LinearModules(c) {
		if contains(ts, m.Short) {
			a.Modules[m.Path] = &LoRA{
				A: NewTensor(peftName(m.Path, "A"), r, m.In),
				B: NewTensor(peftName(m.Path, "B"), m.Out, r),
			}
		}
	}
	return a, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// orderTargets checks target names and returns them in AllTargets order.
func orderTargets(targets []string) ([]string, error) {
	if len(targets) == 0 {
		return nil, fmt.Errorf("no target modules")
	}
	for _, t := range targets {
		if !contains(AllTargets, t) {
			return nil, fmt.Errorf("unknown target module %q (supported: %s)", t, strings.Join(AllTargets, ", "))
		}
	}
	var out []string
	for _, t := range AllTargets {
		if contains(targets, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func peftName(path, ab string) string { return peftPrefix + path + ".lora_" + ab + ".weight" }

// Validate checks the adapter against the base config: known targets, one
// pair per targeted layer and no other, shapes A [r, in] and B [out, r].
func (a *Adapter) Validate(c *Config) error {
	if a.R <= 0 {
		return fmt.Errorf("rank r must be positive, got %d", a.R)
	}
	ts, err := orderTargets(a.Targets)
	if err != nil {
		return err
	}
	want := map[string]LinearModule{}
	for _, m := range LinearModules(c) {
		if contains(ts, m.Short) {
			want[m.Path] = m
		}
	}
	var paths []string
	for p := range a.Modules {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		m, ok := want[p]
		if !ok {
			return fmt.Errorf("module %q is not a targeted linear layer of this %d-layer %s model", p, c.NumLayers, c.ModelType)
		}
		l := a.Modules[p]
		if l == nil || l.A == nil || l.B == nil {
			return fmt.Errorf("module %q: lora_A or lora_B is missing", p)
		}
		if err := checkShape(l.A, peftName(p, "A"), []int{a.R, m.In}, a.R); err != nil {
			return err
		}
		if err := checkShape(l.B, peftName(p, "B"), []int{m.Out, a.R}, a.R); err != nil {
			return err
		}
	}
	var absent []string
	for _, m := range LinearModules(c) {
		if _, ok := want[m.Path]; ok && a.Modules[m.Path] == nil {
			absent = append(absent, m.Path)
		}
	}
	if len(absent) > 0 {
		return fmt.Errorf("no lora_A/lora_B for targeted modules %s", listNames(absent))
	}
	return nil
}

func checkShape(t *Tensor, name string, want []int, r int) error {
	if !sameShape(t.Shape, want) {
		return fmt.Errorf("tensor %s has shape %v, want %v (r=%d and the base config)", name, t.Shape, want, r)
	}
	if len(t.Data) != want[0]*want[1] {
		return fmt.Errorf("tensor %s has %d values for shape %v", name, len(t.Data), want)
	}
	return nil
}

// ExportPEFT writes a to dir (created if needed) as adapter_config.json and
// adapter_model.safetensors (F32), each atomically. c is the base config
// the adapter is checked against.
func ExportPEFT(dir string, a *Adapter, c *Config) error {
	if err := a.Validate(c); err != nil {
		return fmt.Errorf("model: export adapter to %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("model: export adapter: %w", err)
	}
	var ts []safetensors.Tensor
	for p, l := range a.Modules {
		ts = append(ts, safetensors.FromFloat32(peftName(p, "A"), l.A.Shape, l.A.Data),
			safetensors.FromFloat32(peftName(p, "B"), l.B.Shape, l.B.Data))
	}
	if err := safetensors.WriteFile(filepath.Join(dir, AdapterWeightsName), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("model: export adapter: %w", err)
	}
	var base any
	if a.BaseModel != "" {
		base = a.BaseModel
	}
	targets, _ := orderTargets(a.Targets)
	// The keys PEFT's LoraConfig writes (a set every PEFT ≥ 0.10 accepts).
	cfg := map[string]any{
		"alpha_pattern": map[string]any{}, "auto_mapping": nil, "base_model_name_or_path": base,
		"bias": "none", "fan_in_fan_out": false, "inference_mode": true, "init_lora_weights": true,
		"layer_replication": nil, "layers_pattern": nil, "layers_to_transform": nil, "loftq_config": map[string]any{},
		"lora_alpha": a.Alpha, "lora_dropout": a.Dropout, "megatron_config": nil, "megatron_core": "megatron.core",
		"modules_to_save": nil, "peft_type": "LORA", "r": a.R, "rank_pattern": map[string]any{}, "revision": nil,
		"target_modules": targets, "task_type": "CAUSAL_LM", "use_dora": false, "use_rslora": a.RSLoRA,
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("model: export adapter: %w", err)
	}
	js = append(js, '\n')
	err = safetensors.WriteAtomic(filepath.Join(dir, AdapterConfigName), func(w io.Writer) error {
		_, err := w.Write(js)
		return err
	})
	if err != nil {
		return fmt.Errorf("model: export adapter: %w", err)
	}
	return nil
}

// AdapterError is the error of an adapter directory that cannot be used
// (unreadable, failing its SHA256SUMS, or not fitting the base model), so
// that a caller can blame the setting that named the adapter rather than
// the base model's. The message names the adapter's directory.
type AdapterError struct {
	Dir string
	Err error
}

func (e *AdapterError) Error() string { return e.Err.Error() }
func (e *AdapterError) Unwrap() error { return e.Err }

// verifyDir checks dir against its SHA256SUMS when it has one (an argrl
// checkpoint, RUN/best, or a copy of one): a corrupt file is refused by
// every loader alike.
func verifyDir(dir string) error {
	if err := sha256sums.VerifyIfPresent(dir); err != nil {
		return fmt.Errorf("model: %w; refusing to load it", err)
	}
	return nil
}

// baseName names the base model of c in messages: its directory.
func baseName(c *Config) string {
	if c.Path == "" {
		return "(in memory)"
	}
	return filepath.Dir(c.Path)
}

// ImportPEFT reads a PEFT LoRA adapter directory and checks it against the
// base config c, after checking the directory against its SHA256SUMS when
// it has one. Errors (*AdapterError) name the adapter's directory, the
// file and the key or tensor, and the base model when it does not fit.
func ImportPEFT(dir string, c *Config) (*Adapter, error) {
	a, err := importPEFT(dir, c)
	if err != nil {
		return nil, &AdapterError{Dir: dir, Err: err}
	}
	return a, nil
}

func importPEFT(dir string, c *Config) (*Adapter, error) {
	if err := verifyDir(dir); err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, AdapterConfigName)
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	a, err := parseAdapterConfig(raw, cfgPath)
	if err != nil {
		return nil, err
	}
	wPath := filepath.Join(dir, AdapterWeightsName)
	f, err := safetensors.Open(wPath)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	mods := map[string]LinearModule{}
	for _, m := range LinearModules(c) {
		mods[m.Path] = m
	}
	a.Modules = map[string]*LoRA{}
	for _, info := range f.Tensors() {
		name := info.Name
		var path, ab string
		switch {
		case strings.HasPrefix(name, peftPrefix) && strings.HasSuffix(name, ".lora_A.weight"):
			path, ab = strings.TrimSuffix(strings.TrimPrefix(name, peftPrefix), ".lora_A.weight"), "A"
		case strings.HasPrefix(name, peftPrefix) && strings.HasSuffix(name, ".lora_B.weight"):
			path, ab = strings.TrimSuffix(strings.TrimPrefix(name, peftPrefix), ".lora_B.weight"), "B"
		default:
			return nil, fmt.Errorf("model: %s: tensor %q is not a PEFT LoRA weight (base_model.model.<module>.lora_A.weight or lora_B.weight)", wPath, name)
		}
		m, ok := mods[path]
		if !ok {
			return nil, fmt.Errorf("model: %s: tensor %q: module %q is not a linear layer of the %d-layer %s base model %s", wPath, name, path, c.NumLayers, c.ModelType, baseName(c))
		}
		if !contains(a.Targets, m.Short) {
			return nil, fmt.Errorf("model: %s: tensor %q: %s is not in target_modules %v of %s", wPath, name, m.Short, a.Targets, cfgPath)
		}
		want := []int{a.R, m.In}
		if ab == "B" {
			want = []int{m.Out, a.R}
		}
		if !sameShape(info.Shape, want) {
			return nil, fmt.Errorf("model: adapter %s does not fit the base model %s: %s: tensor %q has shape %v, want %v (r=%d from %s, dims from %s)",
				dir, baseName(c), wPath, name, info.Shape, want, a.R, cfgPath, c.Path)
		}
		data, _, err := f.Float32(name)
		if err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
		l := a.Modules[path]
		if l == nil {
			l = &LoRA{}
			a.Modules[path] = l
		}
		t := &Tensor{Name: name, Shape: want, Data: data, DType: info.DType}
		if ab == "A" {
			l.A = t
		} else {
			l.B = t
		}
	}
	if err := a.Validate(c); err != nil {
		return nil, fmt.Errorf("model: adapter %s does not fit the base model %s: %s: %w", dir, baseName(c), wPath, err)
	}
	return a, nil
}

// ReadAdapterConfig reads dir/adapter_config.json alone (r, α, targets,
// dropout, base model; no weights, no base config needed), after checking
// the directory against its SHA256SUMS when it has one.
func ReadAdapterConfig(dir string) (*Adapter, error) {
	if err := verifyDir(dir); err != nil {
		return nil, &AdapterError{Dir: dir, Err: err}
	}
	path := filepath.Join(dir, AdapterConfigName)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return parseAdapterConfig(raw, path)
}

// parseAdapterConfig reads the adapter_config.json keys argrl implements and
// rejects settings it does not (DoRA, bias training, per-layer ranks, ...).
func parseAdapterConfig(raw []byte, path string) (*Adapter, error) {
	r := &configReader{path: path}
	if err := json.Unmarshal(raw, &r.m); err != nil {
		return nil, fmt.Errorf("model: %s: %w", path, err)
	}
	a := &Adapter{}
	var peftType string
	if err := r.get("peft_type", &peftType, true); err != nil {
		return nil, err
	}
	if peftType != "LORA" {
		return nil, r.errf("peft_type", "%q is not supported (only \"LORA\")", peftType)
	}
	if err := r.positive("r", &a.R, true); err != nil {
		return nil, err
	}
	if err := r.get("lora_alpha", &a.Alpha, true); err != nil {
		return nil, err
	}
	if err := r.get("lora_dropout", &a.Dropout, false); err != nil {
		return nil, err
	}
	if a.Dropout < 0 || a.Dropout >= 1 {
		return nil, r.errf("lora_dropout", "must be in [0, 1), got %v", a.Dropout)
	}
	if err := r.get("use_rslora", &a.RSLoRA, false); err != nil {
		return nil, err
	}
	if err := r.get("base_model_name_or_path", &a.BaseModel, false); err != nil {
		return nil, err
	}
	if !r.present("target_modules") {
		return nil, fmt.Errorf("model: %s: required key %q is missing", path, "target_modules")
	}
	var targets []string
	if err := json.Unmarshal(r.m["target_modules"], &targets); err != nil {
		return nil, r.errf("target_modules", "expected a list of module names (a regular expression is not supported)")
	}
	ts, err := orderTargets(targets)
	if err != nil {
		return nil, r.errf("target_modules", "%v", err)
	}
	a.Targets = ts
	// Settings argrl does not implement: any value but these (or null) is refused.
	accepted := []struct {
		key  string
		vals []string
	}{
		{"bias", []string{`"none"`}}, {"task_type", []string{`"CAUSAL_LM"`}},
		{"fan_in_fan_out", []string{"false"}}, {"use_dora", []string{"false"}}, {"lora_bias", []string{"false"}},
		{"layers_to_transform", nil}, {"layer_replication", nil}, {"modules_to_save", []string{"[]"}},
		{"rank_pattern", []string{"{}"}}, {"alpha_pattern", []string{"{}"}},
	}
	for _, k := range accepted {
		v, ok := r.m[k.key]
		if !ok {
			continue
		}
		v = bytes.Join(bytes.Fields(v), nil) // drop whitespace: "{ }" == "{}"
		if string(v) == "null" || contains(k.vals, string(v)) {
			continue
		}
		want := "null"
		if len(k.vals) > 0 {
			want = k.vals[0] + " or null"
		}
		return nil, r.errf(k.key, "%s is not supported (want %s)", v, want)
	}
	return a, nil
}
