// Package report turns the JSON files `train eval --out` writes into paper
// 000's comparison tables: Table 2 (TID, TSA, ACA, ALC, FCM per training
// stage, per split) and Table 8 (ALC per test language per stage). It reads
// numbers only from those files; nothing is typed in.
//
// Layout of an evaluation directory (what configs/demo/demo.sh writes):
//
//	DIR/<stage>/<split>.<lang>.json    one reward.Report per (stage, split, language)
//
// e.g. evals/sft/gen.it.json. Rates of several languages are pooled by
// turns: each rate r over n turns is the count r·n (an integer, since
// `train eval` divides counts by n), summed, divided by the pooled n.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/reward"
)

// Key names one evaluation file.
type Key struct{ Stage, Split, Lang string }

// Results are the reports of an evaluation directory.
type Results struct {
	Dir     string
	Stages  []string // in the order given (rows of the tables)
	Splits  []string // found, in SplitOrder then alphabetical order
	Langs   []string // found, in LangOrder then alphabetical order
	Reports map[Key]reward.Report
}

// SplitOrder and SplitTitle name the splits of the synthetic benchmark
// (data/synth): test_learn.jsonl is paper 000's Split-1, test_gen.jsonl its
// Split-2.
var (
	SplitOrder = []string{"learn", "gen"}
	SplitTitle = map[string]string{"learn": "Split-1: learnability", "gen": "Split-2: generalization"}
	LangOrder  = []string{"es", "it", "nl", "fr", "en"}
)

// StageTitle is the row label of a stage directory ("base" → "Base").
func StageTitle(s string) string {
	switch s {
	case "base":
		return "Base"
	case "sft", "grpo", "ppo":
		return strings.ToUpper(s)
	}
	return s
}

