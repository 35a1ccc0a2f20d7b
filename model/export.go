package model

// Export: a model directory, optionally with a PEFT adapter merged into its
// weights, written as a Hugging Face directory, one row at a time: nothing
// but a row of the tensor being written (and the small adapter) is held in
// memory, so a checkpoint of any size exports on a small machine. Shards
// follow Hugging Face's save_pretrained: model-00001-of-0000N.safetensors
// above ExportOptions.ShardBytes, with model.safetensors.index.json.
//
//	merged row o of a targeted weight [out, in]:
//	  W'[o, :] = W[o, :] + (α/r) · Σ_k B[o, k] · A[k, :]      (float32)

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/argrl/argrl/model/safetensors"
)

// ExportOptions configures Export.
type ExportOptions struct {
	// Adapter is a PEFT adapter directory merged into the weights ("": none).
	Adapter string
	// DType is the weights' dtype: "bf16", "f32", or "" to keep each
	// tensor's (bf16 stays bf16, anything else becomes f32).
	DType string
	// ShardBytes splits the weights into shards of at most this many bytes
	// (a larger tensor gets a shard of its own); 0 means 5 GB.
	ShardBytes int64
}

// exportFiles are copied next to the weights when present.
var exportFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "special_tokens_map.json"}

// Export writes the model directory in (config.json and safetensors
// weights) to out as described in ExportOptions, with config.json's
// torch_dtype set to the written dtype and the tokenizer files copied, and
// returns the number of parameters written (a tied lm_head is not stored).
// The written directory is checked against the config before it returns.
func Export(in, out string, o ExportOptions) (int, error) {
	var outDT safetensors.DType
	torchDType := ""
	switch o.DType {
	case "bf16":
		outDT, torchDType = safetensors.BF16, "bfloat16"
	case "f32":
		outDT, torchDType = safetensors.F32, "float32"
	case "":
	default:
		return 0, fmt.Errorf("model: export: dtype %q: want bf16 or f32", o.DType)
	}
	if o.ShardBytes <= 0 {
		o.ShardBytes = 5_000_000_000
	}
	if err := verifyDir(in); err != nil {
		return 0, err
	}
	c, err := LoadConfig(filepath.Join(in, "config.json"))
	if err != nil {
		return 0, err
	}
	ck, err := openChecked(c, in)
	if err != nil {
		return 0, err
	}
	defer ck.set.Close()
	set, fs, shapes := ck.set, ck.fs, ck.shapes
	var a *Adapter
	if o.Adapter != "" {
		if a, err = ImportPEFT(o.Adapter, c); err != nil {
			return 0, err
		}
	}
	var entries []safetensors.Entry
	params := 0
	for i, f := range fs {
		if f.tied != "" && c.TieWordEmbeddings {
			continue
		}
		info, _ := set.Info(f.name)
		dt := outDT
		if dt == "" {
			dt = safetensors.F32
			if info.DType == safetensors.BF16 {
				dt = safetensors.BF16
			}
		}
		var l *LoRA
		if a != nil && f.lin != nil {
			l = a.Modules[f.lin.Path]
		}
		params += info.NumElements()
		entries = append(entries, safetensors.Entry{Name: f.name, DType: dt, Shape: shapes[i],
			Fill: exportRows(set, info, dt, l, a)})
	}
	if err := os.MkdirAll(out, 0o777); err != nil {
		return 0, fmt.Errorf("model: export: %w", err)
	}
	if err := writeShards(out, entries, o.ShardBytes); err != nil {
		return 0, fmt.Errorf("model: export: %w", err)
	}
	if err := exportConfig(c.Path, filepath.Join(out, "config.json"), torchDType); err != nil {
		return 0, err
	}
	for _, name := range exportFiles {
		if err := copyIfPresent(filepath.Join(in, name), filepath.Join(out, name)); err != nil {
			return 0, fmt.Errorf("model: export: %w", err)
		}
	}
	// The written directory must check out against the same config.
	oc, err := LoadConfig(filepath.Join(out, "config.json"))
	if err != nil {
		return 0, fmt.Errorf("model: export: reloading %s: %w", out, err)
	}
	back, err := openChecked(oc, out)
	if err != nil {
		return 0, fmt.Errorf("model: export: reloading %s: %w", out, err)
	}
	back.set.Close()
	return params, nil
}

// checked is a checkpoint opened and checked against its config.
type checked struct {
	set    *safetensors.Set
	w      Weights // the config's weight struct, not yet placed
	fs     []field // its tagged tensors
	shapes [][]int // their shapes
}

