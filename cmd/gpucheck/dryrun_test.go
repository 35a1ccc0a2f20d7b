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
// table as on a GPU. It passes (exit 0), and the summary has every check:
// the driver row (skipped: no GPU), the conformance suite, the cpu-vs-
// emulator loss comparisons, the checkpoint, decode at both batches, LoRA
// SFT, the GRPO step with its phases, activation memory per layer (bf16
// below f32) and the data-parallel slot. Run again with the binaries
// already built and a budget that runs out early, the later steps become
// FAIL rows of their own, the table still lists every check, and the
// script fails.
func TestGPUCheckDryRun(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the binaries with")
	}
	out, bin := t.TempDir(), t.TempDir()
	cmd := exec.Command("bash", "../../kernels/cuda/gpu-check.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "OUT="+out, "BIN="+bin)
	t0 := time.Now()
	log, err := cmd.CombinedOutput()
	t.Logf("dry run: %.0f s", time.Since(t0).Seconds())
	if err != nil {
		t.Fatalf("gpu-check.sh --dry-run: %v\n%s", err, log)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", sum)
	var rows []Row
	files, _ := filepath.Glob(filepath.Join(out, "[0-9]*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rs []Row
		if err := json.Unmarshal(b, &rs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rows = append(rows, rs...)
	}
	want := []struct{ check, status string }{
		{"driver and device", "skipped"},
		{"conformance and GPU vs emulator", "ok"},
		{"sft-tiny: cpu vs cuda-emu", "ok"},
		{"ppo-tiny: cpu vs cuda-emu", "ok"},
		{"checkpoint tiny (random bf16)", "ok"},
		{"decode batch 4", "ok"},
		{"decode batch 8", "ok"},
		{"LoRA SFT r=8", "ok"},
		{"GRPO step (G=4, 8 new)", "ok"},
		{"activations per layer, cuda-emu", "ok"},
		{"activations per layer, cuda-emu-bf16", "ok"},
		{"data-parallel (2+ GPUs)", "skipped"},
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
		if r.Check == "GRPO step (G=4, 8 new)" && !strings.Contains(r.Detail, "rollout") {
			t.Errorf("GRPO row has no phases: %s", r.Detail)
		}
	}
	f32, bf := perLayer["activations per layer, cuda-emu"], perLayer["activations per layer, cuda-emu-bf16"]
	if !(bf > 0 && bf < 0.6*f32) {
		t.Errorf("activations per layer: bf16 %v B/token, f32 %v: want bf16 below 60%% of f32", bf, f32)
	}

	out2 := t.TempDir()
	cmd = exec.Command("bash", "../../kernels/cuda/gpu-check.sh", "--dry-run")
	cmd.Env = append(os.Environ(), "OUT="+out2, "BIN="+bin, "PREBUILT=1", "BUDGET=20")
	log, err = cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a run out of budget passed:\n%s", log)
	}
	sum, err = os.ReadFile(filepath.Join(out2, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sum), "the 20s budget is spent"); n == 0 || !strings.Contains(string(sum), "data-parallel") {
		t.Errorf("out of budget: %d steps marked not run; summary:\n%s", n, sum)
	}
}
