package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/trainer/metrics"
)

// dataCmd groups the dataset tools; children register on it (convert and
// split here, synth and bpe in their own files).
var dataCmd = &cobra.Command{Use: "data",
	Short: "dataset tools: convert sources to argrl JSONL, split, synth (the demo benchmark), bpe (a tokenizer)"}

func init() {
	dataCmd.AddCommand(dataConvertCmd(), dataSplitCmd())
	root.AddCommand(dataCmd)
}

func dataConvertCmd() *cobra.Command {
	var from, answers, lang string
	var skipBad bool
	c := &cobra.Command{
		Use:   "convert --from bfcl|xlam|toolace|glaive|openai|sharegpt [--answers F] [--lang xx] IN OUT",
		Short: "convert a source dataset into argrl's JSONL schema (docs/contracts.md §1)",
		Long: `Convert a source dataset file into argrl's JSONL schema.

Sources: ` + strings.Join(data.ImporterNames(), ", ") + `.
  bfcl     a BFCL question file; --answers gives its possible_answer file
           (not needed for irrelevance, live_irrelevance, live_relevance)
  xlam     xLAM/APIGen function-calling JSON (query, tools, answers)
  toolace  ToolACE data.json (system prompt with tools, conversations)
  glaive   Glaive function-calling-v2 JSON (system, chat)
  openai   OpenAI chat JSONL, as the fine-tuning API takes it (messages with
           assistant tool_calls and tool replies, tools); a conversation
           without tools is plain chat (SFT on the assistant answers)
  sharegpt ShareGPT conversations (from/value), with LLaMA-Factory's
           function_call and observation turns and tools, or plain chat
IN is JSON Lines, a JSON array, or parquet (one item per row, as Hugging
Face stores datasets; nested columns read as JSON) for every source.
Every record gets --lang as its language. A source item that cannot be
converted is an error naming file and line (the row for parquet) with all
its problems; up to 20 bad items are listed before stopping, unless
--skip-bad, which skips them and lists them on stderr. Empty input, or
input that makes no record, is an error. Known quirks of a source's data
are handled and counted on stderr ("quirk: N× what"), with the progress.
OUT is written atomically.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return fmt.Errorf("data convert: --from is required (%s)", strings.Join(data.ImporterNames(), ", "))
			}
			errw := cmd.ErrOrStderr()
			var prog *metrics.Progress // made at the first item, when the file's item count is known
			progress := func(done, total int) {
				if prog == nil {
					prog = metrics.NewCounter(errw, "convert", total)
				}
				prog.Step(done, nil, 0)
			}
			recs, st, err := data.Import(from, args[0], data.ImportOptions{Answers: answers, Lang: lang, SkipBad: skipBad, Progress: progress})
			var bad *data.Error
			if errors.As(err, &bad) && bad.Line > 0 && !skipBad {
				return fmt.Errorf("data convert: %w (--skip-bad skips such items)", err)
			}
			if err != nil {
				return fmt.Errorf("data convert: %w", err)
			}
			if err := data.WriteFile(args[1], recs); err != nil {
				return fmt.Errorf("data convert: %w", err)
			}
			for _, s := range st.Skipped {
				fmt.Fprintln(errw, "skipped:", s)
			}
			for _, n := range st.Notes {
				fmt.Fprintln(errw, "note:", n)
			}
			for _, q := range slices.Sorted(maps.Keys(st.Quirks)) {
				fmt.Fprintf(errw, "quirk: %d× %s\n", st.Quirks[q], q)
			}
			fmt.Fprintf(errw, "%s: %d items → %d records in %s (%d skipped)\n", from, st.Items, st.Records, args[1], len(st.Skipped))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "source format: "+strings.Join(data.ImporterNames(), ", "))
	f.StringVar(&answers, "answers", "", "BFCL possible_answer file")
	f.StringVar(&lang, "lang", "en", "ISO 639-1 code of the user language, written to every record")
	f.BoolVar(&skipBad, "skip-bad", false, "skip items that cannot be converted, listing each on stderr")
	return c
}

func dataSplitCmd() *cobra.Command {
	cfg := data.SplitConfig{}
	c := &cobra.Command{
		Use:   "split [--mode random|learnability|generalization] [--seed N] [--validation F] [--test F] [--overlap F] IN OUT",
		Short: "assign train/validation/test splits, optionally controlling API overlap (paper 000 §3.3)",
		Long: `Set the "split" field of every record of IN and write OUT.

  random          uniform, by a seeded hash of the record id
  learnability    high API overlap between training and evaluation
  generalization  evaluation APIs held out of training
--overlap sets the target fraction of evaluation records whose gold API
appears in training (default 1 for learnability, 0 for generalization).
The achieved sizes and overlap are printed on stderr.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			recs, err := data.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("data split: %w", err)
			}
			rep, err := data.Split(recs, cfg)
			if err != nil {
				return fmt.Errorf("data split: %w", err)
			}
			if err := data.WriteFile(args[1], recs); err != nil {
				return fmt.Errorf("data split: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s split: %s\n", cfg.Mode, rep)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.Mode, "mode", data.SplitRandom, "random, learnability or generalization")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the assignment")
	f.Float64Var(&cfg.Validation, "validation", 0.1, "fraction of records for validation")
	f.Float64Var(&cfg.Test, "test", 0.1, "fraction of records for test")
	f.Float64Var(&cfg.Overlap, "overlap", -1, "target API overlap in [0,1]; negative: the mode's default")
	return c
}