// openChecked opens dir's checkpoint and checks it against c (layer count,
// then every tensor), allocating nothing but the weight struct's layout.
func openChecked(c *Config, dir string) (*checked, error) {
	arch, err := lookupArch(c.ModelType)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := checkLayerCount(c, arch, set.Names(), "the checkpoint in "+dir); err != nil {
		set.Close()
		return nil, err
	}
	w, fs, err := configFields(c)
	if err != nil {
		set.Close()
		return nil, err
	}
	shapes, err := checkTensors(c, fs, set)
	if err != nil {
		set.Close()
		return nil, err
	}
	return &checked{set: set, w: w, fs: fs, shapes: shapes}, nil
}

// exportRows streams one tensor row by row in dtype dt, adding the LoRA
// delta of l (scaled by a's α/r) when l is not nil. A tensor that needs
// neither conversion nor a merge is copied as it is.
func exportRows(set *safetensors.Set, info safetensors.TensorInfo, dt safetensors.DType, l *LoRA, a *Adapter) func(io.Writer) error {
	return func(w io.Writer) error {
		raw, _, err := set.Bytes(info.Name)
		if err != nil {
			return err
		}
		if l == nil && dt == info.DType {
			_, err := w.Write(raw)
			return err
		}
		rows, cols := 1, info.NumElements()
		if len(info.Shape) > 1 {
			rows = info.Shape[0]
			cols /= max(rows, 1)
		}
		row, delta := make([]float32, cols), make([]float32, cols)
		buf := make([]byte, cols*dt.Size())
		inSize := info.DType.Size()
		for o := 0; o < rows; o++ {
			if err := safetensors.DecodeFloat32(row, raw[o*cols*inSize:(o+1)*cols*inSize], info.DType); err != nil {
				return err
			}
			if l != nil {
				mergeRow(row, delta, l, o, float32(a.Scale()), a.R)
			}
			if err := safetensors.EncodeFloat32(buf, row, dt); err != nil {
				return err
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}
}

// mergeRow adds sc · Σ_k B[o, k] · A[k, :] to row (B [out, r], A [r, in]),
// with delta as scratch.
func mergeRow(row, delta []float32, l *LoRA, o int, sc float32, r int) {
	in := len(row)
	clear(delta)
	for k := 0; k < r; k++ {
		b := l.B.Data[o*r+k]
		if b == 0 {
			continue
		}
		for i, x := range l.A.Data[k*in : (k+1)*in] {
			delta[i] += b * x
		}
	}
	for i := range row {
		row[i] += sc * delta[i]
	}
}

// writeShards writes entries (in name order) as one model.safetensors or,
// beyond shardBytes, as numbered shards with an index.
func writeShards(out string, entries []safetensors.Entry, shardBytes int64) error {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	var shards [][]safetensors.Entry
	var size, total int64
	for _, e := range entries {
		n := e.NBytes()
		if len(shards) == 0 || (size > 0 && size+n > shardBytes) {
			shards, size = append(shards, nil), 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], e)
		size += n
		total += n
	}
	meta := map[string]string{"format": "pt"}
	if len(shards) == 1 {
		return safetensors.WriteAtomic(filepath.Join(out, safetensors.SingleName), func(w io.Writer) error {
			return safetensors.EncodeStream(w, shards[0], meta)
		})
	}
	weightMap := map[string]string{}
	for i, sh := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		err := safetensors.WriteAtomic(filepath.Join(out, name), func(w io.Writer) error {
			return safetensors.EncodeStream(w, sh, meta)
		})
		if err != nil {
			return err
		}
		for _, e := range sh {
			weightMap[e.Name] = name
		}
	}
	return safetensors.WriteIndex(filepath.Join(out, safetensors.IndexName), weightMap, total)
}

// exportConfig copies config.json with torch_dtype set (kept when "").
func exportConfig(src, dst, torchDType string) error {
	raw, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("model: export: %w", err)
	}
	if torchDType != "" {
		var cfg map[string]any
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return fmt.Errorf("model: export: %s: %w", src, err)
		}
		cfg["torch_dtype"] = torchDType
		js, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return fmt.Errorf("model: export: %w", err)
		}
		raw = append(js, '\n')
	}
	err = safetensors.WriteAtomic(dst, func(w io.Writer) error {
		_, err := w.Write(raw)
		return err
	})
	if err != nil {
		return fmt.Errorf("model: export: %w", err)
	}
	return nil
}

// copyIfPresent copies src to dst atomically; a missing src is skipped.
func copyIfPresent(src, dst string) error {
	b, err := os.ReadFile(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return safetensors.WriteAtomic(dst, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
