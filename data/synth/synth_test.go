package synth

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/argrl/argrl/data"
)

func smallConfig() Config {
	c := DefaultConfig()
	c.Train, c.Val, c.Test, c.Base = 300, 60, 50, 800
	return c
}

// generateFiles writes cfg's benchmark into a temporary directory and reads
// every file back through data.ReadFile (which validates each record).
func generateFiles(t *testing.T, cfg Config) (string, *Output, map[string][]data.Record) {
	t.Helper()
	out, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := out.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	files := map[string][]data.Record{}
	for _, f := range out.Files() {
		recs, err := data.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(f.Recs) {
			t.Fatalf("%s: read %d records, generated %d", f.Name, len(recs), len(f.Recs))
		}
		files[f.Name] = recs
	}
	return dir, out, files
}

func apiByName() map[string]*API {
	m := map[string]*API{}
	for _, a := range APIs() {
		m[a.Name] = a
	}
	return m
}

func TestDeterministic(t *testing.T) {
	cfg := smallConfig()
	dirA, _, _ := generateFiles(t, cfg)
	dirB, _, _ := generateFiles(t, cfg)
	for _, name := range []string{"train.jsonl", "val.jsonl", "test_learn.jsonl", "test_gen.jsonl", "base.jsonl", "overlap.json"} {
		a, errA := os.ReadFile(filepath.Join(dirA, name))
		b, errB := os.ReadFile(filepath.Join(dirB, name))
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs with seed %d", name, cfg.Seed)
		}
	}
	// Another seed gives another benchmark; another base size leaves the
	// other files alone (independent random streams).
	other := cfg
	other.Seed = cfg.Seed + 1
	o2, err := Generate(other)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dirA, "train.jsonl"))
	var b bytes.Buffer
	if err := data.Write(&b, o2.Train); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b.Bytes()) {
		t.Error("seeds 1 and 2 gave the same train.jsonl")
	}
	bigger := cfg
	bigger.Base = cfg.Base + 100
	o3, err := Generate(bigger)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := data.Write(&b, o3.Train); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b.Bytes()) {
		t.Error("changing the base corpus size changed train.jsonl")
	}
}

func TestAPITable(t *testing.T) {
	if err := builtin.checkAPIs(APIs()); err != nil {
		t.Fatal(err)
	}
	domains := map[string]bool{}
	kinds := map[string]bool{}
	for _, a := range APIs() {
		domains[a.Domain] = true
		for _, arg := range a.Args {
			kinds[arg.Kind.Class()] = true
		}
		s, err := data.ParseSchema(a.Parameters())
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		if len(s.Properties) != len(a.Args) {
			t.Errorf("%s: schema has %d properties, API %d arguments", a.Name, len(s.Properties), len(a.Args))
		}
	}
	if len(APIs()) < 40 || len(domains) < 8 {
		t.Errorf("%d APIs in %d domains, want ≥ 40 in ≥ 8", len(APIs()), len(domains))
	}
	for _, k := range []string{"categorical", "named_entity", "free_form", "number_date"} {
		if !kinds[k] {
			t.Errorf("no argument of kind %s", k)
		}
	}
	// The checker rejects a template that drops a required argument.
	bad := *APIs()[0]
	bad.T = map[string][]string{}
	for l, ts := range APIs()[0].T {
		bad.T[l] = append([]string(nil), ts...)
	}
	bad.T["it"][0] = "Cercami un volo"
	if err := builtin.checkAPIs([]*API{&bad}); err == nil {
		t.Error("checkAPIs accepted an Italian template without its required arguments")
	}
}

