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
	// Missing names, for each summary column left N/A (by its JSON name),
	// the categories it averages that were not evaluated; Partial is the
	// same formula over the categories that were (absent when none was).
	Missing map[string][]string `json:"missing,omitempty"`
	Partial map[string]float64  `json:"partial,omitempty"`
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
	var simple, nonLive, live, irr, rel column
	simple.mean(r.Categories, "simple_python", "simple_java", "simple_javascript")
	nonLive.add(simple)
	for _, c := range []string{"multiple", "parallel", "parallel_multiple"} {
		var one column
		one.mean(r.Categories, c)
		nonLive.add(one)
	}
	live.weighted(r.Categories, "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
	irr.mean(r.Categories, "irrelevance", "live_irrelevance")
	rel.mean(r.Categories, "live_relevance")
	for _, c := range []struct {
		name string
		col  column
		dst  **float64
	}{
		{"non_live", nonLive, &r.Summary.NonLive}, {"non_live_simple", simple, &r.Summary.NonLiveSimple},
		{"live", live, &r.Summary.Live}, {"irrelevance", irr, &r.Summary.Irrelevance}, {"relevance", rel, &r.Summary.Relevance},
	} {
		if len(c.col.missing) == 0 {
			v := c.col.value()
			*c.dst = &v
			continue
		}
		if r.Missing == nil {
			r.Missing, r.Partial = map[string][]string{}, map[string]float64{}
		}
		r.Missing[c.name] = c.col.missing
		if c.col.n > 0 {
			r.Partial[c.name] = c.col.value()
		}
	}
	return r
}

// column is a summary column being computed: the unweighted mean of its
// parts' accuracies (sum/n), or, weighted, correct/total; missing lists
// the categories it needs that were not evaluated.
type column struct {
	sum            float64
	n              int
	correct, total int
	isWeighted     bool
	missing        []string
}

func (c *column) mean(cats map[string]BFCLScore, names ...string) {
	for _, name := range names {
		if s, ok := cats[name]; ok {
			c.sum += s.Accuracy
			c.n++
		} else {
			c.missing = append(c.missing, name)
		}
	}
}

func (c *column) weighted(cats map[string]BFCLScore, names ...string) {
	c.isWeighted = true
	for _, name := range names {
		if s, ok := cats[name]; ok {
			c.correct, c.total = c.correct+s.Correct, c.total+s.Total
			c.n++
		} else {
			c.missing = append(c.missing, name)
		}
	}
}

// add makes the column p one part of c's unweighted mean (when any of
// p's categories was evaluated).
func (c *column) add(p column) {
	c.missing = append(c.missing, p.missing...)
	if p.n > 0 {
		c.sum += p.value()
		c.n++
	}
}

func (c column) value() float64 {
	if c.isWeighted {
		return float64(c.correct) / float64(c.total)
	}
	return c.sum / float64(c.n)
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
	col := func(name, key string, v *float64) {
		if v != nil {
			fmt.Fprintf(&b, "%-24s %23.2f%%\n", name, 100**v)
			return
		}
		// N/A as on the leaderboard, which needs every category; say
		// which are missing and what the evaluated ones give.
		why := "not evaluated: " + strings.Join(r.Missing[key], ", ")
		if p, ok := r.Partial[key]; ok {
			why = fmt.Sprintf("%s; over the categories evaluated: %.2f%%", why, 100*p)
		}
		fmt.Fprintf(&b, "%-24s %24s  (%s)\n", name, "N/A", why)
	}
	col("Non-Live AST Acc", "non_live", r.Summary.NonLive)
	col("  Non-Live Simple AST", "non_live_simple", r.Summary.NonLiveSimple)
	col("Live Acc", "live", r.Summary.Live)
	col("Irrelevance Detection", "irrelevance", r.Summary.Irrelevance)
	col("Relevance Detection", "relevance", r.Summary.Relevance)
	return b.String()
}
