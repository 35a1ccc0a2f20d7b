package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// handR2IF builds draws from hand-made values: per draw, run → acc, irr, ace.
func handR2IF(vals ...map[string][3]float64) *R2IFDraws {
	d := &R2IFDraws{Dir: "hand"}
	for i, v := range vals {
		ev := map[string]R2IFEval{}
		for run, x := range v {
			ev[run] = R2IFEval{Acc: x[0], Irr: x[1], ACE: x[2], N: 200, NIrr: 40}
		}
		d.Names = append(d.Names, "draw-"+string(rune('1'+i)))
		d.Evals = append(d.Evals, ev)
	}
	return d
}

func claimHolds(t *testing.T, cs []ReproClaim, prefix string) bool {
	t.Helper()
	for _, c := range cs {
		if strings.HasPrefix(c.Claim, prefix) {
			return c.Holds
		}
	}
	t.Fatalf("no claim %q", prefix)
	return false
}

func TestR2IFClaimsHandMade(t *testing.T) {
	// Draw 1 and 2: R2IF ahead everywhere. ACE 0.015 and 0.005: 1.5 and
	// 0.5 points, mean exactly 1 point over zero; against binary (−0.02,
	// 0.0): 3.5 and 0.5 points.
	d := handR2IF(
		map[string][3]float64{"sft": {.5, .8, 0}, "binary": {.60, .90, -.02}, "r2if": {.62, .925, .015}, "no-cer": {.60, .95, .01}, "no-smv": {.61, .90, .01}},
		map[string][3]float64{"sft": {.5, .8, 0}, "binary": {.58, .95, 0}, "r2if": {.60, .95, .005}, "no-cer": {.57, .90, .0}, "no-smv": {.605, .95, .0}},
	)
	cs, err := d.Claims()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 {
		t.Fatalf("%d claims, want 4", len(cs))
	}
	// ACE: > 0 by 1.5 and 0.5 points (mean 1.0: holds); > binary by 3.5, 0.5.
	if !claimHolds(t, cs, "ACE after R2IF") {
		t.Errorf("ACE claim: %+v", cs[0].Values)
	}
	// CER: 2 and 3 points on both draws.
	if !claimHolds(t, cs, "removing CER") {
		t.Errorf("CER claim: %+v", cs[1].Values)
	}
	// SMV: 1 point, then a 0.5-point deficit: fails on draw 2.
	if claimHolds(t, cs, "removing SMV") {
		t.Errorf("SMV claim holds with a deficit on draw 2: %+v", cs[2].Values)
	}
	// Irrelevance: +2.5, then a tie: a tie does not hold; no draw below.
	irr := cs[3]
	if irr.Holds {
		t.Errorf("irrelevance claim holds with a tie: %+v", irr.Values)
	}
	if irr.Values["no_draw_below"] != true {
		t.Errorf("no_draw_below = %v, want true", irr.Values["no_draw_below"])
	}
	m := cs[0].Values["ACE(r2if) > 0"].(map[string]any)
	if got := m["margins"].([]float64); got[0] != 1.5 || got[1] != 0.5 || m["mean_margin"] != 1.0 {
		t.Errorf("ACE margins %v mean %v, want [1.5 0.5] and 1", got, m["mean_margin"])
	}
	m = cs[0].Values["ACE(r2if) > ACE(binary)"].(map[string]any)
	if got := m["margins"].([]float64); got[0] != 3.5 || got[1] != 0.5 {
		t.Errorf("ACE vs binary margins %v, want [3.5 0.5]", got)
	}

	// ACE of 0.009 on both draws: 0.9 points, below the 1-point mean.
	d.Evals[0]["r2if"] = R2IFEval{Acc: .62, Irr: .95, ACE: .009}
	d.Evals[1]["r2if"] = R2IFEval{Acc: .60, Irr: .95, ACE: .009}
	if cs, _ = d.Claims(); claimHolds(t, cs, "ACE after R2IF") {
		t.Error("ACE 0.9 points over zero holds")
	}
	// A negative ACE on one draw fails whatever the mean.
	d.Evals[0]["r2if"] = R2IFEval{Acc: .62, Irr: .95, ACE: .2}
	d.Evals[1]["r2if"] = R2IFEval{Acc: .60, Irr: .95, ACE: -.001}
	if cs, _ = d.Claims(); claimHolds(t, cs, "ACE after R2IF") {
		t.Error("a negative ACE on one draw holds")
	}
	// The irrelevance claim with a draw below the baseline.
	d.Evals[1]["r2if"] = R2IFEval{Acc: .60, Irr: .925, ACE: .1}
	cs, _ = d.Claims()
	if cs[3].Holds || cs[3].Values["no_draw_below"] != false {
		t.Errorf("irrelevance below the baseline: holds %v, no_draw_below %v", cs[3].Holds, cs[3].Values["no_draw_below"])
	}
}

// LoadR2IF reads the eval files the script writes and refuses a test
// report without ACE.
func TestLoadR2IF(t *testing.T) {
	dir := t.TempDir()
	write := func(p string, v any) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if err := os.WriteFile(p, b, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	rates := map[string]any{"n": 200, "tid": .9, "tsa": .8, "aca": .7, "alc": .6, "fcm": .5, "exact_match": .55}
	for _, run := range R2IFRuns {
		test := map[string]any{"ace": map[string]any{"ace": .03, "ace_se": .01, "n": 200, "empty_reasoning": 0}}
		for k, v := range rates {
			test[k] = v
		}
		write(filepath.Join(dir, "draw-1", "evals", run, "test.json"), test)
		write(filepath.Join(dir, "draw-1", "evals", run, "irr.json"), map[string]any{"n": 40, "tid": 1, "tsa": 1, "aca": 1, "alc": 1, "fcm": 1, "exact_match": .975})
	}
	d, err := LoadR2IF(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := d.Evals[0]["r2if"]; e.Acc != .55 || e.Irr != .975 || e.ACE != .03 || e.ACESE != .01 || e.NIrr != 40 {
		t.Errorf("loaded %+v", e)
	}
	var b strings.Builder
	if err := d.WriteTables(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "GRPO R2IF         55.0 ±  0.0 [ 72.2]  97.5 ±  0.0 [ 96.0]   3.0 ±  0.0 [  5.0]") {
		t.Errorf("tables:\n%s", b.String())
	}
	if files, err := d.WritePlots(filepath.Join(dir, "plots")); err != nil || len(files) != 2 {
		t.Errorf("plots %v, %v", files, err)
	}
	write(filepath.Join(dir, "draw-1", "evals", "no-smv", "test.json"), rates)
	if _, err := LoadR2IF(dir); err == nil || !strings.Contains(err.Error(), `no key "ace"`) {
		t.Errorf("test.json without ace: %v", err)
	}
}
