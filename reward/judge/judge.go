// Package judge scores the language of a generated argument value against
// its gold value and the user's language (paper 000 §4.2, Appendix J;
// docs/contracts.md §3 "Language judge").
//
// A judge returns a Verdict with three levels; the rewards map it onto the
// RM-2 scale {2.0, 1.5, 1.0} or the RM-3 scale {2.5, 2.0, 1.0}.
// Judges register by name: "builtin" (a language identifier, no network)
// and "http" (an OpenAI-compatible chat endpoint with the paper's rubric).
package judge

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Verdict is a judge's decision on one argument value.
type Verdict int

const (
	// Mismatch: the value is in the wrong language (RM-2 1.0, RM-3 1.0).
	Mismatch Verdict = 1
	// Minor: right language with a minor variation (RM-2 1.5, RM-3 2.0).
	Minor Verdict = 2
	// Exact: exact or normalized match (RM-2 2.0, RM-3 2.5).
	Exact Verdict = 3
)

// RM2 is the verdict on RM-2's scale: 2.0 correct, 1.5 partial, 1.0 mismatch.
func (v Verdict) RM2() float64 {
	switch v {
	case Exact:
		return 2.0
	case Minor:
		return 1.5
	}
	return 1.0
}

// RM3 is the verdict on RM-3's scale: 2.5 exact, 2.0 minor, 1.0 mismatch.
func (v Verdict) RM3() float64 {
	switch v {
	case Exact:
		return 2.5
	case Minor:
		return 2.0
	}
	return 1.0
}

func (v Verdict) String() string {
	switch v {
	case Exact:
		return "exact"
	case Minor:
		return "minor"
	case Mismatch:
		return "mismatch"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// MarshalText writes the verdict's name, so breakdowns read well in JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// FromScore maps a score on the RM-3 scale (2.5/2.0/1.0) or, when rm2 is
// true, the RM-2 scale (2.0/1.5/1.0) back to a verdict.
func FromScore(score float64, rm2 bool) (Verdict, error) {
	type lv struct {
		s float64
		v Verdict
	}
	levels := []lv{{2.5, Exact}, {2.0, Minor}, {1.0, Mismatch}}
	if rm2 {
		levels = []lv{{2.0, Exact}, {1.5, Minor}, {1.0, Mismatch}}
	}
	for _, l := range levels {
		if score > l.s-1e-6 && score < l.s+1e-6 {
			return l.v, nil
		}
	}
	return 0, fmt.Errorf("judge: score %v is not on the scale %v/%v/%v", score, levels[0].s, levels[1].s, levels[2].s)
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
