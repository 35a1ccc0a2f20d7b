package synth

// Styled datasets (issue 36, paper 001 in miniature): two synthetic
// tool-calling corpora that differ the way xLAM (APIGen) and ToolACE differ
// in paper 001's Table 1, drawn from the same API tables and lexicon:
//
//   - API domains: disjoint halves of the 12 domains. xlam takes the
//     domains whose arguments are mostly structured (cities in English,
//     enums, numbers, dates, identifiers: travel, food, finance, weather,
//     files, search); toolace the conversational ones whose arguments are
//     mostly the user's own words (messaging, calendar, reminders, media,
//     home, health).
//   - Argument style: xlam requests state every argument the API takes
//     (the template that mentions the most arguments: fully specified,
//     verified calls); toolace requests state the fewest (optional
//     arguments left to their defaults).
//   - Output shape: xlam answers are often parallel calls and never a
//     refusal (Table 1: 54% parallel, 0% no-call); toolace answers are
//     mostly a refusal or a single call (17% parallel, 56% no-call).
//
// Paper 001 renders every corpus with one prompt and one call syntax (its
// App. A.1), so both styles keep argrl's common schema and the chat
// template's format; what differs is what the answers contain. Records are
// Spanish, the language the demo's base model handles worst (paper 000's
// Argument Language Mismatch), so that training has something to learn.
// Files: train.jsonl, val.jsonl, test.jsonl and style.json.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
)

// Style is one corpus style of `train data synth --style`.
type Style struct {
	Name    string
	Domains []string // API domains (apis/NN-<domain>.json)
	// Args picks each call's template: "most" mentions the most arguments
	// (every optional one), "fewest" the fewest.
	Args       string
	Parallel   float64 // share of two-call answers
	Irrelevant float64 // share of no-call answers
}

// Styles are the corpus styles, by name.
var Styles = map[string]Style{
	"xlam": {Name: "xlam", Domains: []string{"travel", "food", "finance", "weather", "files", "search"},
		Args: "most", Parallel: 0.5, Irrelevant: 0},
	"toolace": {Name: "toolace", Domains: []string{"messaging", "calendar", "reminders", "media", "home", "health"},
		Args: "fewest", Parallel: 0.15, Irrelevant: 0.5},
}

// StyleNames lists the styles in a fixed order.
func StyleNames() []string {
	out := make([]string, 0, len(Styles))
	for n := range Styles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// StyledOutput is a generated styled corpus.
type StyledOutput struct {
	Train, Val, Test []data.Record
	Report           StyleReport
}

// Files lists the output files in writing order.
func (o *StyledOutput) Files() []File {
	return []File{{"train.jsonl", o.Train}, {"val.jsonl", o.Val}, {"test.jsonl", o.Test}}
}

// WriteDir writes the three JSONL files and style.json into dir.
func (o *StyledOutput) WriteDir(dir string) error {
	return writeDir(dir, o.Files(), "style.json", o.Report)
}

// StyleReport is written to style.json and printed by `train data synth --style`.
type StyleReport struct {
	Seed     uint64                    `json:"seed"`
	Style    string                    `json:"style"`
	Domains  []string                  `json:"domains"`
	APIs     []string                  `json:"apis"`
	Args     string                    `json:"arg_style"`
	ArgKinds map[string]int            `json:"arg_kinds"` // over the gold arguments of train.jsonl
	Records  map[string]int            `json:"records"`
	Cases    map[string]map[string]int `json:"cases"`
	// ArgsPerCall is the mean number of arguments of a gold call in train.jsonl.
	ArgsPerCall float64 `json:"args_per_call"`
}

// String is the human-readable summary.
func (r StyleReport) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "seed %d, style %s: %d APIs in domains %s; arguments: %s per call (%.2f a call), kinds %v\n",
		r.Seed, r.Style, len(r.APIs), strings.Join(r.Domains, ","), r.Args, r.ArgsPerCall, r.ArgKinds)
	for _, name := range []string{"train.jsonl", "val.jsonl", "test.jsonl"} {
		fmt.Fprintf(&b, "  %-11s %6d records  cases %v\n", name, r.Records[name], r.Cases[name])
	}
	return strings.TrimRight(b.String(), "\n")
}

// Stream ids of the styled corpora (apart from Generate's, so a style's
// files never share a random stream with the benchmark's).
const (
	streamStyleTest = iota + 101
	streamStyleVal
	streamStyleTrain
)

