package synth

// The multi-turn benchmark (`train data synth --multi-turn`): dialogues
// whose request needs 2–4 dependent calls (a chain of chains.json), each
// realized as a multi-turn record (docs/contracts.md §1, turns and env):
//
//	messages  the user's request
//	turns     one turn per call, in order, then a turn without calls (the
//	          final answer); a later call's value taken from an earlier
//	          result is the value the simulated API returns (sim.go)
//	calls     turns[0].calls, with accept as the single-turn records have
//	env       {"name": "synth", "seed": S}: the simulated world's seed
//	tools     the chain's APIs and 1..MaxDistractors others, shuffled
//
// train.jsonl and val.jsonl are Spanish (TrainLangs); test.jsonl realizes
// each instance in every TestLangs language with the same world seed. The
// same Config gives identical files.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
)

// Dialogues is a generated multi-turn benchmark.
type Dialogues struct {
	Train, Val, Test []data.Record
	Report           DialogueReport
}

// DialogueReport is written to dialogues.json and printed by `train data synth --multi-turn`.
type DialogueReport struct {
	Seed    uint64                    `json:"seed"`
	Chains  int                       `json:"chains"`
	Records map[string]int            `json:"records"`
	ByChain map[string]map[string]int `json:"by_chain"` // file → chain → records
	ByCalls map[string]map[string]int `json:"by_calls"` // file → number of calls → records
}

// Files lists the output files in writing order.
func (d *Dialogues) Files() []File {
	return []File{{"train.jsonl", d.Train}, {"val.jsonl", d.Val}, {"test.jsonl", d.Test}}
}

const (
	streamDialogueTest = 101 + iota
	streamDialogueVal
	streamDialogueTrain
)

// GenerateDialogues builds the multi-turn benchmark: cfg.Train, cfg.Val
// and cfg.Test dialogues (Test instances each in 4 languages), with
// cfg.Seed and cfg.MaxDistractors; the other fields are not used.
func GenerateDialogues(cfg Config) (*Dialogues, error) {
	if builtinErr != nil {
		return nil, builtinErr
	}
	if cfg.Train < 0 || cfg.Val < 0 || cfg.Test < 0 {
		return nil, fmt.Errorf("synth: sizes must be non-negative")
	}
	if cfg.MaxDistractors < 1 || cfg.MaxDistractors > 3 {
		return nil, fmt.Errorf("synth: max-distractors must be 1..3, got %d", cfg.MaxDistractors)
	}
	g := &dialogueGen{cfg: cfg, seen: map[string]bool{}}
	d := &Dialogues{}
	var err error
	if d.Test, err = g.split("test", rand.New(rand.NewPCG(cfg.Seed, streamDialogueTest)), cfg.Test, TestLangs, "test"); err != nil {
		return nil, err
	}
	if d.Val, err = g.split("val", rand.New(rand.NewPCG(cfg.Seed, streamDialogueVal)), cfg.Val, TrainLangs, "validation"); err != nil {
		return nil, err
	}
	if d.Train, err = g.split("train", rand.New(rand.NewPCG(cfg.Seed, streamDialogueTrain)), cfg.Train, TrainLangs, "train"); err != nil {
		return nil, err
	}
	d.Report = DialogueReport{Seed: cfg.Seed, Chains: len(builtin.chains), Records: map[string]int{},
		ByChain: map[string]map[string]int{}, ByCalls: map[string]map[string]int{}}
	for _, f := range d.Files() {
		d.Report.Records[f.Name] = len(f.Recs)
		byChain, byCalls := map[string]int{}, map[string]int{}
		for _, r := range f.Recs {
			byChain[chainOf(r.ID)]++
			byCalls[fmt.Sprint(len(r.Turns)-1)]++
		}
		d.Report.ByChain[f.Name], d.Report.ByCalls[f.Name] = byChain, byCalls
	}
	return d, nil
}

// chainOf reads the chain name from a dialogue id (mt-SPLIT-NNNNN-CHAIN[-lang]).
func chainOf(id string) string {
	parts := strings.Split(id, "-")
	if len(parts) < 4 {
		return ""
	}
	return parts[3]
}

type dialogueGen struct {
	cfg  Config
	seen map[string]bool // lang|utterance already written
}

// dialogue is one sampled instance, independent of language.
type dialogue struct {
	c     *chain
	vals  map[string]value
	tools []*API
	seed  uint64
}

