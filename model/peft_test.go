package model

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/argrl/argrl/model/safetensors"
)

func TestImportFixtureAdapters(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			c, err := LoadConfig(filepath.Join(fixtures, name))
			if err != nil {
				t.Fatal(err)
			}
			ref := loadReference(t, name)
			a, err := ImportPEFT(filepath.Join(fixtures, name, "adapter"), c)
			if err != nil {
				t.Fatal(err)
			}
			if a.R != ref.Lora.R || a.Alpha != ref.Lora.Alpha || a.Scale() != ref.Lora.Scale || a.Dropout != 0 || a.RSLoRA {
				t.Errorf("adapter r=%d α=%v scale=%v dropout=%v, reference %+v", a.R, a.Alpha, a.Scale(), a.Dropout, ref.Lora)
			}
			if !reflect.DeepEqual(a.Targets, ref.Lora.Targets) || !reflect.DeepEqual(a.Targets, AllTargets) {
				t.Errorf("targets %v", a.Targets)
			}
			if len(a.Modules) != 7*c.NumLayers || len(ref.AdapterSums) != 2*len(a.Modules) {
				t.Fatalf("%d modules, reference %d tensors", len(a.Modules), len(ref.AdapterSums))
			}
			for _, m := range LinearModules(c) {
				l := a.Modules[m.Path]
				if l == nil {
					t.Fatalf("no LoRA for %s", m.Path)
				}
				for _, x := range []*Tensor{l.A, l.B} {
					var sum float64
					for _, v := range x.Data {
						sum += float64(v)
					}
					if want := ref.AdapterSums[x.Name]; math.Abs(sum-want) > 1e-9*math.Max(1, math.Abs(want)) {
						t.Errorf("%s: sum %v, torch %v", x.Name, sum, want)
					}
				}
				if !sameShape(l.A.Shape, []int{4, m.In}) || !sameShape(l.B.Shape, []int{m.Out, 4}) {
					t.Errorf("%s: A %v B %v", m.Path, l.A.Shape, l.B.Shape)
				}
			}
			// The gradient reference names exactly the adapter's tensors.
			g, err := safetensors.Open(filepath.Join(fixtures, name, "lora_grads.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			var names []string
			for _, l := range a.Modules {
				names = append(names, l.A.Name, l.B.Name)
			}
			sort.Strings(names)
			if !reflect.DeepEqual(names, g.Names()) {
				t.Errorf("gradient tensors differ from adapter tensors")
			}
			for _, n := range names {
				gi, _ := g.Info(n)
				if gi.DType != safetensors.F64 {
					t.Errorf("%s: gradient dtype %s", n, gi.DType)
				}
			}
		})
	}
}

