package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/reward"
)

// benchFile names a BFCL question file: BFCL_v<N>_<category>.json.
var benchFile = regexp.MustCompile(`^BFCL_v\d+_(.+)\.json$`)

// bfclLayout is the folder --bench bfcl DIR reads, as BFCL ships it.
const bfclLayout = "--bench bfcl DIR needs BFCL's own data layout: DIR/BFCL_v4_<category>.json question files " +
	"and their answers in DIR/possible_answer/BFCL_v4_<category>.json (the irrelevance categories have none), " +
	"as in BFCL's bfcl_eval/data folder"

// benchUnsupported are the BFCL categories whose answers are execution
// traces or agentic checks, not AST ones.
var benchUnsupported = []string{"multi_turn", "memory", "web_search", "format_sensitivity"}

// loadBFCLDir imports every single-turn BFCL question file of dir (with its
// answers from dir/possible_answer/, BFCL's layout), in file-name order.
func loadBFCLDir(dir string, errw io.Writer) ([]data.Record, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var recs []data.Record
	for _, e := range entries {
		m := benchFile.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		if slices.ContainsFunc(benchUnsupported, func(u string) bool { return strings.Contains(m[1], u) }) {
			fmt.Fprintf(errw, "bfcl: %s skipped (not a single-turn AST category)\n", e.Name())
			continue
		}
		opts := data.ImportOptions{}
		if a := filepath.Join(dir, "possible_answer", e.Name()); fileExists(a) {
			opts.Answers = a
		}
		rs, st, err := data.Import("bfcl", filepath.Join(dir, e.Name()), opts)
		if err != nil && opts.Answers == "" {
			return nil, fmt.Errorf("%w\n  %s has no answers file %s; %s", err, dir, filepath.Join("possible_answer", e.Name()), bfclLayout)
		}
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(errw, "bfcl: %s: %d records\n", m[1], len(rs))
		for _, q := range slices.Sorted(maps.Keys(st.Quirks)) {
			fmt.Fprintf(errw, "  quirk: %d× %s\n", st.Quirks[q], q)
		}
		recs = append(recs, rs...)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: no BFCL question files; %s", dir, bfclLayout)
	}
	return recs, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// runBench is `train eval --bench bfcl DIR`: every single-turn category of
// DIR scored by BFCL's checker rules (the bfcl reward), per category and
// in the leaderboard's summary columns.
func runBench(cmd *cobra.Command, f *evalFlags, args []string) error {
	if f.bench != "bfcl" {
		return fmt.Errorf("eval: unknown --bench %q (valid: bfcl)", f.bench)
	}
	if len(args) != 1 {
		return fmt.Errorf("eval: --bench bfcl needs the BFCL data directory as its one argument")
	}
	if f.dataPath != "" {
		return fmt.Errorf("eval: --bench reads its records from DIR; drop --data")
	}
	recs, err := loadBFCLDir(args[0], cmd.ErrOrStderr())
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	fm, err := format.Get(f.reward.Format, format.Options{RejectString: f.reward.RejectString})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var agg reward.BFCLAggregate
	err = responses(cmd, f, recs, func(i int, text string) error {
		v, err := reward.BFCLCheck(&recs[i], fm.Parse(text))
		if err != nil {
			return err
		}
		agg.Add(recs[i].BFCL.Category, v)
		return nil
	})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	rep := agg.Report()
	fmt.Fprint(cmd.OutOrStdout(), rep.Table())
	if f.out != "" {
		if err := writeReport(f.out, rep); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	return nil
}
