package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/report"
)

// train report DIR [--stages base,sft,grpo] [--trained es] [--out F.json]
//
// Paper 000's Table 2 and Table 8 from the `train eval --out` files in
// DIR/<stage>/<split>.<lang>.json (report/), the ALM table (values
// in the wrong language), and the issue-8 claims checked on them. Tables go
// to stdout.
func init() {
	var stages, trained, out, paper string
	var draws, r2if bool
	c := &cobra.Command{
		Use:   "report DIR [--stages base,sft,grpo] [--trained es] [--out report.json]",
		Short: "paper 000's Table 2 and Table 8 from `train eval --out` files (DIR/<stage>/<split>.<lang>.json)",
		Long: `Read the evaluation reports DIR/<stage>/<split>.<lang>.json written by
"train eval --out" (split: learn or gen, the benchmark's Split-1 and Split-2;
lang: the test language) and print:
  Table 2: TID TSA ACA ALC FCM (%) per stage and split, on the trained
           language(s), then on all test languages pooled by turns;
  Table 8: ALC (%) per test language per stage, per split;
  ALM:     the share of judged textual values in the wrong language (%),
           per stage, split and language;
  the claims of paper 000 in miniature, checked on these numbers.
--out also writes every per-file and pooled report as JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if paper != "000" && paper != "001" {
				return fmt.Errorf("report: --paper %q: want 000 or 001", paper)
			}
			if draws {
				return reproduceReport(cmd, args[0], paper)
			}
			if paper != "000" {
				return fmt.Errorf("report: --paper %s needs --draws", paper)
			}
			if r2if {
				return r2ifReport(cmd, args[0])
			}
			st := splitList(stages)
			tr := splitList(trained)
			res, err := report.Load(args[0], st)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if err := res.Table2(w, tr...); err != nil {
				return err
			}
			fmt.Fprintln(w)
			if err := res.Table2(w); err != nil {
				return err
			}
			for _, sp := range res.Splits {
				fmt.Fprintln(w)
				if err := res.Table8(w, sp, tr); err != nil {
					return err
				}
			}
			fmt.Fprintln(w)
			if err := res.TableALM(w); err != nil {
				return err
			}
			if len(st) >= 3 {
				cs, err := res.Claims(st[0], st[1], st[len(st)-1], tr)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "\nPaper 000's claims, checked on the numbers above:\n")
				report.WriteClaims(w, cs)
			}
			if out != "" {
				if err := writeJSONFile(out, res.JSON(tr)); err != nil {
					return fmt.Errorf("report: %w", err)
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&stages, "stages", "base,sft,grpo", "stage directories, in table order (claims: first = base, second = SFT, last = RL)")
	f.StringVar(&trained, "trained", "es", "training language(s); the others are the unseen ones")
	f.StringVar(&out, "out", "", "also write the reports as JSON")
	f.StringVar(&paper, "paper", "000", "with --draws: 000 (make reproduce) or 001 (make reproduce-001: exact match on DIR/draw-N/evals/<stage>/{xlam,toolace}.es.json)")
	f.BoolVar(&draws, "draws", false, "DIR holds draw-N/evals (make reproduce): print paper 000's tables as mean ± sd over the draws beside the paper, check the claims strictly, write DIR/claims.json and DIR/plots/table*.png")
	f.BoolVar(&r2if, "r2if", false, "DIR holds draw-N/evals/<run>/{test,irr}.json (make reproduce-r2if): print the R2IF tables as mean ± sd over the draws beside papers 002/003, check their claims strictly, write DIR/claims.json and DIR/plots/r2if-R*.png")
	c.MarkFlagsMutuallyExclusive("draws", "r2if")
	root.AddCommand(c)
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// reproduceReport is `train report --draws [--paper 000|001] DIR`.
func reproduceReport(cmd *cobra.Command, dir, paper string) error {
	d, err := report.LoadDraws(dir)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	tables, claims, plots := d.WriteTables, d.Claims, d.WritePlots
	if paper == "001" {
		tables, claims, plots = d.WriteTables001, d.Claims001, d.WritePlots001
	}
	if err := tables(w); err != nil {
		return err
	}
	cs, err := claims()
	if err != nil {
		return err
	}
	held, n, saneHeld, sane := report.CountClaims(cs)
	fmt.Fprintf(w, "\nClaims (strict: the ordering holds on every draw and the mean margin, in hundredths of a point, is ≥ %.0f point; a tie does not hold): %d of %d hold; sanity checks: %d of %d hold\n",
		report.MinMargin, held, n, saneHeld, sane)
	if paper == "001" {
		fmt.Fprintf(w, "  (a \"within\" claim holds when a ≥ b − its tolerance on every draw: GRPO vs SFT on transfer %g point, Mix vs SFT in-distribution %g points, paper 001 §4.1-4.2)\n",
			report.TransferTolerance, report.MixTolerance)
	}
	report.WriteReproClaims(w, cs)
	if err := writeJSONFile(filepath.Join(dir, "claims.json"), cs); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	files, err := plots(filepath.Join(dir, "plots"))
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "report: wrote %s and %d charts in %s\n", filepath.Join(dir, "claims.json"), len(files), filepath.Join(dir, "plots"))
	return nil
}
