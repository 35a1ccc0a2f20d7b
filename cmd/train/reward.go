package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/reward"
)

func init() { root.AddCommand(newRewardCmd()) }

// scoreFlags are the scoring options `train reward` and `train eval` share.
type scoreFlags struct {
	format, judge, rejectString      string
	judgeURL, judgeModel, judgeCache string
	judgeTimeout, judgeBackoff       float64
	judgeRetries                     int
}

func addScoreFlags(cmd *cobra.Command, f *scoreFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "tool_call", "output format of the predictions: tool_call, pythonic, reason_tool")
	fl.StringVar(&f.judge, "judge", "builtin", "language judge: builtin or http")
	fl.StringVar(&f.rejectString, "reject-string", "", "no-call answer of tool_call/reason_tool (default: the format's)")
	fl.StringVar(&f.judgeURL, "judge-url", "", "judge http: OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
	fl.StringVar(&f.judgeModel, "judge-model", "", "judge http: model name")
	fl.StringVar(&f.judgeCache, "judge-cache", "", `judge http: cache folder ("off" disables; default: the user cache folder)`)
	fl.Float64Var(&f.judgeTimeout, "judge-timeout", 30, "judge http: seconds each request may take (reward.judge_http.timeout_s)")
	fl.IntVar(&f.judgeRetries, "judge-retries", 3, "judge http: further attempts after a failed request (reward.judge_http.retries)")
	fl.Float64Var(&f.judgeBackoff, "judge-backoff", 1, "judge http: seconds before the first retry, doubling after each (reward.judge_http.backoff_s)")
}

// apply writes the flags given on the command line into c (defaults, or
// a config's reward settings), leaving the others as c has them.
func (f *scoreFlags) apply(fl *pflag.FlagSet, c *reward.Config) error {
	set := func(name string, dst *string, v string) {
		if fl.Changed(name) {
			*dst = v
		}
	}
	set("format", &c.Format, f.format)
	set("judge", &c.Judge, f.judge)
	set("reject-string", &c.RejectString, f.rejectString)
	set("judge-url", &c.JudgeHTTP.URL, f.judgeURL)
	set("judge-model", &c.JudgeHTTP.Model, f.judgeModel)
	set("judge-cache", &c.JudgeHTTP.CacheDir, f.judgeCache)
	for _, s := range []struct {
		name string
		v    float64
		dst  *float64
	}{{"judge-timeout", f.judgeTimeout, &c.JudgeHTTP.TimeoutS}, {"judge-backoff", f.judgeBackoff, &c.JudgeHTTP.BackoffS}} {
		if !fl.Changed(s.name) {
			continue
		}
		if !(s.v > 0) || math.IsInf(s.v, 0) {
			return fmt.Errorf("--%s %v: want a number of seconds > 0", s.name, s.v)
		}
		*s.dst = s.v
	}
	if fl.Changed("judge-retries") {
		if f.judgeRetries < 0 {
			return fmt.Errorf("--judge-retries %d: want ≥ 0", f.judgeRetries)
		}
		n := f.judgeRetries
		c.JudgeHTTP.Retries = &n
	}
	return nil
}

// prediction is one line of a predictions file.
type prediction struct {
	ID     string          `json:"id"`
	Text   *string         `json:"text"`
	Sample json.RawMessage `json:"sample,omitempty"`
	line   int
}

// readPredictions reads {"id","text"} lines (other keys, such as
// `train generate`'s sample/token_ids/logprobs, are ignored). Every id must
// name a record of recs. Errors name FILE:LINE.
func readPredictions(path string, recs map[string]*data.Record) ([]prediction, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []prediction
	r := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var p prediction
			if jerr := json.Unmarshal(b, &p); jerr != nil {
				return nil, fmt.Errorf("%s:%d: not a JSON object {\"id\",\"text\"}: %v", path, line, jerr)
			}
			switch {
			case p.ID == "":
				return nil, fmt.Errorf("%s:%d: missing \"id\"", path, line)
			case p.Text == nil:
				return nil, fmt.Errorf("%s:%d: missing \"text\" (id %q)", path, line, p.ID)
			case recs[p.ID] == nil:
				return nil, fmt.Errorf("%s:%d: id %q is not in the data file", path, line, p.ID)
			}
			p.line = line
			out = append(out, p)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
	return out, nil
}

// indexRecords maps ids to records.
func indexRecords(recs []data.Record) map[string]*data.Record {
	m := make(map[string]*data.Record, len(recs))
	for i := range recs {
		m[recs[i].ID] = &recs[i]
	}
	return m
}

