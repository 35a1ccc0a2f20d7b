package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/safetensors"
)

// train export --model DIR --out DIR [--dtype bf16|f32]
//
// Writes a full fine-tuning checkpoint (or any model directory) as a
// Hugging Face model directory: config.json with torch_dtype set,
// model.safetensors in --dtype, and the tokenizer files found next to it.
// The demo's base model (configs/demo/base-model) is made this way.
func init() {
	var in, out, dtype string
	c := &cobra.Command{
		Use:   "export --model DIR --out DIR [--dtype bf16|f32]",
		Short: "write a model directory (e.g. a full fine-tuning checkpoint) as a Hugging Face directory in bf16 or f32",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in == "" || out == "" {
				return fmt.Errorf("export: --model and --out are required")
			}
			n, err := exportModel(in, out, dtype)
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "export: %s → %s (%d parameters, %s)\n", in, out, n, dtype)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&in, "model", "", "model directory: config.json and safetensors weights (required)")
	f.StringVar(&out, "out", "", "output directory (required)")
	f.StringVar(&dtype, "dtype", "bf16", "weight dtype: bf16 or f32")
	root.AddCommand(c)
}

// exportFiles are copied when present.
var exportFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "special_tokens_map.json"}

// exportModel writes in's model as a Hugging Face directory out and returns
// its parameter count (tied embeddings counted once).
func exportModel(in, out, dtype string) (int, error) {
	var torchDType string
	switch dtype {
	case "bf16":
		torchDType = "bfloat16"
	case "f32":
		torchDType = "float32"
	default:
		return 0, fmt.Errorf("--dtype %q: want bf16 or f32", dtype)
	}
	ck, err := model.Load(in)
	if err != nil {
		return 0, err
	}
	raw, err := os.ReadFile(filepath.Join(in, "config.json"))
	if err != nil {
		return 0, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(in, "config.json"), err)
	}
	cfg["torch_dtype"] = torchDType
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return 0, err
	}
	var ts []safetensors.Tensor
	n := 0
	for _, t := range ck.Weights.Params() {
		n += len(t.Data)
		if dtype == "bf16" {
			ts = append(ts, safetensors.FromFloat32AsBF16(t.Name, t.Shape, t.Data))
		} else {
			ts = append(ts, safetensors.FromFloat32(t.Name, t.Shape, t.Data))
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return 0, err
	}
	if err := safetensors.WriteFile(filepath.Join(out, safetensors.SingleName), ts, map[string]string{"format": "pt"}); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(out, "config.json"), append(cj, '\n'), 0o644); err != nil {
		return 0, err
	}
	for _, name := range exportFiles {
		b, err := os.ReadFile(filepath.Join(in, name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return 0, err
		}
	}
	// The written directory must load back as the same architecture.
	if _, err := model.Load(out); err != nil {
		return 0, fmt.Errorf("reloading %s: %w", out, err)
	}
	return n, nil
}
