package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argrl/argrl/reward"
)

// counts are a file's turn counts per level: n, tid, tsa, aca, alc, fcm.
type counts [6]int

func rep(c counts) reward.Report {
	n := float64(c[0])
	return reward.Report{N: c[0], TID: float64(c[1]) / n, TSA: float64(c[2]) / n, ACA: float64(c[3]) / n,
		ALC: float64(c[4]) / n, FCM: float64(c[5]) / n, ExactMatch: float64(c[5]) / n,
		NameAcc: float64(c[2]) / n, ArgScore: 0.5, ALCCont: 1.5, Judged: c[0] / 2}
}

func writeRep(t *testing.T, dir, stage, name string, r reward.Report) {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, stage), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stage, name+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture: three stages × two splits × four languages, with counts chosen
// so every pooled rate is a known fraction.
var fixture = map[string]map[string]counts{
	"base": {
		"learn.es": {30, 30, 27, 27, 6, 3}, "learn.it": {30, 30, 27, 27, 9, 3}, "learn.nl": {30, 29, 27, 26, 12, 6}, "learn.fr": {30, 30, 28, 28, 3, 0},
		"gen.es": {20, 20, 18, 18, 4, 2}, "gen.it": {20, 20, 18, 18, 5, 1}, "gen.nl": {20, 20, 18, 18, 6, 2}, "gen.fr": {20, 20, 18, 18, 7, 3},
	},
	"sft": {
		"learn.es": {30, 30, 29, 29, 21, 15}, "learn.it": {30, 30, 28, 28, 15, 9}, "learn.nl": {30, 30, 28, 28, 12, 6}, "learn.fr": {30, 30, 28, 28, 18, 9},
		"gen.es": {20, 20, 19, 19, 12, 8}, "gen.it": {20, 20, 18, 18, 9, 4}, "gen.nl": {20, 20, 18, 18, 6, 2}, "gen.fr": {20, 20, 18, 18, 10, 5},
	},
	"grpo": {
		"learn.es": {30, 30, 29, 29, 24, 18}, "learn.it": {30, 30, 28, 28, 18, 9}, "learn.nl": {30, 30, 28, 28, 12, 6}, "learn.fr": {30, 30, 28, 28, 3, 0},
		"gen.es": {20, 20, 19, 19, 12, 9}, "gen.it": {20, 20, 18, 18, 10, 4}, "gen.nl": {20, 20, 18, 18, 8, 2}, "gen.fr": {20, 20, 18, 18, 11, 5},
	},
}

