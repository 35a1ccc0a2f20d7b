// Package judge scores the language of a generated argument value against
// its gold value and the user's language (paper 000 §4.2, Appendix J;
// docs/contracts.md §3 "Language judge").
//
// A judge returns one of four verdicts; the rewards map it onto the RM-2
// language scale (exact and right language 2.0, mixed 1.5, mismatch 1.0),
// which judges language only, never exactness, or the RM-3 scale (2.5,
// 2.0, 1.5, 1.0).
// Judges register by name: "builtin" (a language identifier, no network)
// and "http" (an OpenAI-compatible chat endpoint with the paper's rubric).
package judge

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Verdict is a judge's decision on one argument value.
type Verdict int

const (
	// Mismatch: the value is in another language (RM-2 1.0, RM-3 1.0).
	Mismatch Verdict = 1
	// Mixed: the value holds words of the expected language and of another
	// (RM-2 1.5, RM-3 1.5: argrl's choice, paper 000's RM-3 has no such level).
	Mixed Verdict = 2
	// Right: the value is in the expected language but is not the gold
	// value (RM-2 2.0, RM-3 2.0).
	Right Verdict = 3
	// Exact: exact or normalized match (RM-2 2.0, RM-3 2.5).
	Exact Verdict = 4
)

// RM2 is the verdict on the RM-2 language scale: 2.0 in the expected
// language (exact or not), 1.5 mixed, 1.0 mismatch.
func (v Verdict) RM2() float64 {
	switch v {
	case Exact, Right:
		return 2.0
	case Mixed:
		return 1.5
	}
	return 1.0
}

// RM3 is the verdict on RM-3's scale: 2.5 exact, 2.0 right language, 1.5
// mixed, 1.0 mismatch.
func (v Verdict) RM3() float64 {
	switch v {
	case Exact:
		return 2.5
	case Right:
		return 2.0
	case Mixed:
		return 1.5
	}
	return 1.0
}

func (v Verdict) String() string {
	switch v {
	case Exact:
		return "exact"
	case Right:
		return "right"
	case Mixed:
		return "mixed"
	case Mismatch:
		return "mismatch"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// MarshalText writes the verdict's name, so breakdowns read well in JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// FromScore maps a judge's score back to a verdict: on the RM-3 scale
// (2.5 exact, 2.0 right, 1.5 mixed, 1.0 mismatch) or, when rm2 is true, on
// the RM-2 scale, whose 2.0 is "right language" (an exact value never
// reaches a judge: it is matched first).
func FromScore(score float64, rm2 bool) (Verdict, error) {
	type lv struct {
		s float64
		v Verdict
	}
	levels := []lv{{2.5, Exact}, {2.0, Right}, {1.5, Mixed}, {1.0, Mismatch}}
	if rm2 {
		levels = levels[1:]
	}
	for _, l := range levels {
		if score > l.s-1e-6 && score < l.s+1e-6 {
			return l.v, nil
		}
	}
	var ss []string
	for _, l := range levels {
		ss = append(ss, strconv.FormatFloat(l.s, 'f', 1, 64))
	}
	return 0, fmt.Errorf("judge: score %v is not on the scale %s", score, strings.Join(ss, "/"))
}

// Query is one argument value to judge.
type Query struct {
	Lang      string   // ISO 639-1 code of the user's language ℓ
	Utterance string   // the user's last message (context for LLM judges)
	Arg       string   // argument name (context for LLM judges)
	Gold      string   // the gold value v*
	Accept    []string // other acceptable values: matching one is exact
	Value     string   // the generated value v
}

// Judge scores one generated value.
type Judge interface {
	Judge(ctx context.Context, q Query) (Verdict, error)
}

// Config selects and configures a judge. Zero values take the defaults
// written beside each field.
type Config struct {
	// Name is "builtin" (default) or "http".
	Name string `yaml:"name"`
	// HTTP configures the http judge.
	HTTP HTTPConfig `yaml:"http"`
}

var registry = map[string]func(Config) (Judge, error){
	"builtin": func(Config) (Judge, error) { return NewBuiltin() },
	"http":    func(c Config) (Judge, error) { return NewHTTP(c.HTTP) },
}

// Names lists the registered judges.
func Names() []string {
	var ns []string
	for n := range registry {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// New builds the judge named by c.Name ("" means builtin).
func New(c Config) (Judge, error) {
	name := c.Name
	if name == "" {
		name = "builtin"
	}
	mk, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("judge: unknown judge %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	return mk(c)
}
