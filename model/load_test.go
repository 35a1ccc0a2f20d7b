package model

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

func TestLoadFixtures(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			m := openFixture(t, name, Options{})
			c, ref := m.Config, loadReference(t, name)
			specs, err := Specs(c)
			if err != nil {
				t.Fatal(err)
			}
			byName := m.byName
			if len(byName) != len(specs) || len(m.Params()) != len(specs) {
				t.Fatalf("%d params, %d specs", len(byName), len(specs))
			}
			if len(ref.TensorSums) != len(specs) {
				t.Fatalf("reference lists %d tensors, specs %d", len(ref.TensorSums), len(specs))
			}
			for _, s := range specs {
				p := byName[s.Name]
				if p == nil {
					t.Fatalf("param %s not loaded", s.Name)
				}
				if !sameShape(p.Shape, s.Shape) || p.Len() != s.Shape[0]*prod(s.Shape[1:]) {
					t.Errorf("%s: shape %v len %d, spec %v", s.Name, p.Shape, p.Len(), s.Shape)
				}
				// Matrices keep the checkpoint's dtype on the device; vectors are f32.
				wantDType := kernels.F32
				if c.TorchDType == "bfloat16" && len(s.Shape) == 2 {
					wantDType = kernels.BF16
				}
				if p.W.DType() != wantDType {
					t.Errorf("%s: device dtype %v, want %v", s.Name, p.W.DType(), wantDType)
				}
				data := readHost(m, p)
				if c.TorchDType == "bfloat16" {
					for i, v := range data {
						if safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v)) != v {
							t.Fatalf("%s[%d] = %v is not a bf16 value", s.Name, i, v)
						}
					}
				}
				// Values decode exactly as torch wrote them (sums in float64).
				var sum float64
				for _, v := range data {
					sum += float64(v)
				}
				want, ok := ref.TensorSums[s.Name]
				if !ok {
					t.Errorf("%s: not in the reference", s.Name)
				} else if math.Abs(sum-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("%s: sum %v, torch %v", s.Name, sum, want)
				}
			}
			head := headOf(t, m.Weights())
			if c.TieWordEmbeddings != (head.LMHead == head.Embed) {
				t.Errorf("tied=%v but lm_head==embed is %v", c.TieWordEmbeddings, head.LMHead == head.Embed)
			}
			if head.LMHead == nil || !sameShape(head.LMHead.Shape, []int{c.VocabSize, c.HiddenSize}) {
				t.Errorf("lm_head %v", head.LMHead)
			}
		})
	}
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// headOf returns the Head block and checks the per-architecture fields.
func headOf(t *testing.T, w Weights) *Head {
	t.Helper()
	switch w := w.(type) {
	case *Qwen2Weights:
		for _, l := range w.Layers {
			if l.QBias == nil || l.KBias == nil || l.VBias == nil || l.Q == nil || l.Down == nil {
				t.Error("qwen2 layer incomplete")
			}
		}
		return &w.Head
	case *Qwen3Weights:
		for _, l := range w.Layers {
			if l.QNorm == nil || l.KNorm == nil || l.QNorm.Len() != 32 || l.Gate == nil {
				t.Error("qwen3 layer incomplete")
			}
		}
		return &w.Head
	case *LlamaWeights:
		for _, l := range w.Layers {
			if l.AttnNorm == nil || l.MLPNorm == nil || l.O == nil || l.Up == nil {
				t.Error("llama layer incomplete")
			}
		}
		return &w.Head
	}
	t.Fatalf("weights of type %T", w)
	return nil
}

// copyFixture copies a fixture's config and safetensors files into a temp dir.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join(fixtures, name)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || !(strings.HasPrefix(e.Name(), "model") || e.Name() == "config.json") {
			continue
		}
		in, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		out.Close()
	}
	return dst
}

