package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGPUCheckDryRun runs make gpu-check's script with --dry-run: every
// step on the emulator at tiny shapes, through the same binaries, rows and
// table as on a GPU. It passes (exit 0), writes exactly the three result
// files (each under 1 MiB) to OUT and nothing big there, and the table
// has every check: the driver row (skipped: no GPU), both ceilings, the
// conformance suite, the cpu-vs-emulator loss comparisons of SFT, GRPO and
// PPO in both modes, the checkpoint, load and decode at both batches,
// decode eager against graphs at two batches (same tokens, replays, one
// device→host copy per step; the emulator's times labelled), LoRA
// SFT at both lengths, the GRPO step with its phases, ρ − 1 and the peak
// memory, activation memory per layer (bf16 below f32) and the NCCL slot.
// Run again with the binaries already built and a budget that runs out
// early, the later steps become "not run" rows, the table still lists
// every check, and the script fails.
func TestGPUCheckDryRun(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the binaries with")
	}
	out, bin, work := t.TempDir(), t.TempDir(), t.TempDir()
	cmd := exec.Command("bash", "../../kernels/cuda/gpu-check.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "OUT="+out, "BIN="+bin, "TMPDIR="+work)
	t0 := time.Now()
	log, err := cmd.CombinedOutput()
	t.Logf("dry run: %.0f s", time.Since(t0).Seconds())
	if err != nil {
		t.Fatalf("gpu-check.sh --dry-run: %v\n%s", err, log)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if info, err := e.Info(); err != nil || info.Size() >= 1<<20 || info.Size() == 0 {
			t.Errorf("%s: %v bytes, want some and under 1 MiB (%v)", e.Name(), info.Size(), err)
		}
	}
	if strings.Join(names, " ") != "gpu-check.json gpu-check.log summary.txt" {
		t.Errorf("OUT holds %v, want gpu-check.json, gpu-check.log, summary.txt", names)
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("the work folder was not removed: %v", left)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", sum)
	if !strings.HasSuffix(strings.TrimSpace(string(log)), strings.TrimSpace(string(sum))) {
		t.Error("the summary table is not the last thing printed")
	}
	if lg, _ := os.ReadFile(filepath.Join(out, "gpu-check.log")); !strings.Contains(string(lg), "== [") || !strings.Contains(string(lg), "data-parallel") {
		t.Error("gpu-check.log lacks the steps or the table")
	}
	b, err := os.ReadFile(filepath.Join(out, "gpu-check.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	want := []struct{ check, status string }{
		{"driver and device", "skipped"},
		{"ceiling: device-to-device copy", "ok"},
		{"ceiling: cuBLAS bf16 GEMM 128³", "ok"},
		{"conformance (f32, bf16) and GPU vs emulator", "ok"},
		{"sft-tiny: cpu vs cuda-emu", "ok"},
		{"sft-tiny: cpu vs cuda-emu-bf16", "ok"},
		{"grpo-tiny: cpu vs cuda-emu", "ok"},
		{"grpo-tiny: cpu vs cuda-emu-bf16", "ok"},
		{"ppo-tiny: cpu vs cuda-emu", "ok"},
		{"ppo-tiny: cpu vs cuda-emu-bf16", "ok"},
		{"checkpoint tiny (random bf16)", "ok"},
		{"load checkpoint", "ok"},
		{"decode batch 4", "ok"},
		{"decode batch 8", "ok"},
		{"decode eager vs graphs, batch 2", "ok"},
		{"decode eager vs graphs, batch 4", "ok"},
		{"LoRA SFT r=8 T=32", "ok"},
		{"LoRA SFT r=8 T=48", "ok"},
		{"GRPO step (G=4, 8 new)", "ok"},
		// exactly 0 with packed rows too: the f32 and the tensor-core attention
		// both tile each sequence from its start, as decoding does
		// (cmd/train TestRatioExactOnCUDAEmu)
		{"max |ρ − 1|, first mini-batch", "ok"},
		{"peak device memory (GRPO step)", "ok"},
		{"activations per layer, cuda-emu", "ok"},
		{"activations per layer, cuda-emu-bf16", "ok"},
		{"data-parallel NCCL (2+ GPUs)", "skipped"},
	}
	if len(rows) != len(want) {
		t.Errorf("%d rows, want %d", len(rows), len(want))
	}
	perLayer := map[string]float64{}
	for i, w := range want {
		if i >= len(rows) {
			break
		}
		r := rows[i]
		if r.Check != w.check || r.Status != w.status {
			t.Errorf("row %d: %q %s, want %q %s (%s)", i+1, r.Check, r.Status, w.check, w.status, r.Detail)
		}
		if strings.HasPrefix(r.Check, "activations per layer") {
			perLayer[r.Check], _ = strconv.ParseFloat(strings.Fields(r.Value)[0], 64)
		}
		if r.Check == "GRPO step (G=4, 8 new)" && !(strings.Contains(r.Detail, "rollout") && strings.Contains(r.Detail, "reference") &&
			strings.Contains(r.Detail, "old log-probs") && strings.Contains(r.Detail, "train")) {
			t.Errorf("GRPO row lacks a phase: %s", r.Detail)
		}
		if strings.HasPrefix(r.Check, "decode batch") && !strings.Contains(r.Detail, "of the copy ceiling") {
			t.Errorf("decode row not stated against the copy ceiling: %s", r.Detail)
		}
		if strings.HasPrefix(r.Check, "LoRA SFT") && !strings.Contains(r.Detail, "of the measured bf16 GEMM ceiling") {
			t.Errorf("SFT row not stated against the GEMM ceiling: %s", r.Detail)
		}
	}
	f32, bf := perLayer["activations per layer, cuda-emu"], perLayer["activations per layer, cuda-emu-bf16"]
	if !(bf > 0 && bf < 0.6*f32) {
		t.Errorf("activations per layer: bf16 %v B/token, f32 %v: want bf16 below 60%% of f32", bf, f32)
	}
	if !strings.Contains(string(sum), "predicted") || !strings.Contains(string(sum), "—") {
		t.Errorf("no predicted column (\"—\" without train plan):\n%s", sum)
	}

	out2 := t.TempDir()
	cmd = exec.Command("bash", "../../kernels/cuda/gpu-check.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "OUT="+out2, "BIN="+bin, "PREBUILT=1", "BUDGET=25", "TMPDIR="+work)
	log, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a run out of budget passed:\n%s", log)
	}
	sum, err = os.ReadFile(filepath.Join(out2, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sum), "the 25s budget is spent"); n == 0 || !strings.Contains(string(sum), "data-parallel") ||
		!strings.Contains(string(sum), "not run") {
		t.Errorf("out of budget: %d steps marked not run; summary:\n%s", n, sum)
	}
}
