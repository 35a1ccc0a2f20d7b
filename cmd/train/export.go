package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/model"
)

// train export --model DIR --out DIR [--dtype bf16|f32] [--adapter DIR [--merge]] [--shard-size N]
//
// Writes a model directory (a full fine-tuning checkpoint, the demo's base
// model, any Hugging Face directory) as a Hugging Face directory in --dtype,
// sharded above --shard-size bytes; with --adapter and --merge, the LoRA
// adapter merged into it; with --adapter alone, the adapter in PEFT's
// layout. The base of an adapter is --model, else the adapter's
// base_model_name_or_path. Everything streams: one row in memory at a time.
func init() { root.AddCommand(newExportCmd()) }

func newExportCmd() *cobra.Command {
	var in, out, dtype, adapter string
	var merge bool
	var shard int64
	c := &cobra.Command{
		Use:   "export --model DIR --out DIR [--dtype bf16|f32] [--adapter DIR [--merge]] [--shard-size BYTES]",
		Short: "write a model, a merged model + LoRA adapter, or a PEFT adapter as a Hugging Face directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("export: --out is required")
			}
			if adapter == "" && in != "" && isAdapterDir(in) && !exists(filepath.Join(in, "config.json")) {
				adapter, in = in, "" // --model names a LoRA checkpoint
			}
			if merge && adapter == "" {
				return fmt.Errorf("export: --merge needs --adapter DIR")
			}
			var err error
			if adapter != "" {
				if in, err = adapterBase(adapter, in); err != nil {
					return fmt.Errorf("export: %w", err)
				}
			}
			if in == "" {
				return fmt.Errorf("export: --model (or --adapter) is required")
			}
			log := cmd.ErrOrStderr()
			if adapter != "" && !merge {
				if err := exportAdapter(in, adapter, out); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				fmt.Fprintf(log, "export: adapter %s (base %s) → %s (PEFT)\n", adapter, in, out)
				return nil
			}
			n, err := model.Export(in, out, model.ExportOptions{Adapter: adapter, DType: dtype, ShardBytes: shard})
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			what := in
			if adapter != "" {
				what = in + " + " + adapter + " (merged)"
			}
			fmt.Fprintf(log, "export: %s → %s (%d parameters, %s)\n", what, out, n, dtype)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&in, "model", "", "model directory: config.json and safetensors weights (the base of --adapter)")
	f.StringVar(&out, "out", "", "output directory (required)")
	f.StringVar(&dtype, "dtype", "bf16", "weight dtype: bf16 or f32")
	f.StringVar(&adapter, "adapter", "", "PEFT LoRA adapter directory (a run's checkpoint or best/)")
	f.BoolVar(&merge, "merge", false, "merge --adapter into the weights and write a full model")
	f.Int64Var(&shard, "shard-size", 5_000_000_000, "bytes per safetensors shard; larger models get model.safetensors.index.json")
	return c
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isAdapterDir(dir string) bool { return exists(filepath.Join(dir, model.AdapterConfigName)) }

// adapterBase is the base model of an adapter: base if given, else the
// adapter's base_model_name_or_path when that is a local model directory.
func adapterBase(adapter, base string) (string, error) {
	if base != "" {
		return base, nil
	}
	a, err := model.ReadAdapterConfig(adapter)
	if err != nil {
		return "", err
	}
	if a.BaseModel == "" {
		return "", fmt.Errorf("%s names no base model (base_model_name_or_path); give --model DIR", filepath.Join(adapter, model.AdapterConfigName))
	}
	if _, err := os.Stat(filepath.Join(a.BaseModel, "config.json")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("the base model %s named by %s is not a local model directory; give --model DIR", a.BaseModel, filepath.Join(adapter, model.AdapterConfigName))
		}
		return "", err
	}
	return a.BaseModel, nil
}

// exportAdapter checks a PEFT adapter against its base and writes it to out.
func exportAdapter(base, adapter, out string) error {
	c, err := model.LoadConfig(filepath.Join(base, "config.json"))
	if err != nil {
		return err
	}
	a, err := model.ImportPEFT(adapter, c)
	if err != nil {
		return err
	}
	return model.ExportPEFT(out, a, c)
}
