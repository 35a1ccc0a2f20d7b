package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestStrict(t *testing.T) {
	for _, c := range []struct {
		m    []float64
		want bool
	}{
		{[]float64{2, 1.5, 0.5}, true},    // mean 1.33, all ahead
		{[]float64{3, 3, 0}, false},       // a tie on one draw
		{[]float64{0.9, 0.9, 0.9}, false}, // ahead everywhere, mean below 1 point
		{[]float64{5, -0.1, 5}, false},    // behind on one draw
		{[]float64{1}, true},              // one draw: ahead by exactly 1
		{nil, false},
	} {
		if got := Strict(c.m); got != c.want {
			t.Errorf("Strict(%v) = %v, want %v", c.m, got, c.want)
		}
	}
}

// writeDraws writes n draws where every stage's ALC and FCM (out of 100
// turns) are base + the stage's offset + the draw index, every file.
func writeDraws(t *testing.T, n int, alc, fcm map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	for d := 1; d <= n; d++ {
		ev := filepath.Join(dir, "draw-"+string(rune('0'+d)), "evals")
		for st := range alc {
			for _, f := range []string{"learn.es", "gen.es", "gen.it", "gen.nl", "gen.fr", "probe.en"} {
				a, fc := alc[st]+d, fcm[st]+d
				writeRep(t, ev, st, f, rep(counts{100, 100, 95, 95, a, fc}))
			}
		}
	}
	return dir
}

