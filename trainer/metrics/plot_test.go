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
			"grad_norm": 1 + 0.5*math.Sin(float64(s)), "tokens_per_s": 5000, "epoch": float64(s / 30)}
		if rl {
			m["reward_mean"], m["reward_min"], m["reward_max"] = float64(s)/60, -1, 2
			m["reward_std"], m["kl"], m["clip_frac"], m["entropy"], m["resp_len"] = 0.3, 0.001*float64(s), 0.05, 1.2-float64(s)/100, 40
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
		want := []string{"eval_metrics.png", "grad_norm.png", "loss.png", "lr.png", "train_tokens_per_s.png"}
		if rl {
			want = append(want, "clip_frac.png", "entropy.png", "kl.png", "reward.png", "train_reward_std.png", "train_resp_len.png")
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
