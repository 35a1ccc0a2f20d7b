package reward

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// BFCLScore is one BFCL category's result.
type BFCLScore struct {
	Correct  int     `json:"correct"`
	Total    int     `json:"total"`
	Accuracy float64 `json:"accuracy"`
	// Errors counts the failed responses by the checker's error type.
	Errors map[string]int `json:"errors,omitempty"`
}

// BFCLSummary holds the leaderboard's summary columns (as its
// eval_runner_helper computes them). A column is nil when one of the
// categories it averages was not evaluated (the leaderboard shows N/A).
type BFCLSummary struct {
	// NonLive is "Non-Live AST Acc": the unweighted mean of simple (itself
	// the unweighted mean of simple_python, simple_java and
	// simple_javascript), multiple, parallel and parallel_multiple.
	NonLive       *float64 `json:"non_live"`
	NonLiveSimple *float64 `json:"non_live_simple"`
	// Live is "Live Acc": live_simple, live_multiple, live_parallel and
	// live_parallel_multiple weighted by their sizes.
	Live *float64 `json:"live"`
	// Irrelevance is "Irrelevance Detection": the unweighted mean of
	// irrelevance and live_irrelevance.
	Irrelevance *float64 `json:"irrelevance"`
	// Relevance is "Relevance Detection": live_relevance.
	Relevance *float64 `json:"relevance"`
}

// BFCLReport is a BFCL evaluation: per-category accuracy and the summary
// columns.
type BFCLReport struct {
	Categories map[string]BFCLScore `json:"categories"`
	Summary    BFCLSummary          `json:"summary"`
}

// BFCLAggregate accumulates verdicts by category.
type BFCLAggregate struct{ cats map[string]*BFCLScore }

// Add counts one response of a category.
func (a *BFCLAggregate) Add(category string, v BFCLVerdict) {
	if a.cats == nil {
		a.cats = map[string]*BFCLScore{}
	}
	s := a.cats[category]
	if s == nil {
		s = &BFCLScore{}
		a.cats[category] = s
	}
	s.Total++
	if v.Valid {
		s.Correct++
		return
	}
	if s.Errors == nil {
		s.Errors = map[string]int{}
	}
	s.Errors[v.ErrorType]++
}

// Report computes the accuracies and summary columns.
func (a *BFCLAggregate) Report() BFCLReport {
	r := BFCLReport{Categories: map[string]BFCLScore{}}
	for c, s := range a.cats {
		sc := *s
		sc.Accuracy = float64(sc.Correct) / float64(sc.Total)
		r.Categories[c] = sc
	}
	acc := func(c string) (float64, bool) {
		s, ok := r.Categories[c]
		return s.Accuracy, ok
	}
	mean := func(cats ...string) *float64 {
		sum := 0.0
		for _, c := range cats {
			v, ok := acc(c)
			if !ok {
				return nil
			}
			sum += v
		}
		m := sum / float64(len(cats))
		return &m
	}
	s := &r.Summary
	s.NonLiveSimple = mean("simple_python", "simple_java", "simple_javascript")
	if s.NonLiveSimple != nil {
		if rest := mean("multiple", "parallel", "parallel_multiple"); rest != nil {
			v := (*s.NonLiveSimple + 3**rest) / 4
			s.NonLive = &v
		}
	}
	correct, total := 0, 0
	for _, c := range []string{"live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"} {
		sc, ok := r.Categories[c]
		if !ok {
			total = -1
			break
		}
		correct, total = correct+sc.Correct, total+sc.Total
	}
	if total > 0 {
		v := float64(correct) / float64(total)
		s.Live = &v
	}
	s.Irrelevance = mean("irrelevance", "live_irrelevance")
	s.Relevance = mean("live_relevance")
	return r
}

// Table renders the report: one line per category (sorted), then the
// summary columns.
func (r BFCLReport) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %8s %6s %9s\n", "category", "correct", "total", "accuracy")
	for _, c := range slices.Sorted(maps.Keys(r.Categories)) {
		s := r.Categories[c]
		fmt.Fprintf(&b, "%-24s %8d %6d %8.2f%%\n", c, s.Correct, s.Total, 100*s.Accuracy)
	}
	col := func(name string, v *float64) {
		if v == nil {
			fmt.Fprintf(&b, "%-24s %24s\n", name, "N/A")
			return
		}
		fmt.Fprintf(&b, "%-24s %23.2f%%\n", name, 100**v)
	}
	col("Non-Live AST Acc", r.Summary.NonLive)
	col("  Non-Live Simple AST", r.Summary.NonLiveSimple)
	col("Live Acc", r.Summary.Live)
	col("Irrelevance Detection", r.Summary.Irrelevance)
	col("Relevance Detection", r.Summary.Relevance)
	return b.String()
}