func TestReproduceClaims(t *testing.T) {
	alc := map[string]int{"base": 40, "sft": 60, "grpo": 70, "sft-grpo": 71, "ppo": 65, "sft-ppo": 66,
		"sft-best": 72, "grpo-best": 71, "sft-grpo-best": 73, "ppo-best": 66, "sft-ppo-best": 67,
		"grpo-rm1-best": 50, "grpo-rm2-best": 71, "grpo-b3-best": 75, "ppo-b3-best": 60}
	fcm := map[string]int{"base": 20, "sft": 40, "grpo": 45, "sft-grpo": 46, "ppo": 42, "sft-ppo": 43,
		"sft-best": 50, "grpo-best": 49, "sft-grpo-best": 51, "ppo-best": 44, "sft-ppo-best": 45,
		"grpo-rm1-best": 30, "grpo-rm2-best": 40, "grpo-b3-best": 48, "ppo-b3-best": 35}
	d, err := LoadDraws(writeDraws(t, 3, alc, fcm))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Names) != 3 {
		t.Fatalf("draws %v", d.Names)
	}
	cs, err := d.Claims()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"SFT > Base (ALC, FCM; Split-1, es)":                                  true,
		"epoch-fixed GRPO > SFT (ALC; Split-1, es)":                           true,
		"RM-3 > RM-2 > RM-1 (ALC; GRPO, best checkpoint)":                     false, // RM-3 71 vs RM-2 71: a tie
		"GRPO > PPO (ALC, FCM; RM-3, best checkpoint)":                        true,
		"β=3 > β=1 for GRPO (ALC, best checkpoint)":                           true,
		"β=3 < β=1 for PPO (ALC, best checkpoint)":                            true,
		"GRPO > Base on ≥ 2 unseen languages (ALC; Split-2, best checkpoint)": true,
	}
	seen := 0
	for _, c := range cs {
		if w, ok := want[c.Claim]; ok {
			seen++
			if c.Holds != w {
				t.Errorf("%s: holds %v, want %v (%v)", c.Claim, c.Holds, w, c.Values)
			}
		}
		if strings.HasPrefix(c.Claim, "best-checkpoint SFT") && !c.Holds { // 50 vs 49: ahead by 1 on every draw
			t.Errorf("%s does not hold: %v", c.Claim, c.Values)
		}
		if strings.HasPrefix(c.Claim, "retention") && c.Holds { // GRPO 49 < SFT 50
			t.Errorf("%s holds: %v", c.Claim, c.Values)
		}
		if strings.HasPrefix(c.Claim, "ALC exceeds FCM") && (!c.Holds || !c.Sanity) { // 40 vs 20; FCM ≤ ALC by construction
			t.Errorf("%s: holds %v, sanity %v: %v", c.Claim, c.Holds, c.Sanity, c.Values)
		}
	}
	if h, n, _, s := CountClaims(cs); seen != len(want) || len(cs) != 10 || n != 9 || s != 1 || h != 7 {
		t.Errorf("CountClaims: %d of %d claims hold, %d sanity checks", h, n, s)
	}
	if seen != len(want) || len(cs) != 10 {
		t.Errorf("%d claims (%d of the expected ones)", len(cs), seen)
	}
	// Paired margins: every draw moves both stages alike here, so the
	// margin of SFT over base is 20 points on each draw, sd 0.
	for _, c := range cs {
		if c.Claim == "SFT > Base (ALC, FCM; Split-1, es)" {
			m := c.Values["ALC(sft learn.es) > ALC(base learn.es)"].(map[string]any)
			if m["mean_margin"] != 20.0 || m["sd_margin"] != 0.0 {
				t.Errorf("paired margins %v", m)
			}
		}
	}
	var cb bytes.Buffer
	WriteReproClaims(&cb, cs)
	if out := cb.String(); !strings.Contains(out, "(paired, mean 20.00 ± 0.00 sd)") || !strings.Contains(out, "Sanity checks") ||
		strings.Index(out, "Sanity checks") > strings.Index(out, "ALC exceeds FCM") {
		t.Errorf("claims:\n%s", out)
	}
	var b bytes.Buffer
	if err := d.WriteTables(&b); err != nil {
		t.Fatal(err)
	}
	// SFT's Split-1 ALC is 61, 62, 63 over the draws: 62.0 ± 1.0, paper 63.8.
	if !strings.Contains(b.String(), "62.0 ±  1.0 [ 63.8]") {
		t.Errorf("tables:\n%s", b.String())
	}
	files, err := d.WritePlots(t.TempDir())
	if err != nil || len(files) != len(paperTables) {
		t.Fatalf("plots %v: %v", files, err)
	}
	// An arm the protocol leaves out (SFT→PPO: no draw has it) prints as
	// not run, with the paper's numbers, and has no bar; the claims do not
	// need it.
	for _, reps := range d.reps {
		for k := range reps {
			if k.Stage == "sft-ppo" || k.Stage == "sft-ppo-best" {
				delete(reps, k)
			}
		}
	}
	b.Reset()
	if err := d.WriteTables(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "SFT+PPO        not run in this protocol (no draw has its evaluations) [paper: 100.0 93.2 93.2 73.6 49.8 100.0 95.4 95.4 68.1 41.6]") ||
		!strings.Contains(b.String(), "62.0 ±  1.0 [ 63.8]") {
		t.Errorf("tables without SFT→PPO:\n%s", b.String())
	}
	if files, err := d.WritePlots(t.TempDir()); err != nil || len(files) != len(paperTables) {
		t.Fatalf("plots without SFT→PPO %v: %v", files, err)
	}
	if _, err := d.Claims(); err != nil {
		t.Errorf("claims without SFT→PPO: %v", err)
	}
	// A stage run on some draws only is not left out: its missing files are errors.
	delete(d.reps[2], Key{"ppo", "learn", "es"})
	if err := d.WriteTables(&b); err == nil || !strings.Contains(err.Error(), filepath.Join("draw-3", "evals", "ppo", "learn.es.json")) {
		t.Errorf("a stage missing on one draw: %v", err)
	}
	// A missing evaluation names the file.
	delete(d.reps[1], Key{"ppo-b3-best", "learn", "es"})
	if _, err := d.Claims(); err == nil || !strings.Contains(err.Error(), filepath.Join("draw-2", "evals", "ppo-b3-best", "learn.es.json")) {
		t.Errorf("missing file: %v", err)
	}
}
