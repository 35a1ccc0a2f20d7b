package model

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/internal/sha256sums"
	"github.com/argrl/argrl/kernels"
)

// copyTree copies src's regular files into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	files, err := sha256sums.ListFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, f)
		os.MkdirAll(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
}

// A directory with SHA256SUMS is verified by every loader before use
// (Open, Open with Options.Adapter, ImportPEFT, ReadAdapterConfig,
// Export); without one nothing is checked. The errors name the file and
// are *AdapterError for the adapter.
func TestLoadersVerifySHA256SUMS(t *testing.T) {
	const name = "qwen2-f32"
	dir := t.TempDir()
	base, adapter := filepath.Join(dir, "base"), filepath.Join(dir, "adapter")
	copyTree(t, filepath.Join(fixtures, name), base)
	os.RemoveAll(filepath.Join(base, "adapter"))
	copyTree(t, filepath.Join(fixtures, name, "adapter"), adapter)
	c, err := LoadConfig(filepath.Join(base, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Intact, with and without SHA256SUMS: everything loads.
	for _, withSums := range []bool{false, true} {
		if withSums {
			if err := sha256sums.Write(base); err != nil {
				t.Fatal(err)
			}
			if err := sha256sums.Write(adapter); err != nil {
				t.Fatal(err)
			}
		}
		m, err := Open(base, kernels.NewCPU(), Options{Adapter: adapter})
		if err != nil {
			t.Fatalf("SHA256SUMS %v: %v", withSums, err)
		}
		m.Close()
	}
	flip := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x10
		os.WriteFile(p, b, 0o666)
	}
	flip(filepath.Join(adapter, AdapterWeightsName))
	check := func(what string, err error, file string, adapterErr bool) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: a corrupt %s was accepted", what, file)
			return
		}
		if !strings.Contains(err.Error(), file+" is corrupt") || !strings.Contains(err.Error(), sha256sums.File) {
			t.Errorf("%s: %v", what, err)
		}
		var ae *AdapterError
		if errors.As(err, &ae) != adapterErr {
			t.Errorf("%s: AdapterError %v, want %v: %v", what, !adapterErr, adapterErr, err)
		}
	}
	_, err = Open(base, kernels.NewCPU(), Options{Adapter: adapter})
	check("Open with Options.Adapter", err, AdapterWeightsName, true)
	_, err = ImportPEFT(adapter, c)
	check("ImportPEFT", err, AdapterWeightsName, true)
	_, err = ReadAdapterConfig(adapter)
	check("ReadAdapterConfig", err, AdapterWeightsName, true)
	_, err = Export(base, filepath.Join(dir, "merged"), ExportOptions{Adapter: adapter})
	check("Export with an adapter", err, AdapterWeightsName, true)
	m, err := Open(base, kernels.NewCPU(), Options{LoRA: &LoRAOptions{R: 4, Alpha: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	check("ImportAdapter", m.ImportAdapter(adapter), AdapterWeightsName, true)

	flip(filepath.Join(base, "model.safetensors"))
	_, err = Open(base, kernels.NewCPU(), Options{})
	check("Open", err, "model.safetensors", false)
	_, err = Export(base, filepath.Join(dir, "copy"), ExportOptions{})
	check("Export", err, "model.safetensors", false)
}

// An adapter trained for another base names both directories and the
// adapter's file; a dropout kept as float32 is written in its decimal
// form.
func TestAdapterMisfitAndDropoutText(t *testing.T) {
	other := mustConfig(t, "qwen3-f32-tied")
	adapter := filepath.Join(fixtures, "qwen2-f32", "adapter")
	_, err := ImportPEFT(adapter, other)
	if err == nil {
		t.Fatal("an adapter of another base was accepted")
	}
	for _, w := range []string{"adapter " + adapter + " does not fit the base model " + filepath.Join(fixtures, "qwen3-f32-tied"), AdapterWeightsName} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("misfit error lacks %q: %v", w, err)
		}
	}
	t.Logf("misfit: %v", err)
	m := openFixture(t, "qwen2-f32", Options{LoRA: &LoRAOptions{R: 4, Alpha: 8, Dropout: 0.05}})
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := m.ExportAdapter(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, AdapterConfigName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"lora_dropout": 0.05,`) {
		t.Errorf("adapter_config.json:\n%s", raw)
	}
}

func mustConfig(t *testing.T, name string) *Config {
	t.Helper()
	c, err := LoadConfig(filepath.Join(fixtures, name, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
