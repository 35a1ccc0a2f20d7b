// Command mkmodel writes a random checkpoint of a real model shape
// (model/modeltest) for the benchmarks, unless the directory already holds
// one of that shape:
//
//	go run ./bench/mkmodel -shape qwen2.5-0.5b -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argrl/argrl/model/modeltest"
)

func main() {
	shape := flag.String("shape", "qwen2.5-0.5b", "model shape: qwen2.5-0.5b")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if err := run(*shape, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkmodel:", err)
		os.Exit(1)
	}
}

func run(shape, out string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	var s modeltest.Shape
	switch shape {
	case "qwen2.5-0.5b":
		s = modeltest.Qwen25_05B()
	default:
		return fmt.Errorf("unknown -shape %q (want qwen2.5-0.5b)", shape)
	}
	s.Seed = 7
	stamp := filepath.Join(out, "mkmodel.json")
	want, err := json.Marshal(map[string]any{"shape": shape, "seed": s.Seed})
	if err != nil {
		return err
	}
	if have, err := os.ReadFile(stamp); err == nil && string(have) == string(want) {
		return nil // already written
	}
	if _, err := modeltest.Write(out, s); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return os.WriteFile(stamp, want, 0o644)
}