func (g *dialogueGen) split(name string, rng *rand.Rand, n int, langs []string, split string) ([]data.Record, error) {
	var out []data.Record
	for i := range n {
		var d dialogue
		ok := false
		for attempt := 0; attempt < 200 && !ok; attempt++ {
			d = g.sample(rng, langs)
			ok = true
			for _, l := range langs {
				if g.seen[l+"|"+d.utterance(langIndex(l))] {
					ok = false
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("synth: %s: could not draw a new dialogue %d after 200 tries (sizes too large?)", name, i)
		}
		for _, l := range langs {
			g.seen[l+"|"+d.utterance(langIndex(l))] = true
			rec, err := d.realize(l)
			if err != nil {
				return nil, fmt.Errorf("synth: %s dialogue %d (%s, %s): %w", name, i, d.c.name, l, err)
			}
			rec.ID = fmt.Sprintf("mt-%s-%05d-%s", name, i, d.c.name)
			if len(langs) > 1 {
				rec.ID += "-" + l
			}
			rec.Split = split
			out = append(out, rec)
		}
	}
	return out, nil
}

func (g *dialogueGen) sample(rng *rand.Rand, langs []string) dialogue {
	c := builtin.chains[rng.IntN(len(builtin.chains))]
	d := dialogue{c: c, vals: map[string]value{}}
	used := map[*Entry]bool{}
	for _, s := range c.slots {
		d.vals[s] = sampleValue(rng, c.slot[s], used, langs)
	}
	d.seed = rng.Uint64() >> 11 // below 2^53: exact in any JSON reader
	in := map[string]bool{}
	for _, st := range c.steps {
		if !in[st.api.Name] {
			in[st.api.Name] = true
			d.tools = append(d.tools, st.api)
		}
	}
	var others []*API
	for _, a := range builtin.apis {
		if !in[a.Name] {
			others = append(others, a)
		}
	}
	for _, k := range distinct(rng, 1+rng.IntN(g.cfg.MaxDistractors), len(others)) {
		d.tools = append(d.tools, others[k])
	}
	rng.Shuffle(len(d.tools), func(i, j int) { d.tools[i], d.tools[j] = d.tools[j], d.tools[i] })
	return d
}

// utterance fills the chain's template in language li.
func (d *dialogue) utterance(li int) string {
	return placeholderRE.ReplaceAllStringFunc(d.c.t[Langs[li]], func(m string) string {
		s := m[1 : len(m)-1]
		return surface(d.c.slot[s], d.vals[s], li)
	})
}

// realize runs the chain in the simulated world and writes the record.
func (d *dialogue) realize(lang string) (data.Record, error) {
	li := langIndex(lang)
	rec := data.Record{Lang: lang, Messages: []data.Message{{Role: "user", Content: d.utterance(li)}},
		Env: &data.EnvSpec{Name: "synth", Seed: d.seed}}
	for _, api := range d.tools {
		rec.Tools = append(rec.Tools, data.Tool{Name: api.Name, Description: api.Desc, Parameters: api.Parameters()})
	}
	sim, err := NewSim(d.seed, lang)
	if err != nil {
		return rec, err
	}
	var results []any
	for k, st := range d.c.steps {
		call := data.Call{Name: st.api.Name, Arguments: map[string]any{}}
		for _, a := range st.args {
			if a.slot != "" {
				call.Arguments[a.name] = gold(d.c.slot[a.slot], d.vals[a.slot], li, false)
				continue
			}
			v, ok := lookup(results[a.from], a.path)
			if !ok {
				return rec, fmt.Errorf("step %d: %s.%s: step %d's result has no %s", k, st.api.Name, a.name, a.from, strings.Join(a.path, "."))
			}
			call.Arguments[a.name] = v
		}
		var res any
		if err := json.Unmarshal([]byte(sim.Call(call.Name, call.Arguments)), &res); err != nil {
			return rec, fmt.Errorf("step %d: %s: result: %w", k, call.Name, err)
		}
		if m, ok := res.(map[string]any); ok && m["error"] != nil {
			return rec, fmt.Errorf("step %d: the simulated %s refused the gold call: %v", k, call.Name, m["error"])
		}
		results = append(results, res)
		rec.Turns = append(rec.Turns, data.Turn{Calls: []data.Call{call}})
	}
	rec.Turns = append(rec.Turns, data.Turn{Calls: []data.Call{}})
	rec.Calls = rec.Turns[0].Calls
	acc := map[string][]any{}
	first := rec.Calls[0]
	for _, a := range d.c.steps[0].api.Args {
		if v, ok := first.Arguments[a.Name]; ok {
			acc[a.Name] = []any{v}
		} else {
			acc[a.Name] = []any{""}
		}
	}
	rec.Accept = []map[string][]any{acc}
	return rec, nil
}

// WriteDir writes train.jsonl, val.jsonl, test.jsonl and dialogues.json
// into dir.
func (d *Dialogues) WriteDir(dir string) error {
	return writeDir(dir, d.Files(), "dialogues.json", d.Report)
}

// String is the summary `train data synth --multi-turn` prints.
func (r DialogueReport) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "seed %d: multi-turn dialogues from %d chains of 2-4 dependent calls\n", r.Seed, r.Chains)
	for _, name := range []string{"train.jsonl", "val.jsonl", "test.jsonl"} {
		fmt.Fprintf(&b, "  %-11s %6d records  calls %s  chains %s\n", name, r.Records[name], counts(r.ByCalls[name]), counts(r.ByChain[name]))
	}
	return strings.TrimRight(b.String(), "\n")
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}