// Load reads DIR/<stage>/*.json for each stage. Every stage must hold the
// same (split, language) files, each a valid report whose rates respect the
// hierarchy FCM ≤ ALC ≤ ACA ≤ TSA ≤ TID.
func Load(dir string, stages []string) (*Results, error) {
	if len(stages) == 0 {
		return nil, errors.New("report: no stages given")
	}
	r := &Results{Dir: dir, Stages: stages, Reports: map[Key]reward.Report{}}
	splits, langs := map[string]bool{}, map[string]bool{}
	var first []string
	for i, st := range stages {
		files, err := filepath.Glob(filepath.Join(dir, st, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("report: %s holds no <split>.<lang>.json evaluation files", filepath.Join(dir, st))
		}
		var names []string
		for _, f := range files {
			base := strings.TrimSuffix(filepath.Base(f), ".json")
			split, lang, ok := strings.Cut(base, ".")
			if !ok || split == "" || lang == "" || strings.Contains(lang, ".") {
				return nil, fmt.Errorf("report: %s: name is not <split>.<lang>.json", f)
			}
			rep, err := readReport(f)
			if err != nil {
				return nil, err
			}
			r.Reports[Key{st, split, lang}] = rep
			splits[split], langs[lang] = true, true
			names = append(names, base)
		}
		sort.Strings(names)
		if i == 0 {
			first = names
		} else if strings.Join(names, ",") != strings.Join(first, ",") {
			return nil, fmt.Errorf("report: stage %q has evaluations %v but stage %q has %v", st, names, stages[0], first)
		}
	}
	r.Splits = ordered(splits, SplitOrder)
	r.Langs = ordered(langs, LangOrder)
	return r, nil
}

func ordered(set map[string]bool, pref []string) []string {
	var out, rest []string
	for _, p := range pref {
		if set[p] {
			out = append(out, p)
		}
	}
	for k := range set {
		if !contains(pref, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// readReport reads one `train eval --out` file and checks it.
func readReport(path string) (reward.Report, error) {
	var rep reward.Report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, fmt.Errorf("report: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		return rep, fmt.Errorf("report: %s: not a `train eval --out` report: %w", path, err)
	}
	if rep.N <= 0 {
		return rep, fmt.Errorf("report: %s: key \"n\": want > 0 turns, got %d", path, rep.N)
	}
	rates := []struct {
		name string
		v    float64
	}{{"tid", rep.TID}, {"tsa", rep.TSA}, {"aca", rep.ACA}, {"alc", rep.ALC}, {"fcm", rep.FCM}}
	for i, x := range rates {
		if !(x.v >= 0 && x.v <= 1) {
			return rep, fmt.Errorf("report: %s: key %q: rate %v is outside [0, 1]", path, x.name, x.v)
		}
		if i > 0 && x.v > rates[i-1].v+1e-12 {
			return rep, fmt.Errorf("report: %s: key %q = %v exceeds %q = %v (the hierarchy FCM ≤ ALC ≤ ACA ≤ TSA ≤ TID)", path, x.name, x.v, rates[i-1].name, rates[i-1].v)
		}
	}
	return rep, nil
}

// Get returns the report of (stage, split) pooled over langs (all the
// languages found when langs is empty).
func (r *Results) Get(stage, split string, langs ...string) (reward.Report, error) {
	if len(langs) == 0 {
		langs = r.Langs
	}
	var reps []reward.Report
	for _, l := range langs {
		rep, ok := r.Reports[Key{stage, split, l}]
		if !ok {
			return reward.Report{}, fmt.Errorf("report: no evaluation %s", filepath.Join(r.Dir, stage, split+"."+l+".json"))
		}
		reps = append(reps, rep)
	}
	return Pool(reps), nil
}

// Pool merges reports of disjoint turn sets: rates and means weighted by
// turns, ALC_cont weighted by the judged turns, counts summed.
func Pool(reps []reward.Report) reward.Report {
	var out reward.Report
	var judgedSum float64
	for _, r := range reps {
		out.N += r.N
		out.Invalid += r.Invalid
		out.Judged += r.Judged
		out.ValuesExact += r.ValuesExact
		out.ValuesRight += r.ValuesRight
		out.ValuesMixed += r.ValuesMixed
		out.ValuesMismatch += r.ValuesMismatch
		judgedSum += r.ALCCont * float64(r.Judged)
	}
	if out.N == 0 {
		return out
	}
	pool := func(get func(reward.Report) float64, count bool) float64 {
		var s float64
		for _, r := range reps {
			x := get(r) * float64(r.N)
			if count {
				x = math.Round(x) // a rate is count/n
			}
			s += x
		}
		return s / float64(out.N)
	}
	out.TID = pool(func(r reward.Report) float64 { return r.TID }, true)
	out.TSA = pool(func(r reward.Report) float64 { return r.TSA }, true)
	out.ACA = pool(func(r reward.Report) float64 { return r.ACA }, true)
	out.ALC = pool(func(r reward.Report) float64 { return r.ALC }, true)
	out.FCM = pool(func(r reward.Report) float64 { return r.FCM }, true)
	out.ExactMatch = pool(func(r reward.Report) float64 { return r.ExactMatch }, true)
	out.NameAcc = pool(func(r reward.Report) float64 { return r.NameAcc }, false)
	out.ArgScore = pool(func(r reward.Report) float64 { return r.ArgScore }, false)
	if out.Judged > 0 {
		out.ALCCont = judgedSum / float64(out.Judged)
	}
	return out
}

func pct(x float64) string { return fmt.Sprintf("%6.2f", 100*x) }

// Table2 writes paper 000's Table 2 for the turns of langs (all languages
// when empty): one row per stage, TID TSA ACA ALC FCM (%) per split.
func (r *Results) Table2(w io.Writer, langs ...string) error {
	which := "all test languages (" + strings.Join(r.Langs, ", ") + ")"
	if len(langs) > 0 {
		which = strings.Join(langs, ", ")
	}
	fmt.Fprintf(w, "Table 2 (paper 000): hierarchical metrics (%%) per stage, %s\n", which)
	return r.splitTable(w, func(sp string) (string, string) {
		n := 0
		if rep, err := r.Get(r.Stages[0], sp, langs...); err == nil {
			n = rep.N
		}
		return fmt.Sprintf(" %-34s", fmt.Sprintf("%s (n=%d)", title(sp), n)),
			fmt.Sprintf(" %6s %6s %6s %6s %6s", "TID", "TSA", "ACA", "ALC", "FCM")
	}, func(st, sp string) (string, error) {
		rep, err := r.Get(st, sp, langs...)
		if err != nil {
			return "", err
		}
		return " " + strings.Join([]string{pct(rep.TID), pct(rep.TSA), pct(rep.ACA), pct(rep.ALC), pct(rep.FCM)}, " "), nil
	})
}

// splitTable writes a table with one row per stage and one column group per
// split, the groups separated by " |": head(split) gives the group's two
// header lines' cells and cells(stage, split) its row cells, each cell with
// its leading space.
func (r *Results) splitTable(w io.Writer, head func(sp string) (string, string), cells func(st, sp string) (string, error)) error {
	head1, head2 := fmt.Sprintf("%-8s", ""), fmt.Sprintf("%-8s", "Method")
	for i, sp := range r.Splits {
		if i > 0 {
			head1 += " |"
			head2 += " |"
		}
		h1, h2 := head(sp)
		head1 += h1
		head2 += h2
	}
	fmt.Fprintln(w, strings.TrimRight(head1, " "))
	fmt.Fprintln(w, head2)
	for _, st := range r.Stages {
		row := fmt.Sprintf("%-8s", StageTitle(st))
		for i, sp := range r.Splits {
			c, err := cells(st, sp)
			if err != nil {
				return err
			}
			if i > 0 {
				row += " |"
			}
			row += c
		}
		fmt.Fprintln(w, row)
	}
	return nil
}

func title(split string) string {
	if t, ok := SplitTitle[split]; ok {
		return t
	}
	return split
}

// Table8 writes paper 000's Table 8 for one split: ALC (%) per language per
// stage; the languages other than trained are the unseen ones, averaged in
// AVG (the mean of the per-language rates, as the paper's column).
func (r *Results) Table8(w io.Writer, split string, trained []string) error {
	var unseen []string
	for _, l := range r.Langs {
		if !contains(trained, l) {
			unseen = append(unseen, l)
		}
	}
	fmt.Fprintf(w, "Table 8 (paper 000): cross-lingual ALC (%%), %s; trained on %s only\n", title(split), strings.Join(trained, ", "))
	head := fmt.Sprintf("%-8s", "Method")
	for _, l := range r.Langs {
		if contains(trained, l) {
			head += fmt.Sprintf(" %10s", strings.ToUpper(l)+"(train)")
		}
	}
	head += " |"
	for _, l := range unseen {
		head += fmt.Sprintf(" %6s", strings.ToUpper(l))
	}
	head += fmt.Sprintf(" %6s", "AVG")
	fmt.Fprintln(w, head)
	for _, st := range r.Stages {
		row := fmt.Sprintf("%-8s", StageTitle(st))
		for _, l := range r.Langs {
			if contains(trained, l) {
				rep, err := r.Get(st, split, l)
				if err != nil {
					return err
				}
				row += fmt.Sprintf(" %10s", pct(rep.ALC))
			}
		}
		row += " |"
		var sum float64
		for _, l := range unseen {
			rep, err := r.Get(st, split, l)
			if err != nil {
				return err
			}
			sum += rep.ALC
			row += " " + pct(rep.ALC)
		}
		if len(unseen) > 0 {
			row += " " + pct(sum/float64(len(unseen)))
		}
		fmt.Fprintln(w, row)
	}
	return nil
}

// Entry is one report of a Summary; Lang is a language, "all" (every test
// language pooled) or "trained" (the training languages pooled).
type Entry struct {
	Stage  string        `json:"stage"`
	Split  string        `json:"split"`
	Lang   string        `json:"lang"`
	Report reward.Report `json:"report"`
}

// Summary is what `train report --out` writes.
type Summary struct {
	Stages  []string `json:"stages"`
	Splits  []string `json:"splits"`
	Langs   []string `json:"langs"`
	Trained []string `json:"trained"`
	Entries []Entry  `json:"entries"`
}

// JSON returns every file's report and the pooled ones.
func (r *Results) JSON(trained []string) Summary {
	s := Summary{Stages: r.Stages, Splits: r.Splits, Langs: r.Langs, Trained: trained}
	for _, st := range r.Stages {
		for _, sp := range r.Splits {
			for _, l := range r.Langs {
				if rep, ok := r.Reports[Key{st, sp, l}]; ok {
					s.Entries = append(s.Entries, Entry{st, sp, l, rep})
				}
			}
			if rep, err := r.Get(st, sp); err == nil {
				s.Entries = append(s.Entries, Entry{st, sp, "all", rep})
			}
			if rep, err := r.Get(st, sp, trained...); err == nil && len(trained) > 0 {
				s.Entries = append(s.Entries, Entry{st, sp, "trained", rep})
			}
		}
	}
	return s
}

// TableALM writes the share of judged textual argument values that the
// language judge puts in the wrong language (paper 000 §2.2's Argument
// Language Mismatch; lower is better), per stage, split and language. ALC
// counts a turn only when ALC_cont ≥ 1.8 on the RM-2 scale, which a
// right-language value that differs from the gold (1.5) fails; this table
// separates those from values in the wrong language. "n/a": nothing judged.
func (r *Results) TableALM(w io.Writer) error {
	fmt.Fprintln(w, "ALM (paper 000 §2.2): textual argument values in the wrong language (%), lower is better")
	width := 7 * len(r.Langs)
	return r.splitTable(w, func(sp string) (string, string) {
		h2 := ""
		for _, l := range r.Langs {
			h2 += fmt.Sprintf(" %6s", strings.ToUpper(l))
		}
		return fmt.Sprintf(" %-*s", width-1, title(sp)), h2
	}, func(st, sp string) (string, error) {
		c := ""
		for _, l := range r.Langs {
			rep, err := r.Get(st, sp, l)
			if err != nil {
				return "", err
			}
			if rep.Values() == 0 {
				c += fmt.Sprintf(" %6s", "n/a")
			} else {
				c += " " + pct(rep.MismatchRate())
			}
		}
		return c, nil
	})
}