func TestPEFTRoundTrip(t *testing.T) {
	c, err := LoadConfig(filepath.Join(fixtures, "qwen3-f32-tied"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAdapter(c, 8, 16, 0.05, []string{"v_proj", "q_proj", "down_proj"})
	if err != nil {
		t.Fatal(err)
	}
	a.BaseModel = "Qwen/Qwen3-0.6B"
	if want := []string{"q_proj", "v_proj", "down_proj"}; !reflect.DeepEqual(a.Targets, want) {
		t.Errorf("targets %v, want %v", a.Targets, want)
	}
	if len(a.Modules) != 3*c.NumLayers {
		t.Fatalf("%d modules", len(a.Modules))
	}
	k := 0
	for _, l := range a.Modules {
		for _, x := range []*Tensor{l.A, l.B} {
			for i := range x.Data {
				k++
				x.Data[i] = float32(math.Sin(float64(k))) // distinct values
			}
		}
	}
	dir := filepath.Join(t.TempDir(), "step-000010")
	if err := ExportPEFT(dir, a, c); err != nil {
		t.Fatal(err)
	}
	b, err := ImportPEFT(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	if b.R != 8 || b.Alpha != 16 || b.Dropout != 0.05 || b.BaseModel != a.BaseModel || !reflect.DeepEqual(b.Targets, a.Targets) {
		t.Errorf("reimported %+v", b)
	}
	if len(b.Modules) != len(a.Modules) {
		t.Fatalf("%d modules back, %d out", len(b.Modules), len(a.Modules))
	}
	for p, l := range a.Modules {
		m := b.Modules[p]
		if m == nil || !reflect.DeepEqual(m.A.Data, l.A.Data) || !reflect.DeepEqual(m.B.Data, l.B.Data) ||
			!sameShape(m.A.Shape, l.A.Shape) || !sameShape(m.B.Shape, l.B.Shape) {
			t.Errorf("%s changed in the round trip", p)
		}
	}
	// The files follow PEFT: key names, dtypes, config keys.
	f, err := safetensors.Open(filepath.Join(dir, AdapterWeightsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Metadata()["format"] != "pt" {
		t.Errorf("metadata %v", f.Metadata())
	}
	info, ok := f.Info("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight")
	if !ok || info.DType != safetensors.F32 || !sameShape(info.Shape, []int{64, 8}) {
		t.Errorf("down_proj lora_B: %+v %v", info, ok)
	}
	if info, ok := f.Info("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"); !ok || !sameShape(info.Shape, []int{8, 64}) {
		t.Errorf("q_proj lora_A: %+v %v", info, ok)
	}
	raw, err := os.ReadFile(filepath.Join(dir, AdapterConfigName))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"peft_type": "LORA", "r": 8.0, "lora_alpha": 16.0, "lora_dropout": 0.05, "bias": "none",
		"task_type": "CAUSAL_LM", "fan_in_fan_out": false, "use_rslora": false, "use_dora": false, "modules_to_save": nil,
		"base_model_name_or_path": "Qwen/Qwen3-0.6B", "inference_mode": true, "init_lora_weights": true} {
		if got, ok := cfg[k]; !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("adapter_config %s = %v, want %v", k, got, v)
		}
	}
	if tm, _ := cfg["target_modules"].([]any); len(tm) != 3 || tm[0] != "q_proj" {
		t.Errorf("target_modules %v", cfg["target_modules"])
	}
	// Exporting again is byte-identical (deterministic output for resume tests).
	dir2 := filepath.Join(t.TempDir(), "again")
	if err := ExportPEFT(dir2, b, c); err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{AdapterConfigName, AdapterWeightsName} {
		x, _ := os.ReadFile(filepath.Join(dir, fn))
		y, _ := os.ReadFile(filepath.Join(dir2, fn))
		if string(x) != string(y) {
			t.Errorf("%s differs on re-export", fn)
		}
	}
	if s := (&Adapter{R: 4, Alpha: 8, RSLoRA: true}).Scale(); s != 4 {
		t.Errorf("rsLoRA scale %v, want α/√r = 4", s)
	}
}

// adapterCopy copies a fixture adapter into a temp dir, applying edits to the
// config (JSON key → raw value, "" deletes) and to the tensors.
func adapterCopy(t *testing.T, cfgEdit map[string]string, edit func([]safetensors.Tensor) []safetensors.Tensor) string {
	t.Helper()
	src := filepath.Join(fixtures, "qwen2-f32", "adapter")
	dst := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(src, AdapterConfigName))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range cfgEdit {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = json.RawMessage(v)
		}
	}
	raw, _ = json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dst, AdapterConfigName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(src, AdapterWeightsName))
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, info := range f.Tensors() {
		b, _, _ := f.Bytes(info.Name)
		ts = append(ts, safetensors.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	f.Close()
	if edit != nil {
		ts = edit(ts)
	}
	if err := safetensors.WriteFile(filepath.Join(dst, AdapterWeightsName), ts, nil); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestImportPEFTErrors(t *testing.T) {
	c, err := LoadConfig(filepath.Join(fixtures, "qwen2-f32"))
	if err != nil {
		t.Fatal(err)
	}
	const qa = "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	drop := func(name string) func([]safetensors.Tensor) []safetensors.Tensor {
		return func(ts []safetensors.Tensor) []safetensors.Tensor {
			var out []safetensors.Tensor
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out
		}
	}
	cases := []struct {
		name string
		cfg  map[string]string
		edit func([]safetensors.Tensor) []safetensors.Tensor
		want string
	}{
		{"r disagreement", map[string]string{"r": "8"}, nil, `.lora_A.weight" has shape [4 128], want [8 128] (r=8 from `},
		{"not lora", map[string]string{"peft_type": `"IA3"`}, nil, `key "peft_type": "IA3" is not supported`},
		{"dora", map[string]string{"use_dora": "true"}, nil, `key "use_dora": true is not supported`},
		{"bias", map[string]string{"bias": `"all"`}, nil, `key "bias": "all" is not supported`},
		{"fan in fan out", map[string]string{"fan_in_fan_out": "true"}, nil, `key "fan_in_fan_out": true is not supported`},
		{"rank pattern", map[string]string{"rank_pattern": `{"q_proj": 8}`}, nil, `key "rank_pattern"`},
		{"modules to save", map[string]string{"modules_to_save": `["lm_head"]`}, nil, `key "modules_to_save"`},
		{"regex targets", map[string]string{"target_modules": `".*proj"`}, nil, `key "target_modules": expected a list`},
		{"unknown target", map[string]string{"target_modules": `["q_proj", "qkv_proj"]`}, nil, `unknown target module "qkv_proj"`},
		{"missing r", map[string]string{"r": ""}, nil, `required key "r" is missing`},
		{"r type", map[string]string{"r": `"4"`}, nil, `key "r": expected int`},
		{"fewer targets", map[string]string{"target_modules": `["q_proj", "k_proj", "v_proj", "o_proj"]`}, nil, `down_proj is not in target_modules [q_proj k_proj v_proj o_proj]`},
		{"unknown module", nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.FromFloat32("base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight", []int{4, 64}, make([]float32, 256)))
		}, `module "model.layers.9.self_attn.q_proj" is not a linear layer of the 2-layer qwen2 base model`},
		{"not a lora tensor", nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.FromFloat32("base_model.model.lm_head.weight", []int{1}, []float32{0}))
		}, `tensor "base_model.model.lm_head.weight" is not a PEFT LoRA weight`},
		{"adapter name kept", nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(drop(qa)(ts), safetensors.FromFloat32("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", []int{4, 64}, make([]float32, 256)))
		}, `is not a PEFT LoRA weight`},
		{"missing B", nil, drop("base_model.model.model.layers.1.mlp.up_proj.lora_B.weight"), `module "model.layers.1.mlp.up_proj": lora_A or lora_B is missing`},
		{"missing module", nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			return drop("base_model.model.model.layers.1.mlp.up_proj.lora_B.weight")(drop("base_model.model.model.layers.1.mlp.up_proj.lora_A.weight")(ts))
		}, `no lora_A/lora_B for targeted modules model.layers.1.mlp.up_proj`},
		{"B shape", nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == "base_model.model.model.layers.0.self_attn.k_proj.lora_B.weight" {
					ts[i].Shape = []int{ts[i].Shape[1], ts[i].Shape[0]}
				}
			}
			return ts
		}, `k_proj.lora_B.weight" has shape [4 32], want [32 4]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := adapterCopy(t, tc.cfg, tc.edit)
			_, err := ImportPEFT(dir, c)
			if err == nil {
				t.Fatal("imported")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q lacks %q or the directory", err, tc.want)
			}
		})
	}
	// An adapter trained on another architecture does not fit.
	c3, err := LoadConfig(filepath.Join(fixtures, "qwen3-f32-tied"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ImportPEFT(filepath.Join(fixtures, "qwen2-f32", "adapter"), c3); err == nil || !strings.Contains(err.Error(), "has shape") {
		t.Errorf("qwen2 adapter on qwen3: %v", err)
	}
	// Export refuses an inconsistent adapter and writes nothing.
	a, _ := NewAdapter(c, 4, 8, 0, AllTargets)
	a.Modules["model.layers.0.mlp.up_proj"].B = NewTensor("x", 3, 4)
	dir := filepath.Join(t.TempDir(), "out")
	if err := ExportPEFT(dir, a, c); err == nil || !strings.Contains(err.Error(), "has shape [3 4], want [128 4]") {
		t.Errorf("export bad adapter: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Error("failed export created the directory")
	}
	if _, err := NewAdapter(c, 0, 8, 0, AllTargets); err == nil {
		t.Error("r=0 accepted")
	}
}
