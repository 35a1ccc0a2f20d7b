package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data/synth"
)

// train data synth --seed N --out DIR [--sizes train=1500,val=200,test=150,base=10000] ...
// Writes the embedded multilingual benchmark (issue 8): train.jsonl,
// val.jsonl, test_learn.jsonl, test_gen.jsonl, base.jsonl and overlap.json.
func init() { dataCmd.AddCommand(dataSynthCmd()) }

func dataSynthCmd() *cobra.Command {
	cfg := synth.DefaultConfig()
	var out, sizes, style string
	var multiTurn bool
	c := &cobra.Command{
		Use:   "synth --seed N --out DIR [--sizes train=N,val=N,test=N,base=N]",
		Short: "generate the multilingual tool-calling benchmark (paper 000 in miniature)",
		Long: `Generate a deterministic multilingual tool-calling benchmark in argrl's JSONL schema.

58 APIs in 12 domains; utterances in en, es, fr, it, nl; gold values follow
paper 000's translation protocol (free-form values in the user's language;
enums, identifiers, numbers and dates unchanged; named entities as the API
description says). Files written to DIR:
  train.jsonl       Spanish, seen APIs                      (--sizes train)
  val.jsonl         Spanish, seen APIs                      (--sizes val)
  test_learn.jsonl  learnability: seen APIs, es/it/nl/fr    (--sizes test instances × 4 languages)
  test_gen.jsonl    generalization: held-out APIs, es/it/nl/fr
  base.jsonl        base corpus, all languages and APIs, user-language
                    values mostly in English (--base-english)
  overlap.json      API partition, case mix and API overlap of each
                    evaluation file against train.jsonl
The same seed and flags give byte-identical files.

--multi-turn writes dialogues instead: requests that need 2-4 dependent
calls, where a later call takes a value from an earlier call's simulated
result (docs/contracts.md §1, turns and env): train.jsonl and val.jsonl
(Spanish), test.jsonl (each instance in es/it/nl/fr) and dialogues.json;
--sizes takes train, val and test.

--style xlam|toolace writes one of two Spanish corpora that differ the way
paper 001's xLAM and ToolACE differ (make reproduce-001): disjoint API
domains (xlam: travel, food, finance, weather, files, search; toolace:
messaging, calendar, reminders, media, home, health), argument style (xlam
states every argument an API takes, toolace the fewest) and answer shape
(xlam: 50% parallel calls, no refusals; toolace: 15% parallel, 50% no-call).
Files: train.jsonl, val.jsonl, test.jsonl (--sizes train, val, test: records)
and style.json; --parallel, --irrelevant and --max-distractors do not apply.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("data synth: --out is required")
			}
			if err := parseSizes(sizes, &cfg); err != nil {
				return fmt.Errorf("data synth: %w", err)
			}
			if style != "" {
				if multiTurn {
					return fmt.Errorf("data synth: --style and --multi-turn do not go together")
				}
				o, err := synth.GenerateStyle(cfg, style)
				if err != nil {
					return fmt.Errorf("data synth: %w", err)
				}
				if err := o.WriteDir(out); err != nil {
					return fmt.Errorf("data synth: %w", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s\nwritten to %s\n", o.Report, out)
				return nil
			}
			if multiTurn {
				d, err := synth.GenerateDialogues(cfg)
				if err != nil {
					return fmt.Errorf("data synth: %w", err)
				}
				if err := d.WriteDir(out); err != nil {
					return fmt.Errorf("data synth: %w", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s\nwritten to %s\n", d.Report, out)
				return nil
			}
			o, err := synth.Generate(cfg)
			if err != nil {
				return fmt.Errorf("data synth: %w", err)
			}
			if err := o.WriteDir(out); err != nil {
				return fmt.Errorf("data synth: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s\nwritten to %s\n", o.Report, out)
			return nil
		},
	}
	f := c.Flags()
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "generator seed")
	f.StringVar(&out, "out", "", "output directory (required)")
	f.BoolVar(&multiTurn, "multi-turn", false, "write multi-turn dialogues of 2-4 dependent calls (train, val, test)")
	f.StringVar(&style, "style", "", "write a paper-001 corpus instead: "+strings.Join(synth.StyleNames(), " or ")+" (train.jsonl, val.jsonl, test.jsonl; see above)")
	f.StringVar(&sizes, "sizes", "", fmt.Sprintf("comma-separated sizes, any of train=,val=,test=,base= (default train=%d,val=%d,test=%d,base=%d; test counts instances per test file, each written in 4 languages)",
		cfg.Train, cfg.Val, cfg.Test, cfg.Base))
	f.Float64Var(&cfg.HeldOut, "heldout", cfg.HeldOut, "share of each domain's APIs held out of training (generalization split)")
	f.Float64Var(&cfg.GenOverlap, "gen-overlap", cfg.GenOverlap, "share of generalization-test calls on one seen API")
	f.Float64Var(&cfg.Parallel, "parallel", cfg.Parallel, "share of two-call (parallel) cases")
	f.Float64Var(&cfg.Irrelevant, "irrelevant", cfg.Irrelevant, "share of no-call (irrelevance) cases")
	f.IntVar(&cfg.MaxDistractors, "max-distractors", cfg.MaxDistractors, "distractor tools per record, 1..N (N ≤ 3)")
	f.BoolVar(&cfg.Reasoning, "reasoning", false, "R2IF: smv documents on the training records too, and a gold reasoning on every train, validation and test record (SFT in reason_tool trains on it)")
	f.Float64Var(&cfg.BaseEnglish, "base-english", cfg.BaseEnglish, "base corpus: share of non-English records whose user-language values are written in English")
	return c
}

// parseSizes applies "train=1500,val=200,test=150,base=10000" to cfg.
func parseSizes(s string, cfg *synth.Config) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return fmt.Errorf("--sizes: %q is not key=value", kv)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("--sizes: %s=%q is not a non-negative integer", k, v)
		}
		switch k {
		case "train":
			cfg.Train = n
		case "val":
			cfg.Val = n
		case "test":
			cfg.Test = n
		case "base":
			cfg.Base = n
		default:
			return fmt.Errorf("--sizes: unknown key %q (want train, val, test, base)", k)
		}
	}
	return nil
}
