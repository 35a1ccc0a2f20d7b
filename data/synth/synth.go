// Package synth generates argrl's embedded multilingual tool-calling
// benchmark (issue 8): a seeded, deterministic miniature of paper 000's
// translated BFCL, in the common schema (docs/contracts.md §1).
//
//   - 58 APIs in 12 domains (the embedded apis/*.json, one file a domain),
//     each with 1–4 arguments of four kinds: categorical (enum), named
//     entity, free-form user text, number or date.
//   - Utterances in en, es, fr, it, nl from templates with slot fillers; a
//     lexicon of user-facing values translated into all five (lexicon/*.tsv).
//   - Gold values follow paper 000's translation protocol (App. G): free-form
//     values in the user's language; enums, identifiers, numbers and dates
//     unchanged; named entities as the API description says ("in English" or
//     "as written by the user").
//   - Single calls, parallel calls (two) and irrelevance (calls = []).
//   - Splits (paper 000 §3.3): training and validation in Spanish only over
//     the "seen" APIs; a learnability test (high API overlap) and a
//     generalization test (low overlap: held-out APIs plus a small share of
//     one seen API), both realized in es, it, nl and fr from the same
//     instances; and a base corpus in all five languages whose user-language
//     values are mostly English, for pre-training a base model that shows
//     Argument Language Mismatch.
//
// Where this departs from the paper: the paper translates BFCL with an LLM
// and selects ALM-relevant turns; here every value comes from a hand-written
// lexicon, so every gold value's language is known exactly.
package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
)

// TrainLangs and TestLangs are paper 000's protocol: train on Spanish,
// evaluate on Spanish and three unseen languages.
var (
	TrainLangs = []string{"es"}
	TestLangs  = []string{"es", "it", "nl", "fr"}
)

// Config sizes and shapes the benchmark. Zero values are not defaults: start
// from DefaultConfig.
type Config struct {
	Seed uint64
	// Records in train.jsonl, val.jsonl and base.jsonl; Test is the number
	// of instances per test split, each realized in every TestLangs language.
	Train, Val, Test, Base int

	HeldOut        float64 // share of each domain's APIs held out of training (generalization split)
	GenOverlap     float64 // share of generalization-test calls on a seen API (paper: 6%)
	Parallel       float64 // share of two-call cases
	Irrelevant     float64 // share of no-call cases
	MaxDistractors int     // distractor tools per record: 1..MaxDistractors
	BaseEnglish    float64 // base corpus: share of non-English records with English user-language values
	// Reasoning gives the training records R2IF's smv documents too, and
	// every train, validation and test record a gold reasoning (reasoning.go).
	Reasoning bool
}

// DefaultConfig is sized for the CPU demo.
func DefaultConfig() Config {
	return Config{Seed: 1, Train: 1500, Val: 200, Test: 150, Base: 10000,
		HeldOut: 0.25, GenOverlap: 0.06, Parallel: 0.2, Irrelevant: 0.1, MaxDistractors: 1, BaseEnglish: 0.85}
}

func (c Config) check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"heldout", c.HeldOut}, {"gen-overlap", c.GenOverlap}, {"parallel", c.Parallel},
		{"irrelevant", c.Irrelevant}, {"base-english", c.BaseEnglish}} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("synth: %s must be in [0, 1], got %v", f.name, f.v)
		}
	}
	if c.Parallel+c.Irrelevant > 1 {
		return fmt.Errorf("synth: parallel + irrelevant = %v exceeds 1", c.Parallel+c.Irrelevant)
	}
	if c.Train < 0 || c.Val < 0 || c.Test < 0 || c.Base < 0 {
		return fmt.Errorf("synth: sizes must be non-negative")
	}
	if c.MaxDistractors < 1 || c.MaxDistractors > 3 {
		return fmt.Errorf("synth: max-distractors must be 1..3, got %d", c.MaxDistractors)
	}
	if c.HeldOut <= 0 || c.HeldOut >= 1 {
		return fmt.Errorf("synth: heldout must be in (0, 1), got %v", c.HeldOut)
	}
	return nil
}