// GenerateStyle builds the corpus of style name for cfg (Seed, Train, Val
// and Test are used; Test counts records). The same cfg gives identical
// output.
func GenerateStyle(cfg Config, name string) (*StyledOutput, error) {
	st, ok := Styles[name]
	if !ok {
		return nil, fmt.Errorf("synth: unknown style %q (want one of %s)", name, strings.Join(StyleNames(), ", "))
	}
	if cfg.Train < 0 || cfg.Val < 0 || cfg.Test < 0 {
		return nil, fmt.Errorf("synth: sizes must be non-negative")
	}
	if builtinErr != nil {
		return nil, builtinErr
	}
	inStyle := map[string]bool{}
	for _, d := range st.Domains {
		inStyle[d] = true
	}
	var pool []*API
	for _, a := range builtin.apis {
		if inStyle[a.Domain] {
			pool = append(pool, a)
		}
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("synth: style %s: no API in domains %v", name, st.Domains)
	}
	c := cfg
	c.Parallel, c.Irrelevant, c.GenOverlap, c.MaxDistractors = st.Parallel, st.Irrelevant, 0, 1
	g := &generator{cfg: c, all: pool, reserved: map[string]bool{}, argStyle: st.Args}
	out := &StyledOutput{}
	var err error
	// Test first, then validation: training records never repeat their utterances.
	if out.Test, err = g.split("test", rand.New(rand.NewPCG(cfg.Seed, streamStyleTest)), cfg.Test,
		pool, pool, nil, TrainLangs, "test", false); err != nil {
		return nil, err
	}
	if out.Val, err = g.split("val", rand.New(rand.NewPCG(cfg.Seed, streamStyleVal)), cfg.Val,
		pool, pool, nil, TrainLangs, "validation", false); err != nil {
		return nil, err
	}
	if out.Train, err = g.split("train", rand.New(rand.NewPCG(cfg.Seed, streamStyleTrain)), cfg.Train,
		pool, pool, nil, TrainLangs, "train", false); err != nil {
		return nil, err
	}
	for _, rs := range [][]data.Record{out.Test, out.Val, out.Train} {
		for i := range rs {
			rs[i].ID = name + "-" + rs[i].ID
		}
	}
	out.Report = styleReport(cfg, st, pool, out)
	return out, nil
}

// styledCall draws a call on api in the style's argument style: among the
// templates mentioning the most (or fewest) arguments, one at random.
func styledCall(rng *rand.Rand, api *API, langs []string, argStyle string) callInst {
	c := sampleCall(rng, api, langs)
	var best []int
	for i, t := range api.T["en"] {
		n := len(placeholders(t))
		if len(best) > 0 {
			m := len(placeholders(api.T["en"][best[0]]))
			if (argStyle == "most" && n < m) || (argStyle == "fewest" && n > m) {
				continue
			}
			if n != m {
				best = best[:0]
			}
		}
		best = append(best, i)
	}
	if slices.Contains(best, c.tmpl) {
		return c
	}
	c.tmpl = best[rng.IntN(len(best))]
	c.vals = map[string]value{}
	used := map[*Entry]bool{}
	for _, name := range placeholders(api.T["en"][c.tmpl]) {
		a, _ := api.arg(name)
		c.vals[name] = sampleValue(rng, a, used, langs)
	}
	return c
}

func styleReport(cfg Config, st Style, pool []*API, o *StyledOutput) StyleReport {
	r := StyleReport{Seed: cfg.Seed, Style: st.Name, Domains: st.Domains, APIs: apiNames(pool), Args: st.Args,
		ArgKinds: map[string]int{}, Records: map[string]int{}, Cases: map[string]map[string]int{}}
	sort.Strings(r.APIs)
	byName := map[string]*API{}
	for _, a := range pool {
		byName[a.Name] = a
	}
	calls, args := 0, 0
	for _, rec := range o.Train {
		for _, c := range rec.Calls {
			calls++
			for k := range c.Arguments {
				args++
				if a, ok := byName[c.Name].arg(k); ok {
					r.ArgKinds[a.Kind.Class()]++
				}
			}
		}
	}
	if calls > 0 {
		r.ArgsPerCall = round4(float64(args) / float64(calls))
	}
	for _, f := range o.Files() {
		r.Records[f.Name] = len(f.Recs)
		cases := map[string]int{}
		for _, rec := range f.Recs {
			switch {
			case len(rec.Calls) == 0:
				cases[caseNames[caseIrrelevant]]++
			case len(rec.Calls) > 1:
				cases[caseNames[caseParallel]]++
			default:
				cases[caseNames[caseSingle]]++
			}
		}
		r.Cases[f.Name] = cases
	}
	return r
}
