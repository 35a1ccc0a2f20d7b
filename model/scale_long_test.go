package model_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/argrl/argrl/model/modeltest"
)

// TestLongScaleRSS (make test-long; make bench prints its lines): random
// Qwen2.5-0.5B- and Qwen2.5-7B-shaped bf16 checkpoints, the 7B one as 4
// shards with an index, generated here; `train score` on 6 tokens of each
// must peak at ≤ 1.2× the checkpoint's size in resident memory (7B), as the
// weights are mapped, not copied.
func TestLongScaleRSS(t *testing.T) {
	if os.Getenv("ARGRL_LONG") == "" {
		t.Skip("long test (make test-long): generates a 15 GB checkpoint")
	}
	bin := filepath.Join(t.TempDir(), "train")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/train").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		name  string
		shape modeltest.Shape
		limit float64
	}{{"Qwen2.5-0.5B", modeltest.Qwen25_05B(), 1.2}, {"Qwen2.5-7B", modeltest.Qwen25_7B(), 1.2}} {
		dir := filepath.Join(t.TempDir(), c.name)
		var fs syscall.Statfs_t
		if err := syscall.Statfs(filepath.Dir(dir), &fs); err == nil && int64(fs.Bavail)*fs.Bsize < 17<<30 && c.name == "Qwen2.5-7B" {
			t.Fatalf("%s needs about 16 GB of free disk in %s; %d GB free", c.name, filepath.Dir(dir), int64(fs.Bavail)*fs.Bsize>>30)
		}
		n, err := modeltest.Write(dir, c.shape)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "score", "--model", dir, "--ids", "1,2,3,4,5,6")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: train score: %v", c.name, err)
		}
		var got struct{ Logprobs []*float64 }
		if err := json.Unmarshal(out, &got); err != nil || len(got.Logprobs) != 6 {
			t.Fatalf("%s: train score printed %q (%v)", c.name, out, err)
		}
		for _, lp := range got.Logprobs[1:] {
			if lp == nil || math.IsNaN(*lp) || *lp > 0 {
				t.Fatalf("%s: log-prob %v", c.name, lp)
			}
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
		ratio := float64(rss) / float64(n)
		t.Logf("scale: %s bf16 checkpoint %.2f GB, train score peak RSS %.2f GB = %.2f× the checkpoint (before streaming: 3.96× at Qwen2.5-0.5B)",
			c.name, float64(n)/1e9, float64(rss)/1e9, ratio)
		if ratio > c.limit {
			t.Errorf("%s: peak RSS %.2f× the checkpoint, limit %.1f×", c.name, ratio, c.limit)
		}
		os.RemoveAll(dir)
	}
}
