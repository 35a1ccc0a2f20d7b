package synth

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/data"
)

// TestStylesDiffer: the xlam and toolace corpora are valid training data
// (every file reads back through data.ReadFile, which validates each
// record), deterministic from the seed, and differ as paper 001's Table 1
// says xLAM and ToolACE do: disjoint API domains, more arguments a call in
// xlam, parallel calls in xlam and refusals only in toolace.
func TestStylesDiffer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed, cfg.Train, cfg.Val, cfg.Test = 5, 200, 40, 40
	apis := apiByName()
	type stats struct {
		domains              map[string]bool
		calls, args, par, no int
		recs                 int
	}
	got := map[string]*stats{}
	for _, name := range []string{"xlam", "toolace"} {
		o, err := GenerateStyle(cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := o.WriteDir(dir); err != nil {
			t.Fatal(err)
		}
		again, err := GenerateStyle(cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		dir2 := t.TempDir()
		if err := again.WriteDir(dir2); err != nil {
			t.Fatal(err)
		}
		s := &stats{domains: map[string]bool{}}
		got[name] = s
		seen := map[string]bool{}
		for _, f := range o.Files() {
			a, err := os.ReadFile(filepath.Join(dir, f.Name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir2, f.Name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s %s: the same seed gave different files", name, f.Name)
			}
			recs, err := data.ReadFile(filepath.Join(dir, f.Name))
			if err != nil {
				t.Fatalf("%s %s is not valid training data: %v", name, f.Name, err)
			}
			want := map[string]int{"train.jsonl": cfg.Train, "val.jsonl": cfg.Val, "test.jsonl": cfg.Test}[f.Name]
			if len(recs) != want {
				t.Errorf("%s %s: %d records, want %d", name, f.Name, len(recs), want)
			}
			for _, r := range recs {
				if r.Lang != "es" {
					t.Errorf("%s %s: record %s in %q, want es", name, f.Name, r.ID, r.Lang)
				}
				if f.Name != "train.jsonl" {
					seen[r.Messages[0].Content] = true
				} else if seen[r.Messages[0].Content] {
					t.Errorf("%s: training record %s repeats a test or validation request", name, r.ID)
				}
				s.recs++
				switch {
				case len(r.Calls) == 0:
					s.no++
				case len(r.Calls) > 1:
					s.par++
				}
				for _, tool := range r.Tools {
					s.domains[apis[tool.Name].Domain] = true
				}
				for _, c := range r.Calls {
					s.calls++
					s.args += len(c.Arguments)
				}
			}
		}
	}
	x, ta := got["xlam"], got["toolace"]
	for d := range x.domains {
		if ta.domains[d] {
			t.Errorf("domain %s offered in both styles", d)
		}
	}
	if len(x.domains) != 6 || len(ta.domains) != 6 {
		t.Errorf("domains: xlam %d, toolace %d, want 6 each", len(x.domains), len(ta.domains))
	}
	xa, ya := float64(x.args)/float64(x.calls), float64(ta.args)/float64(ta.calls)
	if xa < ya+0.5 {
		t.Errorf("arguments a call: xlam %.2f, toolace %.2f; want xlam ahead by at least 0.5", xa, ya)
	}
	if x.no != 0 || ta.no < ta.recs*4/10 {
		t.Errorf("no-call answers: xlam %d of %d (want 0), toolace %d of %d (want ≥ 40%%)", x.no, x.recs, ta.no, ta.recs)
	}
	if x.par < x.recs*4/10 || ta.par > ta.recs/4 {
		t.Errorf("parallel answers: xlam %d of %d (want ≥ 40%%), toolace %d of %d (want ≤ 25%%)", x.par, x.recs, ta.par, ta.recs)
	}
	if _, err := GenerateStyle(cfg, "glaive"); err == nil {
		t.Error("an unknown style was accepted")
	}
}