// rewrite replaces dir/model.safetensors by edit applied to its tensors.
func rewrite(t *testing.T, dir string, edit func([]safetensors.Tensor) []safetensors.Tensor) {
	t.Helper()
	p := filepath.Join(dir, safetensors.SingleName)
	f, err := safetensors.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, info := range f.Tensors() {
		b, _, err := f.Bytes(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, safetensors.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	f.Close()
	if err := safetensors.WriteFile(p, edit(ts), nil); err != nil {
		t.Fatal(err)
	}
}

func TestLoadErrors(t *testing.T) {
	const q = "model.layers.1.self_attn.q_proj.weight"
	cases := []struct {
		name string
		edit func([]safetensors.Tensor) []safetensors.Tensor
		want []string
	}{
		{"missing", func(ts []safetensors.Tensor) []safetensors.Tensor {
			var out []safetensors.Tensor
			for _, x := range ts {
				if x.Name != q && x.Name != "model.norm.weight" {
					out = append(out, x)
				}
			}
			return out
		}, []string{"missing tensors: ", q, "model.norm.weight"}},
		{"unexpected", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.FromFloat32("model.layers.0.self_attn.q_proj.lora_A", []int{1}, []float32{0}),
				safetensors.FromFloat32("model.layers.0.self_attn.rotary_emb.inv_freq", []int{1}, []float32{0}))
		}, []string{"unexpected tensors: model.layers.0.self_attn.q_proj.lora_A (in "}},
		{"wrong shape", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == q {
					ts[i].Shape = []int{32, 128}
				}
			}
			return ts
		}, []string{"wrong shapes: " + q + " in ", "has shape [32 128], config ", "wants [64 64] (Hq*D,C)"}},
		{"integer dtype", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				if ts[i].Name == "model.norm.weight" {
					ts[i].DType = safetensors.I32
				}
			}
			return ts
		}, []string{`tensor "model.norm.weight": dtype I32 does not convert to float32`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyFixture(t, "llama-f32")
			rewrite(t, dir, c.edit)
			_, err := Open(dir, kernels.NewCPU(), Options{})
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the directory", err)
			}
			if c.name == "unexpected" && strings.Contains(err.Error(), "inv_freq") {
				t.Errorf("rotary inv_freq buffers should be ignored: %v", err)
			}
		})
	}
}

func TestLoadTruncatedAndConfigMismatch(t *testing.T) {
	dir := copyFixture(t, "qwen2-f32")
	p := filepath.Join(dir, safetensors.SingleName)
	st, _ := os.Stat(p)
	if err := os.Truncate(p, st.Size()-100); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, kernels.NewCPU(), Options{}); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated: %v", err)
	}
	// A config that disagrees with the checkpoint (tied, so lm_head.weight is
	// allowed; different vocabulary so the embedding is misshapen).
	dir = copyFixture(t, "qwen2-f32")
	raw, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	raw = []byte(strings.Replace(string(raw), `"vocab_size": 320`, `"vocab_size": 321`, 1))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, kernels.NewCPU(), Options{}); err == nil || !strings.Contains(err.Error(), "model.embed_tokens.weight in ") || !strings.Contains(err.Error(), "wants [321 64] (V,C)") {
		t.Errorf("vocab mismatch: %v", err)
	}
	// Architecture mismatch: a qwen2 checkpoint read as llama has unexpected biases.
	dir = copyFixture(t, "qwen2-f32")
	raw, _ = os.ReadFile(filepath.Join(dir, "config.json"))
	raw = []byte(strings.Replace(string(raw), `"model_type": "qwen2"`, `"model_type": "llama"`, 1))
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, kernels.NewCPU(), Options{}); err == nil || !strings.Contains(err.Error(), "unexpected tensors: model.layers.0.self_attn.k_proj.bias") {
		t.Errorf("qwen2 as llama: %v", err)
	}
}

func TestTiedCheckpointMayCarryLMHead(t *testing.T) {
	dir := copyFixture(t, "llama-bf16-tied")
	rewrite(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
		for _, x := range ts {
			if x.Name == "model.embed_tokens.weight" {
				y := x
				y.Name = "lm_head.weight"
				return append(ts, y)
			}
		}
		return ts
	})
	m, err := Open(dir, kernels.NewCPU(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w := m.Weights().(*LlamaWeights)
	if w.LMHead != w.Embed {
		t.Error("tied lm_head is not the embedding")
	}
}

func TestRegistry(t *testing.T) {
	if got := strings.Join(ArchNames(), ","); got != "llama,qwen2,qwen3" {
		t.Errorf("registered: %s", got)
	}
	if _, err := LookupArch("gpt2"); err == nil || !strings.Contains(err.Error(), `"gpt2"`) {
		t.Errorf("lookup gpt2: %v", err)
	}
}
