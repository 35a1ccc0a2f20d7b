// Package modeltest writes real-shape Hugging Face checkpoints with random
// weights, at test or bench time, so that no large file is ever committed:
// a 7B-parameter bf16 checkpoint streams to disk in seconds, one row of one
// tensor in memory at a time.
//
//	matrices  bf16 values ≈ U(−a, a) + U(−a, a) (a triangular law, σ = a·√(2/3))
//	norms     1
//	biases    0
package modeltest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
)

// Shape is the part of a config.json a random checkpoint needs.
type Shape struct {
	ModelType      string // qwen2, qwen3 or llama
	Hidden, MLP    int    // C, F
	Layers         int    // L
	Heads, KVHeads int    // Hq, Hkv
	Vocab          int    // V
	Tied           bool   // tie_word_embeddings
	MaxPositions   int    // max_position_embeddings (0: 32768)
	InitScale      float32
	DType          safetensors.DType // BF16 (default) or F32
	Shards         int               // files; > 1 writes model.safetensors.index.json
	Seed           uint64
	Extra          map[string]any // more config.json keys
}

// Qwen25_7B is Qwen2.5-7B's shape: 7.62 B parameters, 15.2 GB in bf16.
func Qwen25_7B() Shape {
	return Shape{ModelType: "qwen2", Hidden: 3584, MLP: 18944, Layers: 28, Heads: 28, KVHeads: 4, Vocab: 152064, Shards: 4}
}

// Qwen25_05B is Qwen2.5-0.5B's shape: 0.49 B parameters, 0.99 GB in bf16.
func Qwen25_05B() Shape {
	return Shape{ModelType: "qwen2", Hidden: 896, MLP: 4864, Layers: 24, Heads: 14, KVHeads: 2, Vocab: 151936, Tied: true, Shards: 1}
}

// Write writes config.json and the checkpoint of s into dir and returns the
// bytes of tensor data written.
func Write(dir string, s Shape) (int64, error) {
	if s.DType == "" {
		s.DType = safetensors.BF16
	}
	if s.DType != safetensors.BF16 && s.DType != safetensors.F32 {
		return 0, fmt.Errorf("modeltest: dtype %s: want BF16 or F32", s.DType)
	}
	if s.InitScale == 0 {
		s.InitScale = 0.02
	}
	if s.MaxPositions == 0 {
		s.MaxPositions = 32768
	}
	if s.Shards <= 0 {
		s.Shards = 1
	}
	cfg := map[string]any{"model_type": s.ModelType, "hidden_size": s.Hidden, "intermediate_size": s.MLP,
		"num_hidden_layers": s.Layers, "num_attention_heads": s.Heads, "num_key_value_heads": s.KVHeads,
		"vocab_size": s.Vocab, "tie_word_embeddings": s.Tied, "max_position_embeddings": s.MaxPositions,
		"rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu", "torch_dtype": torchDType(s.DType),
		"bos_token_id": nil, "eos_token_id": 0}
	for k, v := range s.Extra {
		cfg[k] = v
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, err
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, append(js, '\n'), 0o666); err != nil {
		return 0, err
	}
	c, err := model.ParseConfig(js, cfgPath)
	if err != nil {
		return 0, err
	}
	specs, err := model.Specs(c)
	if err != nil {
		return 0, err
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	var entries []safetensors.Entry
	var total int64
	for i, sp := range specs {
		e := safetensors.Entry{Name: sp.Name, DType: s.DType, Shape: sp.Shape, Fill: fill(sp, s, uint64(i))}
		total += e.NBytes()
		entries = append(entries, e)
	}
	shards := balance(entries, min(s.Shards, len(entries)), total)
	meta := map[string]string{"format": "pt"}
	errs := make([]error, len(shards))
	weightMap := map[string]string{}
	var wg sync.WaitGroup
	for i, sh := range shards {
		name := safetensors.SingleName
		if len(shards) > 1 {
			name = fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		}
		for _, e := range sh {
			weightMap[e.Name] = name
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = safetensors.WriteAtomic(filepath.Join(dir, name), func(w io.Writer) error {
				return safetensors.EncodeStream(w, sh, meta)
			})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	if len(shards) > 1 {
		if err := safetensors.WriteIndex(filepath.Join(dir, safetensors.IndexName), weightMap, total); err != nil {
			return 0, err
		}
	}
	return total, nil
}

func torchDType(d safetensors.DType) string {
	if d == safetensors.F32 {
		return "float32"
	}
	return "bfloat16"
}

// balance cuts name-sorted entries into n contiguous shards of about
// total/n bytes each.
func balance(es []safetensors.Entry, n int, total int64) [][]safetensors.Entry {
	out := make([][]safetensors.Entry, 0, n)
	var acc int64
	for _, e := range es {
		if len(out) == 0 || (len(out) < n && acc >= total*int64(len(out))/int64(n)) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], e)
		acc += e.NBytes()
	}
	return out
}

// fill writes one tensor's values row by row from a per-tensor stream.
func fill(sp model.TensorSpec, s Shape, idx uint64) func(io.Writer) error {
	return func(w io.Writer) error {
		cols := sp.Shape[len(sp.Shape)-1]
		rows := 1
		for _, d := range sp.Shape[:len(sp.Shape)-1] {
			rows *= d
		}
		size := s.DType.Size()
		buf := make([]byte, cols*size)
		state := s.Seed ^ (idx+1)*0x9E3779B97F4A7C15
		constant := float32(-1)
		switch {
		case strings.HasSuffix(sp.Name, "norm.weight"):
			constant = 1
		case strings.HasSuffix(sp.Name, ".bias"):
			constant = 0
		}
		for r := 0; r < rows; r++ {
			for j := 0; j < cols; j++ {
				v := constant
				if constant < 0 {
					state += 0x9E3779B97F4A7C15
					z := mix(state)
					u1, u2 := float32(z>>40)/(1<<24), float32(z&0xffffff)/(1<<24)
					v = (u1 + u2 - 1) * s.InitScale
				}
				if size == 2 {
					binary.LittleEndian.PutUint16(buf[2*j:], safetensors.Float32ToBF16(v))
				} else {
					binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(v))
				}
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}
}

// mix is the splitmix64 finalizer.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
