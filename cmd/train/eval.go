package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/internal/atomicfile"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

func init() { root.AddCommand(newEvalCmd()) }

type evalFlags struct {
	score                                 scoreFlags
	config, model, adapter, dataPath, out string
	predictions, bench                    string
	sets                                  []string
	gen                                   genFlags      // model-driven evaluation (generate.go)
	endpoint                              endpointFlags // answers from a server (endpoint.go)
	metric                                string        // "ace": also R2IF's ACE (ace.go)
	student                               studentFlags

	run    *config.Config // the loaded --config (nil without one)
	reward reward.Config  // the scorer's settings: the config's reward.*, then the flags
}

func newEvalCmd() *cobra.Command {
	f := &evalFlags{}
	c := &cobra.Command{
		Use:   "eval --data F --predictions F [--format tool_call] [--judge builtin] [--out metrics.json] | --config F | --model DIR [--adapter DIR] --data F | --bench bfcl DIR [--predictions F | --model DIR]",
		Short: "print the metric table (TID TSA ACA ALC FCM, exact match, name accuracy, argument score)",
		Long: `Evaluate responses against the gold calls of --data (docs/contracts.md §3).

With --predictions, the responses are read from a JSONL file of {"id","text"}
lines, exactly one per record. Without it, they are generated greedily by the
model (--model/--adapter, or --config) with the rollout engine.
The table goes to stdout, progress to stderr; --out also writes the rates as
JSON (its directory must exist: it is checked before any work).

With --config, the scorer is the one training uses: format, judge and every
reward.* key (judge_http, alc_threshold, ...) come from the config, and a
flag given explicitly overrides its key.

With --bench bfcl DIR, the records are every single-turn BFCL question file
in DIR (BFCL_v4_<category>.json, answers in DIR/possible_answer/, BFCL's own
layout), scored as BFCL's AST checker scores them (the bfcl reward): the
table gives each category's accuracy and the leaderboard's summary columns
(Non-Live AST, Live, Irrelevance and Relevance Detection); --out writes them
as JSON.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := resolveEval(cmd, f); err != nil {
				return fmt.Errorf("eval: %w", err)
			}
			if f.bench != "" || len(args) > 0 {
				return runBench(cmd, f, args)
			}
			return runEval(cmd, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.dataPath, "data", "", "records (argrl JSONL); default with --config: data.test")
	fl.StringVar(&f.predictions, "predictions", "", `responses, one {"id","text"} JSONL line per record`)
	fl.StringVar(&f.out, "out", "", "write the report as JSON to this file")
	fl.StringVar(&f.bench, "bench", "", "benchmark: bfcl (then the one argument is a BFCL data directory: DIR/BFCL_v4_<category>.json, answers in DIR/possible_answer/)")
	fl.StringVar(&f.config, "config", "", "run config (format, judge, reward.*, data.test, model)")
	fl.StringArrayVar(&f.sets, "set", nil, "override one config key (with --config)")
	_ = c.RegisterFlagCompletionFunc("set", completeSet)
	fl.StringVar(&f.model, "model", "", "model directory (model-driven evaluation)")
	fl.StringVar(&f.adapter, "adapter", "", "LoRA adapter directory (model-driven evaluation)")
	fl.StringVar(&f.endpoint.url, "endpoint", "", "answers from an OpenAI-compatible server: its API base URL (e.g. http://127.0.0.1:8000/v1)")
	fl.StringVar(&f.endpoint.model, "endpoint-model", "", "with --endpoint: the \"model\" to ask (default: the first of GET /models)")
	fl.StringVar(&f.endpoint.keyEnv, "endpoint-key-env", "", "with --endpoint: send \"Authorization: Bearer KEY\", KEY read from this environment variable")
	fl.IntVar(&f.endpoint.concurrency, "endpoint-concurrency", 8, "with --endpoint: requests in flight at once")
	fl.StringVar(&f.metric, "metric", "", "ace: also report R2IF's average CoT effectiveness with its standard error (format reason_tool; needs --student)")
	addStudentModelFlags(c, &f.student)
	addScoreFlags(c, &f.score)
	addGenFlags(c, &f.gen, 0, "model-driven evaluation: most new tokens per response (0: the config's rollout.max_new_tokens, else 512)")
	// eval generates one greedy response per record: --batch is how many
	// records decode at once (generate's help speaks of its --n samples).
	fl.Lookup("batch").Usage = "model-driven evaluation: records decoded at once (KV-cache slots; more uses more memory, fewer is slower)"
	return c
}

// resolveEval loads --config (data, model and the scorer's settings; the
// flags given explicitly win) and checks --out, before any work.
func resolveEval(cmd *cobra.Command, f *evalFlags) error {
	f.reward = reward.DefaultConfig()
	if f.config != "" {
		rc, err := config.Load(f.config, append([]string{"algo=sft"}, f.sets...)) // the scorer's keys; no RL checks
		if err != nil {
			return err
		}
		f.run = &rc
		f.reward = trainer.RewardPackageConfig(rc)
		if f.dataPath == "" && f.bench == "" {
			f.dataPath = data.WithSplit(rc.Data.Test, rc.Data.TestSplit)
		}
		if f.model == "" {
			f.model = rc.Model.Path
		}
	}
	if err := f.score.apply(cmd.Flags(), &f.reward); err != nil {
		return err
	}
	if f.out != "" {
		return checkOutPath("--out", f.out)
	}
	return nil
}

func runEval(cmd *cobra.Command, f *evalFlags) error {
	if f.dataPath == "" && f.run != nil {
		return fmt.Errorf("eval: --config %s sets no data.test (the records to evaluate): add data.test: FILE to it, or give --data FILE", f.config)
	}
	if f.dataPath == "" {
		return fmt.Errorf("eval: --data FILE is required (the records to evaluate), or --config F with data.test")
	}
	recs, err := data.ReadSpec(f.dataPath)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("eval: %s has no records: nothing to evaluate", f.dataPath)
	}
	if kept := callRecords(recs); len(kept) < len(recs) {
		if len(kept) == 0 {
			return fmt.Errorf("eval: the %d records of %s are plain chat (no tools): the call metrics have nothing to score", len(recs), f.dataPath)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "eval: %d of %d records are plain chat (no tools): the call metrics skip them\n", len(recs)-len(kept), len(recs))
		if f.predictions == "" { // nothing to generate for them (predictions may still name them)
			recs = kept
		}
	}
	s, err := reward.NewScorer(f.reward)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	ace, err := openACE(f)
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	defer ace.close()
	var agg reward.Aggregate
	mis := format.NewMismatch(s.Format)
	err = responses(cmd, f, recs, func(i int, text string) error {
		if recs[i].PlainChat() {
			return nil
		}
		mis.Add(text)
		o, err := s.Score(cmd.Context(), &recs[i], text)
		if err != nil {
			return err
		}
		agg.Add(o)
		return ace.add(cmd.Context(), &recs[i], text)
	})
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	if w := mis.Warning("eval"); w != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), w)
	}
	rep := agg.Report()
	fmt.Fprint(cmd.OutOrStdout(), rep.Table())
	var out any = rep
	if ace != nil {
		a := ace.report(cmd.OutOrStdout())
		out = struct {
			reward.Report
			ACE reward.ACEReport `json:"ace"`
		}{rep, a}
	}
	if f.out != "" {
		if err := writeReport(f.out, out); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	return nil
}

// responses hands each record's response to each, in record order: from
// --predictions, else generated greedily by the model as it comes. Progress
// (records done, generated tokens/s, ETA) goes to stderr.
func responses(cmd *cobra.Command, f *evalFlags, recs []data.Record, each func(i int, text string) error) error {
	prog := metrics.NewCounter(cmd.ErrOrStderr(), "eval", len(recs))
	emit := func(i int, text string, tokens int) error {
		if err := each(i, text); err != nil {
			return err
		}
		prog.Step(i+1, nil, tokens)
		return nil
	}
	if f.endpoint.url != "" {
		if f.predictions != "" || f.model != "" {
			return fmt.Errorf("--endpoint asks a server for the answers: drop --predictions and --model")
		}
		return endpointResponses(cmd.Context(), &f.endpoint, f.reward.Format, f.gen.maxNewTokens, recs, emit)
	}
	if f.predictions != "" {
		texts, err := predictionTexts(f.predictions, recs)
		if err != nil {
			return err
		}
		for i, t := range texts {
			if err := emit(i, t, 0); err != nil {
				return err
			}
		}
		return nil
	}
	if f.model == "" {
		return fmt.Errorf("give --predictions F, or a model (--model DIR or --config F)")
	}
	_, err := evalGenerate(cmd.Context(), f, recs, emit)
	return err
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

// writeReport writes v as JSON to path (--out); an error names path, not
// the temporary file it goes through.
func writeReport(path string, v any) error {
	if err := writeJSONFile(path, v); err != nil {
		return fmt.Errorf("write %s: %w", path, bareError(err))
	}
	return nil
}

// checkOutPath refuses an output path that cannot be written, before any
// work: its directory must exist and take a new file, and the path must
// not be a directory. flag names the option in the error.
func checkOutPath(flag, path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: directory %s does not exist", flag, path, dir)
	case err != nil:
		return fmt.Errorf("%s %s: directory %s: %w", flag, path, dir, bareError(err))
	case !st.IsDir():
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s %s is a directory; give a file name", flag, path)
	}
	probe, err := os.CreateTemp(dir, ".train-probe-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot create a file in %s: %w", flag, path, dir, bareError(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// bareError drops the file name an *os.PathError or *os.LinkError carries
// (a temporary file's, which means nothing to the user).
func bareError(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// callRecords drops the plain-chat records (data.Record.PlainChat): the
// call metrics have nothing to score on them.
func callRecords(recs []data.Record) []data.Record {
	var out []data.Record
	for _, r := range recs {
		if !r.PlainChat() {
			out = append(out, r)
		}
	}
	return out
}
