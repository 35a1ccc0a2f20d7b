package reward

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/reward/judge"
	"github.com/argrl/argrl/reward/sim"
)

// Reward scores one response to one record.
type Reward interface {
	Name() string
	Score(ctx context.Context, rec *data.Record, text string) (*Result, error)
}

// Result is a reward's scalar and its breakdown (logged per rollout).
type Result struct {
	Reward float64 `json:"reward"`
	// Gate names the branch that set the reward, e.g. "tid", "tsa", "aca",
	// "alc_cont", "fcm" (rm1/rm2/rm3), "format", "no_call", "args"
	// (decomposed), "exact" or "wrong" (binary).
	Gate    string             `json:"gate"`
	Metrics Levels             `json:"metrics"`
	Parts   map[string]float64 `json:"parts"`
	// Terms split Reward into additive terms, Σ Terms = Reward up to
	// rounding, each oriented so that more is better: what adv.per_part
	// normalizes one by one within a group (docs/contracts.md §5). rm1,
	// rm2 and rm3: "gate" (the reward when the TID/TSA/ACA gates fail,
	// else 0) and "args" (the reward once they pass, set by the argument
	// values); decomposed: its weighted fmt, name, args and −extra_calls
	// and "rest" (what the no-call, invalid-format and max(0, ·) branches
	// add to that sum); r2if: the weighted binary, cer and smv; binary:
	// "exact"; bfcl: "valid".
	Terms map[string]float64 `json:"terms,omitempty"`
	// Args are the per-argument comparisons, with language verdicts and
	// RM-3 scores for textual ones.
	Args []ArgScore `json:"args,omitempty"`
	// Spans are the byte spans [start, end) of every argument value in
	// the response, in order (β token weighting, docs/contracts.md §5).
	Spans   [][2]int `json:"spans,omitempty"`
	Outcome *Outcome `json:"-"`
}

// ArgScore is one argument's comparison plus its score under the reward
// (RM-3: 2.5/2.0/1.5/1.0; RM-2: 2.0/2.0/1.5/1.0 for exact/right
// language/mixed/mismatch; decomposed/binary: 1 for a match).
type ArgScore struct {
	ArgResult
	Score float64 `json:"score"`
}

// Config configures the rewards. Start from DefaultConfig(); a YAML file
// overrides keys. Get also fills an all-zero Decomposed or R2IF section,
// and a zero Format, Judge or ALCThreshold, with the defaults.
type Config struct {
	// Format is the output format of the responses [tool_call].
	Format string `yaml:"format"`
	// RejectString is the no-call answer of tool_call and reason_tool
	// ["" = format.DefaultRejectString].
	RejectString string `yaml:"reject_string"`
	// Judge is the language judge: builtin or http [builtin].
	Judge string `yaml:"judge"`
	// JudgeHTTP configures judge: http (url, model, timeout_s, retries,
	// backoff_s, cache_dir, scale).
	JudgeHTTP judge.HTTPConfig `yaml:"judge_http"`
	// ALCThreshold: ALC passes at ALC_cont ≥ this, RM-2 scale [1.8].
	ALCThreshold float64 `yaml:"alc_threshold"`
	// ALCRequiredOnly judges only schema-required textual arguments
	// (paper 000 eq. 2) instead of all of them (docs/contracts.md §3) [false].
	ALCRequiredOnly bool `yaml:"alc_required_only"`
	// NoTextScore is ALC_cont, on the reward's own scale, of a turn
	// without textual arguments that passes ACA; 0 means the top of the
	// scale (RM-2 2.0, RM-3 2.5) [0].
	NoTextScore float64 `yaml:"no_text_score"`
	// Decomposed holds paper 001's weights and penalties.
	Decomposed DecomposedConfig `yaml:"decomposed"`
	// R2IF holds the composite reward's weights, K and similarity.
	R2IF R2IFConfig `yaml:"r2if"`

	// JudgeImpl, when set, replaces the judge named by Judge.
	JudgeImpl judge.Judge `yaml:"-"`
	// Student runs R2IF's CER continuations (the rollout engine).
	Student Student `yaml:"-"`
	// Similarity, when set, replaces the one named by R2IF.Sim.
	Similarity sim.Similarity `yaml:"-"`
	// SimCorpus fits the lexical similarity's IDF (e.g. every SMV
	// document and reject reason of the training set).
	SimCorpus []string `yaml:"-"`
}

