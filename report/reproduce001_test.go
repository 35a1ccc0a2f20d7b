package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		m    []float64
		tol  float64
		want bool
	}{
		{[]float64{-1, 2, -1}, 1, true},     // exactly a point behind on two draws: within
		{[]float64{-1.01, 3, 3}, 1, false},  // behind by more than the tolerance on one draw
		{[]float64{-5, -4.5, -5}, 5, true},  // the mixing tolerance, at its edge
		{[]float64{-5.01, 0, 0}, 5, false},  // just past it
		{[]float64{0.5, 0.5, 0.5}, 0, true}, // ahead everywhere
		{nil, 1, false},
	} {
		if got := Within(c.m, c.tol); got != c.want {
			t.Errorf("Within(%v, %g) = %v, want %v", c.m, c.tol, got, c.want)
		}
	}
}

// TestReproduce001Claims: paper 001's claims on hand-made exact-match
// values (per draw, out of 100 records), each chosen at or near its rule's
// edge.
func TestReproduce001Claims(t *testing.T) {
	em := map[string][2][3]int{ // stage → {A (xlam), B (toolace)} × 3 draws
		"base":     {{30, 31, 29}, {20, 20, 20}},
		"sft":      {{80, 80, 80}, {40, 40, 40}},
		"sft-full": {{79, 78, 79}, {35, 35, 35}}, // margins 1, 2, 1: holds (mean 1.33)
		"grpo":     {{80, 75, 70}, {39, 42, 39}}, // A: a tie on draw 1; B: −1, +2, −1, within a point
		"sft-grpo": {{70, 70, 70}, {38, 38, 38}},
		"mix":      {{75, 75, 76}, {60, 60, 60}}, // A: −5, −5, −4, within 5; B: ahead by 20
	}
	dir := t.TempDir()
	for d := 1; d <= 3; d++ {
		ev := filepath.Join(dir, fmt.Sprintf("draw-%d", d), "evals")
		for st, v := range em {
			for i, test := range []string{"xlam", "toolace"} {
				e := v[i][d-1]
				writeRep(t, ev, st, test+".es", rep(counts{100, 100, 100, 100, e, e}))
			}
		}
	}
	d, err := LoadDraws(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := d.Claims001()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"LoRA SFT":         true,
		"SFT > zero-shot":  true,
		"SFT is the best":  false, // GRPO ties SFT on draw 1
		"GRPO is within":   true,
		"mixing stays":     true,
		"the corpora diff": true, // the sanity check: gains 49-51 on A, 20 on B
	}
	for _, c := range cs {
		found := false
		for prefix, w := range want {
			if strings.HasPrefix(c.Claim, prefix) {
				found = true
				if c.Holds != w {
					t.Errorf("%s: holds %v, want %v (%v)", c.Claim, c.Holds, w, c.Values)
				}
			}
		}
		if !found {
			t.Errorf("unexpected claim %q", c.Claim)
		}
	}
	if h, n, sh, s := CountClaims(cs); h != 4 || n != 5 || sh != 1 || s != 1 {
		t.Errorf("CountClaims: %d of %d claims, %d of %d sanity checks", h, n, sh, s)
	}
	for _, c := range cs {
		if c.Sanity {
			if m := c.Values["gain on A > gain on B"].(map[string]any); fmt.Sprint(m["margins"]) != "[30 29 31]" {
				t.Errorf("gains: %v", m)
			}
		}
		if strings.HasPrefix(c.Claim, "mixing") {
			m := c.Values["EM(mix xlam.es) > EM(sft xlam.es)"].(map[string]any)
			if fmt.Sprint(m["margins"]) != "[-5 -5 -4]" || m["holds"] != true {
				t.Errorf("mix in-distribution: %v", m)
			}
			if b := c.Values["EM(mix toolace.es) > EM(sft toolace.es)"].(map[string]any); b["mean_margin"] != 20.0 {
				t.Errorf("mix transfer: %v", b)
			}
		}
	}
	// The mixture falls 6 points short on one draw: no longer close.
	writeRep(t, filepath.Join(dir, "draw-1", "evals"), "mix", "xlam.es", rep(counts{100, 100, 100, 100, 74, 74}))
	if d, err = LoadDraws(dir); err != nil {
		t.Fatal(err)
	}
	if cs, err = d.Claims001(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.HasPrefix(c.Claim, "mixing") && c.Holds {
			t.Errorf("mixing holds with a 6-point gap on draw 1: %v", c.Values)
		}
	}
	var b bytes.Buffer
	if err := d.WriteTables001(&b); err != nil {
		t.Fatal(err)
	}
	// GRPO on B: 39, 42, 39 → 40.0 ± 1.7, paper 24.6; full SFT has no paper number on B.
	if out := b.String(); !strings.Contains(out, "40.0 ±  1.7 [ 24.6]") || !strings.Contains(out, "35.0 ±  0.0 [  —  ]") {
		t.Errorf("tables:\n%s", out)
	}
	files, err := d.WritePlots001(t.TempDir())
	if err != nil || len(files) != len(paper001Tables) {
		t.Fatalf("plots %v: %v", files, err)
	}
	// A missing evaluation names the file.
	delete(d.reps[2], Key{"sft-full", "xlam", "es"})
	if _, err := d.Claims001(); err == nil || !strings.Contains(err.Error(), filepath.Join("draw-3", "evals", "sft-full", "xlam.es.json")) {
		t.Errorf("missing file: %v", err)
	}
}