func TestLexicon(t *testing.T) {
	free := 0
	for _, cat := range builtin.freeCats {
		es := builtin.free[cat]
		if len(es) == 0 {
			t.Fatalf("free-form category %s is empty", cat)
		}
		free += len(es)
		for li := range Langs {
			seen := map[string]bool{}
			for _, e := range es {
				if seen[e.T[li]] {
					t.Errorf("%s: %q appears twice in %s", cat, e.T[li], Langs[li])
				}
				seen[e.T[li]] = true
				if li > 0 && strings.EqualFold(e.T[li], e.T[0]) {
					t.Errorf("%s: %s translation of %q equals the English one: ALM would be invisible", cat, Langs[li], e.T[0])
				}
			}
		}
	}
	if free < 300 {
		t.Errorf("%d free-form lexicon values, want ≥ 300", free)
	}
	if n := LexiconSize(); n < 300 {
		t.Errorf("lexicon has %d values, want ≥ 300", n)
	}
	for _, m := range []map[string][]Entry{builtin.free, builtin.named, builtin.enum} {
		for cat, es := range m {
			keys := map[string]bool{}
			for _, e := range es {
				if keys[e.Key] {
					t.Errorf("%s: duplicate key %q", cat, e.Key)
				}
				keys[e.Key] = true
				for li, s := range e.T {
					if s == "" || s != strings.TrimSpace(s) || !norm.NFC.IsNormalString(s) || strings.ContainsAny(s, "{}") {
						t.Errorf("%s/%s: bad %s value %q (empty, padded, not NFC or with braces)", cat, e.Key, Langs[li], s)
					}
				}
			}
		}
	}
}

func TestSplitsAndOverlap(t *testing.T) {
	cfg := smallConfig()
	dir, out, files := generateFiles(t, cfg)
	rep := out.Report
	held := map[string]bool{}
	for _, n := range rep.HeldOut {
		held[n] = true
	}
	if len(rep.HeldOut) == 0 || len(rep.Seen)+len(rep.HeldOut) != len(APIs()) {
		t.Fatalf("partition: %d seen + %d held out of %d APIs", len(rep.Seen), len(rep.HeldOut), len(APIs()))
	}

	// Languages: train and val Spanish only; tests parallel in es/it/nl/fr.
	for _, name := range []string{"train.jsonl", "val.jsonl"} {
		for _, r := range files[name] {
			if r.Lang != "es" {
				t.Fatalf("%s: record %s in %q", name, r.ID, r.Lang)
			}
		}
	}
	for _, name := range []string{"test_learn.jsonl", "test_gen.jsonl"} {
		byLang := map[string]int{}
		for _, r := range files[name] {
			byLang[r.Lang]++
		}
		for _, l := range TestLangs {
			if byLang[l] != cfg.Test {
				t.Errorf("%s: %d %s records, want %d", name, byLang[l], l, cfg.Test)
			}
		}
		if len(byLang) != len(TestLangs) {
			t.Errorf("%s: languages %v, want %v", name, byLang, TestLangs)
		}
	}
	baseLangs := map[string]int{}
	for _, r := range files["base.jsonl"] {
		baseLangs[r.Lang]++
	}
	for _, l := range Langs {
		if baseLangs[l] != cfg.Base/len(Langs) {
			t.Errorf("base: %d %s records, want %d", baseLangs[l], l, cfg.Base/len(Langs))
		}
	}

	// Overlaps, recomputed from the files read back.
	train := files["train.jsonl"]
	learn := data.APIOverlap(train, files["test_learn.jsonl"]).Fraction()
	gen := data.APIOverlap(train, files["test_gen.jsonl"]).Fraction()
	t.Logf("API overlap with train: learnability %.3f, generalization %.3f", learn, gen)
	if learn < 0.95 {
		t.Errorf("learnability overlap %.3f, want ≥ 0.95", learn)
	}
	if gen <= 0 || gen > 0.15 {
		t.Errorf("generalization overlap %.3f, want in (0, 0.15]", gen)
	}
	if math.Abs(rep.Overlap["learn"].Fraction-learn) > 1e-4 || math.Abs(rep.Overlap["gen"].Fraction-gen) > 1e-4 {
		t.Errorf("report overlaps %+v disagree with the files (%.4f, %.4f)", rep.Overlap, learn, gen)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "overlap.json"))
	if err != nil || !bytes.Contains(raw, []byte(`"fraction": `+strconv.FormatFloat(rep.Overlap["gen"].Fraction, 'g', -1, 64))) {
		t.Errorf("overlap.json lacks the generalization fraction: %v", err)
	}

	// Held-out APIs never reach training: not as gold calls, not as tools.
	for _, name := range []string{"train.jsonl", "val.jsonl", "test_learn.jsonl"} {
		for _, r := range files[name] {
			for _, tool := range r.Tools {
				if held[tool.Name] {
					t.Fatalf("%s: record %s offers held-out tool %s", name, r.ID, tool.Name)
				}
			}
		}
	}
	for _, r := range files["test_gen.jsonl"] {
		for _, c := range r.Calls {
			if !held[c.Name] && c.Name != rep.Shared {
				t.Fatalf("test_gen: record %s calls seen API %s (shared API is %s)", r.ID, c.Name, rep.Shared)
			}
		}
	}

	// Case mix and the shape of each case.
	for name, recs := range files {
		counts := map[int]int{}
		for _, r := range recs {
			counts[len(r.Calls)]++
			if r.Calls == nil {
				t.Fatalf("%s: record %s has null calls", name, r.ID)
			}
			if len(r.Calls) == 0 && r.RejectReason == "" {
				t.Errorf("%s: irrelevance record %s has no reject_reason", name, r.ID)
			}
			if len(r.Tools) < 1 || len(r.Tools) > 1+cfg.MaxDistractors {
				t.Errorf("%s: record %s offers %d tools", name, r.ID, len(r.Tools))
			}
		}
		n := len(recs)
		if name == "test_learn.jsonl" || name == "test_gen.jsonl" {
			n = cfg.Test
			for k := range counts {
				counts[k] /= len(TestLangs)
			}
		}
		wantIrr := int(math.Round(cfg.Irrelevant * float64(n)))
		wantPar := int(math.Round(cfg.Parallel * float64(n)))
		if counts[0] != wantIrr || counts[2] != wantPar || counts[1] != n-wantIrr-wantPar {
			t.Errorf("%s: calls-per-record counts %v, want %d irrelevant, %d parallel", name, counts, wantIrr, wantPar)
		}
	}
	for _, name := range []string{"train.jsonl", "test_learn.jsonl", "base.jsonl"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if !bytes.Contains(b, []byte(`"calls":[]`)) || bytes.Contains(b, []byte(`"calls":null`)) {
			t.Errorf("%s: irrelevance must be written as \"calls\":[]", name)
		}
	}
}

