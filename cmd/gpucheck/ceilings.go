package main

// gpucheck ceilings: the two rates every other figure is stated against,
// measured on the device at hand (kernels/cuda/ceilings.go).

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

// Ceilings are the measured rates, saved for the later steps (-ceilings).
type Ceilings struct {
	CopyBytesPerS  float64 `json:"copy_bytes_per_s"`
	GEMMFLOPsPerS  float64 `json:"gemm_flops_per_s"`
	GEMMN, CopyMiB int
}

// gpucheck ceilings -backend B [-copy-mib 4096] [-gemm 8192] -out F -save C.json
func runCeilings(args []string) error {
	fs := flag.NewFlagSet("ceilings", flag.ContinueOnError)
	backend := fs.String("backend", "cuda-bf16", "kernels backend (a CUDA one)")
	mib := fs.Int("copy-mib", 4096, "bytes of each copy buffer, MiB (two buffers)")
	n := fs.Int("gemm", 8192, "GEMM size n (n×n×n, bf16 in, f32 accumulate)")
	reps := fs.Int("reps", 10, "calls per timed round (5 rounds, the median)")
	out := fs.String("out", "", "summary JSON")
	save := fs.String("save", "", "write the rates here for -ceilings of the other steps")
	if err := fs.Parse(args); err != nil {
		return err
	}
	be, cb, err := openBackend(*backend)
	if err != nil {
		return err
	}
	defer be.Close()
	if cb == nil {
		return fmt.Errorf("ceilings: %s is not a CUDA backend", *backend)
	}
	c := Ceilings{GEMMN: *n, CopyMiB: *mib}
	var rows []Row
	c.CopyBytesPerS, err = cb.CopyRate(int64(*mib)<<20, *reps, 5)
	row := Row{Check: "ceiling: device-to-device copy", Key: "copy_gb_s", Status: statusOf(err),
		Value:  fmt.Sprintf("%.0f GB/s", c.CopyBytesPerS/1e9),
		Detail: fmt.Sprintf("%s, %d MiB copied %d times a round, read + write bytes, median of 5 rounds", cb.Device(), *mib, *reps)}
	if err != nil {
		row.Detail = err.Error()
	}
	rows = append(rows, row)
	var gerr error
	c.GEMMFLOPsPerS, gerr = cb.GEMMRate(*n, *reps, 5)
	row = Row{Check: fmt.Sprintf("ceiling: cuBLAS bf16 GEMM %d³", *n), Key: "gemm_bf16_tflops", Status: statusOf(gerr),
		Value:  fmt.Sprintf("%.1f TFLOP/s", c.GEMMFLOPsPerS/1e12),
		Detail: fmt.Sprintf("random bf16 inputs, f32 accumulate and output, %d GEMMs a round, median of 5; 16 entries checked against float64", *reps)}
	if gerr != nil {
		row.Detail = gerr.Error()
	}
	rows = append(rows, row)
	if err == nil && gerr == nil && *save != "" {
		b, _ := json.Marshal(c)
		if werr := os.WriteFile(*save, b, 0o644); werr != nil {
			return werr
		}
	}
	return firstErr(err, gerr, writeRows(*out, rows...))
}

// readCeilings reads -ceilings (nil when not given or unreadable: the
// figures are then stated without them).
func readCeilings(path string) *Ceilings {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var c Ceilings
	if json.Unmarshal(b, &c) != nil || c.CopyBytesPerS <= 0 || c.GEMMFLOPsPerS <= 0 {
		return nil
	}
	return &c
}