func writeFixture(t *testing.T) string {
	dir := t.TempDir()
	for st, files := range fixture {
		for name, c := range files {
			writeRep(t, dir, st, name, rep(c))
		}
	}
	return dir
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestLoadAndPool(t *testing.T) {
	dir := writeFixture(t)
	r, err := Load(dir, []string{"base", "sft", "grpo"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Splits, ","); got != "learn,gen" {
		t.Errorf("splits %s, want learn,gen", got)
	}
	if got := strings.Join(r.Langs, ","); got != "es,it,nl,fr" {
		t.Errorf("langs %s, want es,it,nl,fr", got)
	}
	// Pooled over the four languages of base/learn: 120 turns.
	all, err := r.Get("base", "learn")
	if err != nil {
		t.Fatal(err)
	}
	if all.N != 120 || !near(all.TID, 119.0/120) || !near(all.TSA, 109.0/120) || !near(all.ACA, 108.0/120) ||
		!near(all.ALC, 30.0/120) || !near(all.FCM, 12.0/120) {
		t.Errorf("pooled base/learn = %+v, want n 120 tid 119 tsa 109 aca 108 alc 30 fcm 12 (/120)", all)
	}
	if all.Judged != 60 || !near(all.ALCCont, 1.5) || !near(all.ArgScore, 0.5) {
		t.Errorf("pooled judged %d alc_cont %v arg_score %v, want 60, 1.5, 0.5", all.Judged, all.ALCCont, all.ArgScore)
	}
	// A subset of languages pools only those.
	two, err := r.Get("sft", "gen", "it", "fr")
	if err != nil {
		t.Fatal(err)
	}
	if two.N != 40 || !near(two.ALC, 19.0/40) || !near(two.FCM, 9.0/40) {
		t.Errorf("pooled sft/gen it+fr = %+v, want n 40 alc 19/40 fcm 9/40", two)
	}
	if _, err := r.Get("sft", "gen", "de"); err == nil {
		t.Error("Get of a missing language: no error")
	}
}

// row returns the line of out that starts with label.
func row(t *testing.T, out, label string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(strings.ReplaceAll(l, "|", " "))
		if len(f) > 0 && f[0] == label {
			return f[1:]
		}
	}
	t.Fatalf("no row %q in\n%s", label, out)
	return nil
}

func TestTables(t *testing.T) {
	r, err := Load(writeFixture(t), []string{"base", "sft", "grpo"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Table2(&b, "es"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// SFT on es: learn 30/30/29/29/21/15, gen 20/20/19/19/12/8.
	want := "100.00 96.67 96.67 70.00 50.00 100.00 95.00 95.00 60.00 40.00"
	if got := strings.Join(row(t, out, "SFT"), " "); got != want {
		t.Errorf("Table 2 (es) SFT row = %s, want %s\n%s", got, want, out)
	}
	if !strings.Contains(out, "Split-1: learnability (n=30)") || !strings.Contains(out, "Split-2: generalization (n=20)") {
		t.Errorf("Table 2 header lacks the splits and their sizes:\n%s", out)
	}
	b.Reset()
	if err := r.Table2(&b); err != nil {
		t.Fatal(err)
	}
	// Base, all languages: learn 119/109/108/30/12 of 120; gen 80/72/72/22/8 of 80.
	want = "99.17 90.83 90.00 25.00 10.00 100.00 90.00 90.00 27.50 10.00"
	if got := strings.Join(row(t, b.String(), "Base"), " "); got != want {
		t.Errorf("Table 2 (all) Base row = %s, want %s\n%s", got, want, b.String())
	}
	b.Reset()
	if err := r.Table8(&b, "gen", []string{"es"}); err != nil {
		t.Fatal(err)
	}
	// GRPO gen ALC: es 12/20; it 10/20, nl 8/20, fr 11/20; AVG = 29/60.
	want = "60.00 50.00 40.00 55.00 48.33"
	if got := strings.Join(row(t, b.String(), "GRPO"), " "); got != want {
		t.Errorf("Table 8 GRPO row = %s, want %s\n%s", got, want, b.String())
	}
	if !strings.Contains(b.String(), "ES(train)") || !strings.Contains(b.String(), "AVG") {
		t.Errorf("Table 8 header:\n%s", b.String())
	}
}

func TestClaims(t *testing.T) {
	r, err := Load(writeFixture(t), []string{"base", "sft", "grpo"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := r.Claims("base", "sft", "grpo", []string{"es"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 8 {
		t.Fatalf("%d claims, want 4 per split", len(cs))
	}
	// learn: ALC 21>6, FCM 15>3, GRPO 24>21; unseen it 9→18 yes, nl 12→12 no, fr 3→3 no: 1 of 3.
	// gen:   ALC 12>4, FCM 8>2, GRPO 12 vs 12 a tie: does not hold (the
	// strict rule); unseen it 5→10, nl 6→8, fr 7→11: 3 of 3.
	wantHolds := []bool{true, true, true, false, true, true, false, true}
	for i, c := range cs {
		if c.Holds != wantHolds[i] {
			t.Errorf("claim %d (%s, %s: %s) holds = %v, want %v", i, c.Split, c.Text, c.Got, c.Holds, wantHolds[i])
		}
	}
	if !strings.HasPrefix(cs[3].Got, "1 of 3") {
		t.Errorf("unseen-language claim on learn: %q, want 1 of 3", cs[3].Got)
	}
	var b bytes.Buffer
	WriteClaims(&b, cs)
	if strings.Count(b.String(), "DOES NOT HOLD") != 2 {
		t.Errorf("WriteClaims:\n%s", b.String())
	}
}

func TestLoadErrors(t *testing.T) {
	stages := []string{"base", "sft"}
	cases := map[string]func(t *testing.T, dir string){
		"missing file in a stage": func(t *testing.T, dir string) {
			writeRep(t, dir, "base", "gen.es", rep(counts{10, 10, 9, 9, 5, 2}))
			writeRep(t, dir, "base", "gen.it", rep(counts{10, 10, 9, 9, 5, 2}))
			writeRep(t, dir, "sft", "gen.es", rep(counts{10, 10, 9, 9, 5, 2}))
		},
		"empty stage": func(t *testing.T, dir string) {
			writeRep(t, dir, "base", "gen.es", rep(counts{10, 10, 9, 9, 5, 2}))
		},
		"hierarchy violated": func(t *testing.T, dir string) {
			writeRep(t, dir, "base", "gen.es", rep(counts{10, 10, 9, 9, 5, 6}))
			writeRep(t, dir, "sft", "gen.es", rep(counts{10, 10, 9, 9, 5, 2}))
		},
		"no turns": func(t *testing.T, dir string) {
			writeRep(t, dir, "base", "gen.es", reward.Report{})
			writeRep(t, dir, "sft", "gen.es", rep(counts{10, 10, 9, 9, 5, 2}))
		},
		"bad name": func(t *testing.T, dir string) {
			writeRep(t, dir, "base", "gen", rep(counts{10, 10, 9, 9, 5, 2}))
			writeRep(t, dir, "sft", "gen", rep(counts{10, 10, 9, 9, 5, 2}))
		},
		"not a report": func(t *testing.T, dir string) {
			writeRep(t, dir, "sft", "gen.es", rep(counts{10, 10, 9, 9, 5, 2}))
			if err := os.MkdirAll(filepath.Join(dir, "base"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "base", "gen.es.json"), []byte(`{"n": 3, "tid": 1, "extra": 2}`), 0o644); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			setup(t, dir)
			if _, err := Load(dir, stages); err == nil {
				t.Error("Load: no error")
			}
		})
	}
}

func TestTableALM(t *testing.T) {
	dir := writeFixture(t)
	verdicts := map[string][3]int{ // stage/file: exact, minor, mismatch
		"base/learn.es": {5, 3, 12}, "base/learn.it": {1, 1, 2},
		"sft/learn.es": {10, 8, 2}, "grpo/learn.es": {12, 7, 1},
	}
	for k, v := range verdicts {
		st, name, _ := strings.Cut(k, "/")
		r := rep(fixture[st][name])
		r.ValuesExact, r.ValuesRight, r.ValuesMismatch = v[0], v[1], v[2]
		writeRep(t, dir, st, name, r)
	}
	r, err := Load(dir, []string{"base", "sft", "grpo"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.TableALM(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// Columns: learn es it nl fr | gen es it nl fr.
	for label, want := range map[string]string{
		"Base": "60.00 50.00 n/a n/a n/a n/a n/a n/a",
		"SFT":  "10.00 n/a n/a n/a n/a n/a n/a n/a",
		"GRPO": "5.00 n/a n/a n/a n/a n/a n/a n/a",
	} {
		if got := strings.Join(row(t, out, label), " "); got != want {
			t.Errorf("ALM row %s = %s, want %s\n%s", label, got, want, out)
		}
	}
	// Pooling sums the verdict counts: base/learn over all languages.
	all, err := r.Get("base", "learn")
	if err != nil {
		t.Fatal(err)
	}
	if all.ValuesExact != 6 || all.ValuesRight != 4 || all.ValuesMismatch != 14 || !near(all.MismatchRate(), 14.0/24) {
		t.Errorf("pooled verdicts %d/%d/%d rate %v, want 6/4/14 and 14/24", all.ValuesExact, all.ValuesRight, all.ValuesMismatch, all.MismatchRate())
	}
}