// DecomposedConfig is paper 001 A.4's reward:
// max(0, fmt_w·fmt + name_w·name_frac + args_w·arg_frac − extra_call·max(0, |pred|−|gold|)).
type DecomposedConfig struct {
	FormatWeight float64 `yaml:"format_weight"` // [0.2]
	NameWeight   float64 `yaml:"name_weight"`   // [0.3]
	ArgsWeight   float64 `yaml:"args_weight"`   // [0.5]
	// ExtraCallPenalty per predicted call beyond the gold count [0.1].
	ExtraCallPenalty float64 `yaml:"extra_call_penalty"`
}

// R2IFConfig is the composite reward of papers 002/003:
// w_binary·(format ∧ correct) + w_cer·R_cer + w_smv·R_smv.
type R2IFConfig struct {
	WBinary float64 `yaml:"w_binary"` // [3]
	WCER    float64 `yaml:"w_cer"`    // [1]; 0 needs no student
	WSMV    float64 `yaml:"w_smv"`    // [1]
	// K is the number of student continuations per CER estimate [4].
	K int `yaml:"k"`
	// Sim is SMV's similarity: lexical or http [lexical].
	Sim sim.Config `yaml:"sim"`
}

// DefaultConfig returns every key's default.
func DefaultConfig() Config {
	return Config{
		Format: "tool_call", Judge: "builtin", ALCThreshold: 1.8,
		Decomposed: DecomposedConfig{FormatWeight: 0.2, NameWeight: 0.3, ArgsWeight: 0.5, ExtraCallPenalty: 0.1},
		R2IF:       R2IFConfig{WBinary: 3, WCER: 1, WSMV: 1, K: 4, Sim: sim.Config{Name: "lexical"}},
	}
}

// NewScorer builds the scorer the config describes (format and judge).
func NewScorer(c Config) (*Scorer, error) {
	name := c.Format
	if name == "" {
		name = "tool_call"
	}
	f, err := format.Get(name, format.Options{RejectString: c.RejectString})
	if err != nil {
		return nil, fmt.Errorf("reward: %w", err)
	}
	j := c.JudgeImpl
	if j == nil {
		jc := judge.Config{Name: c.Judge, HTTP: c.JudgeHTTP}
		if j, err = judge.New(jc); err != nil {
			return nil, fmt.Errorf("reward: %w", err)
		}
	}
	return &Scorer{Format: f, Judge: j, ALCThreshold: c.ALCThreshold, ALCRequiredOnly: c.ALCRequiredOnly}, nil
}

var registry = map[string]func(Config, *Scorer) (Reward, error){}

// register adds a reward constructor; called from init functions.
func register(name string, mk func(Config, *Scorer) (Reward, error)) { registry[name] = mk }

// Names lists the registered rewards, sorted.
func Names() []string {
	ns := make([]string, 0, len(registry))
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Get builds the reward registered under name.
func Get(name string, c Config) (Reward, error) {
	mk, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("reward: unknown reward %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	d := DefaultConfig()
	if c.Decomposed == (DecomposedConfig{}) {
		c.Decomposed = d.Decomposed
	}
	if r := c.R2IF; r.WBinary == 0 && r.WCER == 0 && r.WSMV == 0 && r.K == 0 {
		c.R2IF.WBinary, c.R2IF.WCER, c.R2IF.WSMV, c.R2IF.K = d.R2IF.WBinary, d.R2IF.WCER, d.R2IF.WSMV, d.R2IF.K
	}
	if c.Judge == "" {
		c.Judge = d.Judge
	}
	if c.ALCThreshold == 0 {
		c.ALCThreshold = d.ALCThreshold
	}
	s, err := NewScorer(c)
	if err != nil {
		return nil, err
	}
	return mk(c, s)
}

// result starts a Result from an outcome: metrics, spans, and the
// per-argument comparisons scored by score.
func result(o *Outcome, score func(ArgResult) float64) *Result {
	r := &Result{Metrics: o.Levels, Parts: map[string]float64{}, Outcome: o}
	for _, a := range o.Args {
		r.Args = append(r.Args, ArgScore{ArgResult: a, Score: score(a)})
	}
	for _, c := range o.Parsed.Calls {
		for _, k := range sortedKeys(c.ArgSpans) {
			sp := c.ArgSpans[k]
			r.Spans = append(r.Spans, [2]int{sp.Start, sp.End})
		}
	}
	sort.Slice(r.Spans, func(i, j int) bool { return r.Spans[i][0] < r.Spans[j][0] })
	return r
}

func matchScore(a ArgResult) float64 {
	if a.Match && !a.Extra {
		return 1
	}
	return 0
}