// TestParallelLanguages: a test instance is the same request in every
// language: same tools, same calls, same language-independent values.
func TestParallelLanguages(t *testing.T) {
	_, _, files := generateFiles(t, smallConfig())
	apis := apiByName()
	for _, name := range []string{"test_learn.jsonl", "test_gen.jsonl"} {
		groups := map[string][]data.Record{}
		for _, r := range files[name] {
			groups[r.ID[:strings.LastIndex(r.ID, "-")]] = append(groups[r.ID[:strings.LastIndex(r.ID, "-")]], r)
		}
		for id, g := range groups {
			if len(g) != len(TestLangs) {
				t.Fatalf("%s: instance %s has %d records", name, id, len(g))
			}
			ref := signature(g[0], apis)
			for _, r := range g[1:] {
				if s := signature(r, apis); s != ref {
					t.Fatalf("%s: %s and %s differ:\n%s\n%s", name, g[0].ID, r.ID, ref, s)
				}
			}
		}
	}
}

// signature lists tools, call names and the values that never depend on
// the language.
func signature(r data.Record, apis map[string]*API) string {
	var b strings.Builder
	for _, t := range r.Tools {
		b.WriteString(t.Name + ",")
	}
	for _, c := range r.Calls {
		b.WriteString("|" + c.Name)
		keys := sortedKeys(c.Arguments)
		for _, k := range keys {
			a, _ := apis[c.Name].arg(k)
			b.WriteString(" " + k)
			if !a.Kind.UserLanguage() {
				b.WriteString("=" + strings.TrimSpace(strconv.Quote(toString(c.Arguments[k]))))
			}
		}
	}
	return b.String()
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}
