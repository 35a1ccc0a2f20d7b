package metrics

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func syntheticMetrics(t *testing.T, path string, rl bool) {
	t.Helper()
	l, err := Open(path, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for s := 1; s <= 60; s++ {
		m := Metrics{"loss": 2 * math.Exp(-float64(s)/20), "lr": 1e-4 * float64(min(s, 5)) / 5,
			"grad_norm": 1 + 0.5*math.Sin(float64(s)), "tokens_per_s": 5000 + float64(s%7), "epoch": float64(s / 30)}
		if rl {
			m["reward_mean"], m["reward_min"], m["reward_max"] = float64(s)/60, -1, 2
			m["reward_std"], m["kl"], m["clip_frac"], m["entropy"], m["resp_len"] = 0.3, 0.001*float64(s), 0.05+float64(s%3)/100, 1.2-float64(s)/100, 40+float64(s%5)
			m["reward_fcm"], m["rate_tid"], m["rate_fcm"] = float64(s%2), float64(s)/60, float64(s)/120
			m["updates"], m["time_reward_s"], m["zero_std_frac"] = 4, 0.001*float64(s%4), 0.5
		}
		if s == 13 {
			m["grad_norm"] = math.NaN() // logged as null, skipped in the plot
		}
		l.Log("train", s, m)
		if s%20 == 0 {
			f := float64(s) / 100
			l.Log("eval", s, Metrics{"tid": 0.9 + f/10, "tsa": 0.8 + f/10, "aca": 0.7 + f/10, "alc": 0.6 + f/10, "fcm": 0.5 + f/10, "loss": 1.5})
		}
	}
}

func TestPlotWritesPNGs(t *testing.T) {
	for _, rl := range []bool{false, true} {
		dir := t.TempDir()
		mp := filepath.Join(dir, File)
		syntheticMetrics(t, mp, rl)
		out := filepath.Join(dir, "plots")
		files, err := Plot(mp, out)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range files {
			names = append(names, filepath.Base(f))
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(fh)
			fh.Close()
			if err != nil {
				t.Fatalf("%s is not a PNG: %v", f, err)
			}
			if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 150 {
				t.Fatalf("%s is %v", f, b)
			}
			if st, _ := os.Stat(f); st.Size() < 5000 {
				t.Fatalf("%s has only %d bytes", f, st.Size())
			}
		}
		sort.Strings(names)
		want := []string{"eval_metrics.png", "grad_norm.png", "loss.png", "lr.png", "throughput.png"}
		if rl {
			want = append(want, "clip_frac.png", "entropy.png", "kl.png", "resp_len.png", "reward.png", "reward_parts.png", "rollout_levels.png")
		}
		sort.Strings(want)
		if strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("rl=%v: wrote %v, want %v", rl, names, want)
		}
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Plot(filepath.Join(dir, "missing.jsonl"), dir); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"step\":1,\"kind\":\"train\",\"loss\":1}\n{\"step\":2,\"kind\":\"train\",\"loss\":\n"), 0o644)
	if _, err := Plot(bad, dir); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Fatalf("corrupt file: %v", err)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Plot(empty, dir); err == nil || !strings.Contains(err.Error(), "no metric lines") {
		t.Fatalf("empty file: %v", err)
	}
}

// A constant learning rate and evaluations at a single step are not
// drawn; neither are timings and counters.
func TestPlotSkipsTrivialFigures(t *testing.T) {
	dir := t.TempDir()
	mp := filepath.Join(dir, File)
	l, err := Open(mp, -1)
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= 10; s++ {
		l.Log("train", s, Metrics{"loss": 1 / float64(s), "lr": 1e-4, "updates": 4, "time_reward_s": float64(s), "epoch": 0})
	}
	l.Log("eval", 10, Metrics{"tid": 0.5, "fcm": 0.25, "exact_match": 0.2})
	l.Close()
	files, err := Plot(mp, filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || filepath.Base(files[0]) != "loss.png" {
		t.Fatalf("wrote %v, want only loss.png", files)
	}
}