// Output is a generated benchmark.
type Output struct {
	Train, Val, TestLearn, TestGen, Base []data.Record
	Report                               Report
}

// File is one output file and its records.
type File struct {
	Name string
	Recs []data.Record
}

// Files lists the output files in writing order.
func (o *Output) Files() []File {
	return []File{{"train.jsonl", o.Train}, {"val.jsonl", o.Val}, {"test_learn.jsonl", o.TestLearn}, {"test_gen.jsonl", o.TestGen}, {"base.jsonl", o.Base}}
}

// Stream ids keep the splits independent: changing one size leaves the
// other files unchanged.
const (
	streamPartition = iota + 1
	streamLearn
	streamGen
	streamVal
	streamTrain
	streamBase
)

type generator struct {
	cfg      Config
	all      []*API
	reserved map[string]bool // lang|utterance of test and validation records
	argStyle string          // styled corpora: "most" or "fewest" arguments a call ("" draws any template)
}

// call draws a call on api: any template, or the style's (styledCall).
func (g *generator) call(rng *rand.Rand, api *API, langs []string) callInst {
	if g.argStyle != "" {
		return styledCall(rng, api, langs, g.argStyle)
	}
	return sampleCall(rng, api, langs)
}

// Generate builds the benchmark for cfg. The same cfg gives identical output.
func Generate(cfg Config) (*Output, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if builtinErr != nil {
		return nil, builtinErr
	}
	g := &generator{cfg: cfg, all: builtin.apis, reserved: map[string]bool{}}
	seen, held, shared := partition(g.all, cfg)
	out := &Output{}
	var err error

	// Learnability: seen APIs only, distractors seen.
	if out.TestLearn, err = g.split("learn", rand.New(rand.NewPCG(cfg.Seed, streamLearn)), cfg.Test,
		seen, seen, nil, TestLangs, "test", true); err != nil {
		return nil, err
	}
	// Generalization: held-out APIs, a GenOverlap share on the shared seen API.
	if out.TestGen, err = g.split("gen", rand.New(rand.NewPCG(cfg.Seed, streamGen)), cfg.Test,
		held, g.all, shared, TestLangs, "test", true); err != nil {
		return nil, err
	}
	if out.Val, err = g.split("val", rand.New(rand.NewPCG(cfg.Seed, streamVal)), cfg.Val,
		seen, seen, nil, TrainLangs, "validation", true); err != nil {
		return nil, err
	}
	if out.Train, err = g.split("train", rand.New(rand.NewPCG(cfg.Seed, streamTrain)), cfg.Train,
		seen, seen, nil, TrainLangs, "train", cfg.Reasoning); err != nil {
		return nil, err
	}
	if cfg.Reasoning {
		for _, recs := range [][]data.Record{out.TestLearn, out.TestGen, out.Val, out.Train} {
			addReasoning(recs)
		}
	}
	if out.Base, err = g.split("base", rand.New(rand.NewPCG(cfg.Seed, streamBase)), cfg.Base,
		g.all, g.all, nil, Langs, "train", false); err != nil {
		return nil, err
	}
	out.Report = buildReport(cfg, out, seen, held, shared)
	return out, nil
}