func newRewardCmd() *cobra.Command {
	var sf scoreFlags
	var stu studentFlags
	var name, dataPath, predPath string
	var wCER float64
	c := &cobra.Command{
		Use:   "reward --reward NAME [--format F] [--judge builtin] --data F --predictions F",
		Short: "score predictions with a reward model (docs/contracts.md §4, §8)",
		Long: `Score each prediction line {"id","text"} against its record of --data with the
reward --reward (` + strings.Join(reward.Names(), ", ") + `).

stdout has one JSON line per prediction, in input order:
  {"id","reward","gate","metrics":{"tid":0|1,"tsa":..,"aca":..,"alc":..,"fcm":..},"parts":{...},"args":[...]}
("sample" is copied when the prediction has one).

r2if reads the <reason> block, so it needs --format reason_tool. Its CER
needs a student model: --student DIR (with --student-adapter,
--student-tokenizer, --student-template, as reward.student.* in a config;
it samples as the rollout defaults say), or --w-cer 0 to score without CER.
--judge http talks to an OpenAI-compatible endpoint; --judge-timeout,
--judge-retries and --judge-backoff bound what a failing one costs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" || dataPath == "" || predPath == "" {
				return fmt.Errorf("reward: --reward, --data and --predictions are required")
			}
			cfg := reward.DefaultConfig()
			if err := sf.apply(cmd.Flags(), &cfg); err != nil {
				return fmt.Errorf("reward: %w", err)
			}
			if cmd.Flags().Changed("w-cer") {
				cfg.R2IF.WCER = wCER
			}
			recs, err := data.ReadSpec(dataPath)
			if err != nil {
				return fmt.Errorf("reward: %w", err)
			}
			byID := indexRecords(recs)
			for i := range recs {
				if recs[i].RejectReason != "" {
					cfg.SimCorpus = append(cfg.SimCorpus, recs[i].RejectReason)
				}
				for _, docs := range recs[i].SMV {
					for _, d := range docs {
						cfg.SimCorpus = append(cfg.SimCorpus, d.Spec, d.Mod)
					}
				}
			}
			var st *lazyStudent
			if stu.path != "" || stu.adapter != "" || stu.tokenizer != "" || stu.template != "" {
				if name != "r2if" {
					return fmt.Errorf("reward: --student is only used by --reward r2if")
				}
				st = &lazyStudent{}
				cfg.Student = st
			}
			rw, err := reward.Get(name, cfg)
			if err != nil {
				return fmt.Errorf("reward: %w", err)
			}
			preds, err := readPredictions(predPath, byID)
			if err != nil {
				return fmt.Errorf("reward: %w", err)
			}
			if st != nil {
				if err := st.open(stu, cfg.Format, cfg.RejectString); err != nil {
					return fmt.Errorf("reward: %w", err)
				}
				defer st.close()
			}
			outFormat, err := format.Get(cmp.Or(cfg.Format, "tool_call"), format.Options{RejectString: cfg.RejectString})
			if err != nil {
				return fmt.Errorf("reward: %w", err)
			}
			mis := format.NewMismatch(outFormat)
			w := bufio.NewWriter(cmd.OutOrStdout())
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			for _, p := range preds {
				if !byID[p.ID].PlainChat() {
					mis.Add(*p.Text)
				}
				res, err := rw.Score(cmd.Context(), byID[p.ID], *p.Text)
				if err != nil {
					return fmt.Errorf("reward: %s:%d: %w", predPath, p.line, err)
				}
				if err := enc.Encode(struct {
					ID      string             `json:"id"`
					Sample  json.RawMessage    `json:"sample,omitempty"`
					Reward  float64            `json:"reward"`
					Gate    string             `json:"gate"`
					Metrics reward.Levels      `json:"metrics"`
					Parts   map[string]float64 `json:"parts"`
					Args    []reward.ArgScore  `json:"args"`
				}{p.ID, p.Sample, res.Reward, res.Gate, res.Metrics, res.Parts, res.Args}); err != nil {
					return fmt.Errorf("reward: %w", err)
				}
			}
			if err := w.Flush(); err != nil {
				return fmt.Errorf("reward: %w", err)
			}
			if w := mis.Warning("reward " + name); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reward %s: scored %d predictions of %d records\n", name, len(preds), len(recs))
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&name, "reward", "", "reward model: "+strings.Join(reward.Names(), ", "))
	fl.StringVar(&dataPath, "data", "", "records (argrl JSONL)")
	fl.StringVar(&predPath, "predictions", "", `predictions JSONL, one {"id","text"} per line`)
	fl.Float64Var(&wCER, "w-cer", 1, "r2if: weight of CER (0 scores r2if without a student model)")
	addScoreFlags(c, &sf)
	addStudentFlags(c, &stu)
	return c
}
