package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/internal/atomicfile"
	"github.com/argrl/argrl/reward"
)

func init() { root.AddCommand(newEvalCmd()) }

type evalFlags struct {
	score                                 scoreFlags
	config, model, adapter, dataPath, out string
	predictions                           string
	sets                                  []string
	gen                                   genFlags // model-driven evaluation (generate.go)
}

// generateForEval produces one greedy response per record for model-driven
// evaluation. The rollout engine (issue 5) sets it; until then it is nil
// and `train eval` needs --predictions.
var generateForEval func(ctx context.Context, f *evalFlags, recs []data.Record) ([]string, error)

func newEvalCmd() *cobra.Command {
	f := &evalFlags{}
	c := &cobra.Command{
		Use:   "eval --data F --predictions F [--format tool_call] [--judge builtin] [--out metrics.json] | --config F | --model DIR [--adapter DIR] --data F",
		Short: "print the metric table (TID TSA ACA ALC FCM, exact match, name accuracy, argument score)",
		Long: `Evaluate responses against the gold calls of --data (docs/contracts.md §3).

With --predictions, the responses are read from a JSONL file of {"id","text"}
lines, exactly one per record. Without it, they are generated greedily by the
model (--model/--adapter, or --config), which needs the rollout engine.
The table goes to stdout; --out also writes the rates as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.dataPath, "data", "", "records (argrl JSONL); default with --config: data.test")
	fl.StringVar(&f.predictions, "predictions", "", `responses, one {"id","text"} JSONL line per record`)
	fl.StringVar(&f.out, "out", "", "write the report as JSON to this file")
	fl.StringVar(&f.config, "config", "", "run config (format, judge, data.test, model)")
	fl.StringArrayVar(&f.sets, "set", nil, "override one config key (with --config)")
	fl.StringVar(&f.model, "model", "", "model directory (model-driven evaluation)")
	fl.StringVar(&f.adapter, "adapter", "", "LoRA adapter directory (model-driven evaluation)")
	addScoreFlags(c, &f.score)
	addGenFlags(c, &f.gen, 0, "model-driven evaluation: most new tokens per response (0: the config's rollout.max_new_tokens, else 512)")
	return c
}

func runEval(cmd *cobra.Command, f *evalFlags) error {
	if f.config != "" {
		rc, err := loadRunConfig("sft", &runFlags{config: f.config, sets: f.sets})
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		if !cmd.Flags().Changed("format") {
			f.score.format = rc.Format
		}
		if !cmd.Flags().Changed("judge") {
			f.score.judge = rc.Judge
		}
		if f.dataPath == "" {
			f.dataPath = rc.Data.Test
		}
		if f.model == "" {
			f.model = rc.Model.Path
		}
	}
	if f.dataPath == "" {
		return fmt.Errorf("eval: --data is required")
	}
	recs, err := data.ReadFile(f.dataPath)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	var texts []string
	if f.predictions != "" {
		texts, err = predictionTexts(f.predictions, recs)
	} else {
		texts, err = generateTexts(cmd.Context(), f, recs)
	}
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	s, err := reward.NewScorer(f.score.config())
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	rep, _, err := s.Evaluate(cmd.Context(), recs, texts)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	fmt.Fprint(cmd.OutOrStdout(), rep.Table())
	if f.out != "" {
		if err := writeJSONFile(f.out, rep); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	return nil
}

// generateTexts is model-driven evaluation: greedy responses from the
// model, scored exactly like a predictions file.
func generateTexts(ctx context.Context, f *evalFlags, recs []data.Record) ([]string, error) {
	if f.model == "" {
		return nil, fmt.Errorf("give --predictions F, or a model (--model DIR or --config F)")
	}
	if generateForEval == nil {
		return nil, errors.New("model-driven evaluation needs the rollout engine (issue 5); use --predictions F with responses from another engine meanwhile")
	}
	return generateForEval(ctx, f, recs)
}

// predictionTexts returns one response per record, in record order: every
// record needs exactly one prediction.
func predictionTexts(path string, recs []data.Record) ([]string, error) {
	preds, err := readPredictions(path, indexRecords(recs))
	if err != nil {
		return nil, err
	}
	byID := map[string]prediction{}
	for _, p := range preds {
		if q, dup := byID[p.ID]; dup {
			return nil, fmt.Errorf("%s:%d: second prediction for id %q (first at line %d)", path, p.line, p.ID, q.line)
		}
		byID[p.ID] = p
	}
	texts := make([]string, len(recs))
	var missing []string
	for i, r := range recs {
		p, ok := byID[r.ID]
		if !ok {
			missing = append(missing, r.ID)
			continue
		}
		texts[i] = *p.Text
	}
	if len(missing) > 0 {
		show := missing
		if len(show) > 5 {
			show = show[:5]
		}
		return nil, fmt.Errorf("%s: no prediction for %d records (ids %q...)", path, len(missing), show)
	}
	return texts, nil
}

// writeJSONFile writes v as indented JSON through a temporary file.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := atomicfile.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*") // 0666 less the umask
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