// partition holds out round(HeldOut·n) APIs of each domain (at least one
// when the domain has two or more), and picks the seen API whose calls give
// the generalization split its small overlap.
func partition(apis []*API, cfg Config) (seen, held []*API, shared *API) {
	rng := rand.New(rand.NewPCG(cfg.Seed, streamPartition))
	var domains []string
	byDomain := map[string][]*API{}
	for _, a := range apis {
		if _, ok := byDomain[a.Domain]; !ok {
			domains = append(domains, a.Domain)
		}
		byDomain[a.Domain] = append(byDomain[a.Domain], a)
	}
	isHeld := map[*API]bool{}
	for _, d := range domains {
		as := append([]*API(nil), byDomain[d]...)
		rng.Shuffle(len(as), func(i, j int) { as[i], as[j] = as[j], as[i] })
		h := int(math.Round(cfg.HeldOut * float64(len(as))))
		if h == 0 && len(as) >= 2 {
			h = 1
		}
		for _, a := range as[:min(h, len(as)-1)] {
			isHeld[a] = true
		}
	}
	for _, a := range apis {
		if isHeld[a] {
			held = append(held, a)
		} else {
			seen = append(seen, a)
		}
	}
	if cfg.GenOverlap > 0 {
		shared = seen[rng.IntN(len(seen))]
	}
	return seen, held, shared
}

type plan struct {
	kind   caseKind
	shared bool   // generalization: a single call on the shared seen API
	lang   string // base corpus: the record's language
}

// plans lays out exact case counts (and, for the base corpus, languages),
// then shuffles them.
func (g *generator) plans(rng *rand.Rand, n int, shared *API, langs []string, perLang bool) []plan {
	nIrr := int(math.Round(g.cfg.Irrelevant * float64(n)))
	nPar := int(math.Round(g.cfg.Parallel * float64(n)))
	if nIrr+nPar > n {
		nPar = n - nIrr
	}
	nShared := 0
	if shared != nil {
		nShared = min(int(math.Round(g.cfg.GenOverlap*float64(n-nIrr))), n-nIrr-nPar)
	}
	ps := make([]plan, n)
	for i := range ps {
		switch {
		case i < nIrr:
			ps[i].kind = caseIrrelevant
		case i < nIrr+nPar:
			ps[i].kind = caseParallel
		default:
			ps[i].shared = i < nIrr+nPar+nShared
		}
		if perLang {
			ps[i].lang = langs[i%len(langs)]
		}
	}
	rng.Shuffle(n, func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	return ps
}

// split generates one output file. Test splits (multi = len(langs) > 1 and
// split "test") realize each instance in every language; the base corpus
// draws one language per record.
func (g *generator) split(name string, rng *rand.Rand, n int, pool, distract []*API, shared *API,
	langs []string, split string, smv bool) ([]data.Record, error) {
	parallelLangs := split == "test"
	ps := g.plans(rng, n, shared, langs, !parallelLangs)
	own := map[string]bool{}
	var recs []data.Record
	for i, p := range ps {
		rl := langs
		if !parallelLangs {
			rl = []string{p.lang}
			if p.lang == "" {
				rl = langs[:1]
			}
		}
		var inst instance
		var keys []string
		ok := false
		for attempt := 0; attempt < 200 && !ok; attempt++ {
			inst = g.sample(rng, p, pool, distract, shared, rl)
			keys = keys[:0]
			ok = true
			for _, l := range rl {
				k := l + "|" + utterance(&inst, langIndex(l))
				if own[k] || g.reserved[k] {
					ok = false
				}
				keys = append(keys, k)
			}
		}
		if !ok {
			return nil, fmt.Errorf("synth: %s: could not draw a new record %d after 200 tries (sizes too large for the templates?)", name, i)
		}
		english := name == "base" && rl[0] != "en" && rng.Float64() < g.cfg.BaseEnglish
		for j, l := range rl {
			own[keys[j]] = true
			if split != "train" {
				g.reserved[keys[j]] = true
			}
			rec := realize(&inst, l, english, smv)
			rec.Split = split
			rec.ID = fmt.Sprintf("%s-%05d", name, i)
			if parallelLangs {
				rec.ID += "-" + l
			}
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

// sample draws one instance for plan p.
func (g *generator) sample(rng *rand.Rand, p plan, pool, distract []*API, shared *API, langs []string) instance {
	inst := instance{kind: p.kind, prefix: rng.IntN(len(builtin.glue["en"].Prefixes))}
	pick := func(from []*API) *API { return from[rng.IntN(len(from))] }
	first := pick(pool)
	if p.shared {
		first = shared
	}
	inst.calls = []callInst{g.call(rng, first, langs)}
	goldTools := []*API{first}
	if p.kind == caseParallel {
		second := first
		if rng.IntN(2) == 0 {
			var other []*API
			for _, a := range pool {
				if a.Domain != first.Domain {
					other = append(other, a)
				}
			}
			if len(other) > 0 {
				second = pick(other)
				goldTools = append(goldTools, second)
			}
		}
		c := g.call(rng, second, langs)
		for t := 0; t < 10 && second == first && fill(c, 0) == fill(inst.calls[0], 0); t++ {
			c = g.call(rng, second, langs)
		}
		inst.calls = append(inst.calls, c)
	}

	// Distractors: never a gold tool; for irrelevance never from the
	// requested API's domain (so no offered tool can serve it); otherwise
	// half the time from the same domain, the harder choice.
	// Two gold tools already make a choice; they take one distractor fewer
	// (none by default), which keeps prompts within the demo's context.
	nd := 1 + rng.IntN(g.cfg.MaxDistractors)
	if len(goldTools) > 1 {
		nd = rng.IntN(g.cfg.MaxDistractors)
	}
	sameDomain := p.kind != caseIrrelevant && rng.IntN(2) == 0
	var near, far []*API
	for _, a := range distract {
		if contains(apiNames(goldTools), a.Name) {
			continue
		}
		if a.Domain == first.Domain {
			if p.kind != caseIrrelevant {
				near = append(near, a)
			}
		} else {
			far = append(far, a)
		}
	}
	var tools []*API
	if p.kind != caseIrrelevant {
		tools = append(tools, goldTools...)
	}
	for want := len(tools) + nd; len(tools) < want; {
		src := &far
		if (sameDomain && len(near) > 0) || len(far) == 0 {
			src = &near
		}
		if len(*src) == 0 {
			break
		}
		k := rng.IntN(len(*src))
		tools = append(tools, (*src)[k])
		*src = append((*src)[:k], (*src)[k+1:]...)
	}
	rng.Shuffle(len(tools), func(i, j int) { tools[i], tools[j] = tools[j], tools[i] })
	inst.tools = tools
	return inst
}

func apiNames(as []*API) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	return out
}

// WriteDir writes the five JSONL files and overlap.json into dir.
func (o *Output) WriteDir(dir string) error {
	return writeDir(dir, o.Files(), "overlap.json", o.Report)
}

// writeDir writes files into dir, then report as indented JSON.
func writeDir(dir string, files []File, reportName string, report any) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	for _, f := range files {
		if err := data.WriteFile(filepath.Join(dir, f.Name), f.Recs); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	b, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return fmt.Errorf("synth: %s: %w", reportName, err)
	}
	return writeAtomic(filepath.Join(dir, reportName), append(b, '\n'))
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o666); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// Report is written to overlap.json and printed by `train data synth`.
type Report struct {
	Seed          uint64                    `json:"seed"`
	APIs          int                       `json:"apis"`
	Domains       int                       `json:"domains"`
	LexiconValues int                       `json:"lexicon_values"`
	ArgKinds      map[string]int            `json:"arg_kinds"`
	Seen          []string                  `json:"seen_apis"`
	HeldOut       []string                  `json:"heldout_apis"`
	Shared        string                    `json:"gen_shared_api,omitempty"`
	Records       map[string]int            `json:"records"`
	Cases         map[string]map[string]int `json:"cases"`
	Langs         map[string]map[string]int `json:"langs"`
	Overlap       map[string]OverlapReport  `json:"overlap"` // learn, gen, val: against train
}

// OverlapReport is the API overlap of an evaluation file against train.jsonl:
// record-level as data.APIOverlap (paper 000 App. A.6), and over distinct
// gold API names.
type OverlapReport struct {
	Records     int     `json:"records"`
	Overlapping int     `json:"overlapping"`
	Fraction    float64 `json:"fraction"`
	APIs        int     `json:"apis"`
	SeenAPIs    int     `json:"seen_apis"`
	APIFraction float64 `json:"api_fraction"`
}

func overlapOf(train, eval []data.Record) OverlapReport {
	o := data.APIOverlap(train, eval)
	r := OverlapReport{Records: o.Records, Overlapping: o.Overlapping, Fraction: round4(o.Fraction())}
	inTrain, inEval := map[string]bool{}, map[string]bool{}
	for _, rec := range train {
		for _, c := range rec.Calls {
			inTrain[c.Name] = true
		}
	}
	for _, rec := range eval {
		for _, c := range rec.Calls {
			inEval[c.Name] = true
		}
	}
	for n := range inEval {
		r.APIs++
		if inTrain[n] {
			r.SeenAPIs++
		}
	}
	if r.APIs > 0 {
		r.APIFraction = round4(float64(r.SeenAPIs) / float64(r.APIs))
	}
	return r
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func buildReport(cfg Config, o *Output, seen, held []*API, shared *API) Report {
	r := Report{Seed: cfg.Seed, APIs: len(builtin.apis), LexiconValues: LexiconSize(), ArgKinds: map[string]int{},
		Seen: apiNames(seen), HeldOut: apiNames(held), Records: map[string]int{},
		Cases: map[string]map[string]int{}, Langs: map[string]map[string]int{},
		Overlap: map[string]OverlapReport{
			"learn": overlapOf(o.Train, o.TestLearn),
			"gen":   overlapOf(o.Train, o.TestGen),
			"val":   overlapOf(o.Train, o.Val),
		}}
	sort.Strings(r.Seen)
	sort.Strings(r.HeldOut)
	if shared != nil {
		r.Shared = shared.Name
	}
	domains := map[string]bool{}
	for _, a := range builtin.apis {
		domains[a.Domain] = true
		for _, arg := range a.Args {
			r.ArgKinds[arg.Kind.Class()]++
		}
	}
	r.Domains = len(domains)
	for _, f := range o.Files() {
		r.Records[f.Name] = len(f.Recs)
		cases, langs := map[string]int{}, map[string]int{}
		for _, rec := range f.Recs {
			switch {
			case len(rec.Calls) == 0:
				cases[caseNames[caseIrrelevant]]++
			case len(rec.Calls) > 1:
				cases[caseNames[caseParallel]]++
			default:
				cases[caseNames[caseSingle]]++
			}
			langs[rec.Lang]++
		}
		r.Cases[f.Name], r.Langs[f.Name] = cases, langs
	}
	return r
}

// String is the human-readable summary printed by `train data synth`.
func (r Report) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "seed %d: %d APIs in %d domains (%d seen, %d held out), %d lexicon values, argument kinds %v\n",
		r.Seed, r.APIs, r.Domains, len(r.Seen), len(r.HeldOut), r.LexiconValues, r.ArgKinds)
	for _, name := range []string{"train.jsonl", "val.jsonl", "test_learn.jsonl", "test_gen.jsonl", "base.jsonl"} {
		fmt.Fprintf(&b, "  %-17s %6d records  cases %v  langs %v\n", name, r.Records[name], r.Cases[name], r.Langs[name])
	}
	for _, k := range []string{"learn", "gen", "val"} {
		o := r.Overlap[k]
		fmt.Fprintf(&b, "  API overlap %-5s vs train: records %.1f%% (%d/%d), distinct APIs %.1f%% (%d/%d)\n",
			k, 100*o.Fraction, o.Overlapping, o.Records, 100*o.APIFraction, o.SeenAPIs, o.APIs)
	}
	return strings.TrimRight(b.String(), "\n")
}
