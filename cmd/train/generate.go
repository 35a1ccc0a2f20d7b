package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/metrics"
)

// train generate --model DIR [--adapter DIR] (--data F | --prompt-ids F) [--n 8]
//
//	[--temperature 0.6] [--top-p 0.95] [--top-k 0] [--seed 1] [--max-new-tokens 256]
//
// One JSON line per sample, in record order then sample order
// (docs/contracts.md §8): {"id","sample","text","token_ids","logprobs","finish_reason"};
// token_ids and logprobs are the response's, logprobs[t] = log p(token t |
// prompt, earlier response tokens) at temperature 1 (what `train score`
// prints for the same ids). The same flags give byte-identical output.
// Also the model-driven path of `train eval` (evalGenerate).
func init() { root.AddCommand(newGenerateCmd()) }

// genFlags are the model and engine options generate and eval share.
type genFlags struct {
	template, tokenizer, backend string
	compute                      string
	maxNewTokens, batch, maxLen  int
	pages                        int // KV pages (train serve's --pages; 0: the engine's default)
	stop                         []string
	mergeLoRA                    bool
}

func addGenFlags(c *cobra.Command, g *genFlags, maxNewDefault int, maxNewHelp string) {
	f := c.Flags()
	f.StringVar(&g.template, "template", "", "chat template ("+strings.Join(chat.Names(), ", ")+`; "" picks it from config.json's model_type)`)
	f.StringVar(&g.tokenizer, "tokenizer", "", "tokenizer.json or a directory holding one (default: the model directory)")
	f.StringVar(&g.backend, "backend", "", "compute backend ("+strings.Join(kernels.Names(), ", ")+`, auto; "" = auto: cuda when the binary has it and a GPU answers, else cpu)`)
	f.IntVar(&g.maxNewTokens, "max-new-tokens", maxNewDefault, maxNewHelp)
	f.IntVar(&g.batch, "batch", 64, "sequences decoded at once (KV-cache slots; must be ≥ --n)")
	f.IntVar(&g.maxLen, "max-len", 0, "longest prompt+response in tokens (0: the model's context)")
	f.StringArrayVar(&g.stop, "stop", nil, "stop string (repeatable); the text keeps it")
	f.BoolVar(&g.mergeLoRA, "merge-lora", false, "merge the adapter into the weights while generating")
	addComputeFlag(c, &g.compute)
}

// genSession is an opened model with its engine and tokenizer.
type genSession struct {
	be  kernels.Backend
	m   *model.Model
	eng *rollout.Engine
	tok *tokenizer.Tokenizer // nil when the model has none and none was given
}

func (s *genSession) close() {
	s.eng.Close()
	s.m.Close()
	closeBackend(s.be, os.Stderr)
}

// openGen opens the model, its adapter, the tokenizer (required when
// needTok) and the engine; log gets the backend chosen.
func openGen(modelDir, adapter string, g *genFlags, needTok bool, log io.Writer) (*genSession, error) {
	if err := checkCompute(g.compute); err != nil {
		return nil, err
	}
	cfg, err := model.LoadConfig(modelDir)
	if err != nil {
		return nil, err
	}
	var tok *tokenizer.Tokenizer
	tokPath := g.tokenizer
	if tokPath == "" {
		if _, err := os.Stat(filepath.Join(modelDir, "tokenizer.json")); err == nil {
			tokPath = modelDir
		} else if needTok {
			return nil, fmt.Errorf("%s has no tokenizer.json: give --tokenizer PATH", modelDir)
		}
	}
	if tokPath != "" {
		if tok, err = tokenizer.Load(tokPath); err != nil {
			return nil, err
		}
		if tok.VocabSize() > cfg.VocabSize {
			return nil, fmt.Errorf("tokenizer %s has %d tokens, more than %s's vocab_size %d", tok.File(), tok.VocabSize(), modelDir, cfg.VocabSize)
		}
	}
	backend := g.backend
	if backend == "" {
		backend = kernels.Auto
	}
	be, chosen, err := kernels.Choose(backend)
	if err != nil {
		return nil, err
	}
	m, err := model.Open(modelDir, be, model.Options{Adapter: adapter, MaxLen: g.maxLen, Compute: g.compute})
	if err == nil {
		fmt.Fprintf(log, "backend %s, compute %s\n", chosen, m.Compute())
	}
	if err != nil {
		closeBackend(be, os.Stderr)
		return nil, err
	}
	eng, err := rollout.New(m, rollout.Options{Batch: g.batch, Pages: g.pages, MergeLoRA: g.mergeLoRA, Tokenizer: tok})
	if err != nil {
		m.Close()
		closeBackend(be, os.Stderr)
		return nil, err
	}
	return &genSession{be: be, m: m, eng: eng, tok: tok}, nil
}

// recordPrompts renders records with the template (default: the model family's).
func (s *genSession) recordPrompts(recs []data.Record, tmplName, formatName string) ([]rollout.Prompt, error) {
	if tmplName == "" {
		tmplName = s.m.Config.ModelType
	}
	tmpl, err := chat.Get(tmplName)
	if err != nil {
		return nil, err
	}
	f, err := format.Get(formatName, format.Options{})
	if err != nil {
		return nil, err
	}
	return rollout.RecordPrompts(recs, tmpl, f, s.tok)
}

func newGenerateCmd() *cobra.Command {
	var g genFlags
	var modelDir, adapter, dataPath, promptIDs, formatName string
	var p rollout.Params
	var temp, topP float64
	c := &cobra.Command{
		Use:   "generate --model DIR [--adapter DIR] (--data F | --prompt-ids F) [--n 8] [--temperature 0.6] [--top-p 0.95] [--top-k 0] [--seed 1] [--max-new-tokens 256]",
		Short: "sample responses with the rollout engine, one JSON line per sample",
		Long: `Sample --n responses per prompt and print one JSON line per sample, in input order:
  {"id","sample","text","token_ids","logprobs","finish_reason"}
token_ids and logprobs are the response's; logprobs[t] is the log-prob of token t under
the model at temperature 1 on unmodified logits (what "train score" computes for
prompt+response). finish_reason is stop (stop id or string), length, or context.

Prompts come from --data (argrl JSONL records, rendered with the chat template and
--format, tokenized with the model's tokenizer.json or --tokenizer) or from
--prompt-ids (JSONL {"id","token_ids"}, for models without a tokenizer; text is then
"" unless a tokenizer is found). Sample i of record id uses the random stream
(--seed, id, i): the same flags give byte-identical output, whatever --batch.
Generation stops at the tokenizer's EOS/end-of-turn ids and config.json's
eos_token_id, at a --stop string, or after --max-new-tokens.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelDir == "" {
				return fmt.Errorf("generate: --model is required")
			}
			if (dataPath == "") == (promptIDs == "") {
				return fmt.Errorf("generate: give exactly one of --data and --prompt-ids")
			}
			p.Temperature, p.TopP, p.MaxNewTokens, p.Stop = float32(temp), float32(topP), g.maxNewTokens, g.stop
			if err := checkGenParams(p, g.batch); err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			var prompts []rollout.Prompt
			var where []string
			if promptIDs != "" {
				cfg, err := model.LoadConfig(modelDir)
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				if prompts, where, err = readPromptIDs(promptIDs, cfg.VocabSize); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
			}
			s, err := openGen(modelDir, adapter, &g, dataPath != "", cmd.ErrOrStderr())
			if err != nil {
				return fmt.Errorf("generate: %w", err)
			}
			defer s.close()
			if dataPath != "" {
				recs, err := data.ReadSpec(dataPath)
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				if prompts, err = s.recordPrompts(recs, g.template, formatName); err != nil {
					return fmt.Errorf("generate: %s: %w", dataPath, err)
				}
				for _, r := range recs {
					where = append(where, fmt.Sprintf("%s: record %q", dataPath, r.ID))
				}
			}
			for i, pr := range prompts {
				if len(pr.IDs) > s.m.MaxLen() {
					return fmt.Errorf("generate: %s: the prompt has %d tokens, more than the model's context of %d (--max-len)", where[i], len(pr.IDs), s.m.MaxLen())
				}
			}
			p.StopIDs = rollout.StopIDs(s.tok, s.m.Config)
			w := bufio.NewWriter(cmd.OutOrStdout())
			prog := metrics.NewCounter(cmd.ErrOrStderr(), "generate", len(prompts))
			for grp, err := range s.eng.Groups(cmd.Context(), prompts, p) {
				if err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				tokens := 0
				for _, smp := range grp.Samples {
					tokens += len(smp.IDs)
					line, err := sampleLine(grp.ID, smp)
					if err != nil {
						return fmt.Errorf("generate: %s, sample %d: %w", where[grp.Index], smp.Index, err)
					}
					if _, err := w.Write(line); err != nil {
						return fmt.Errorf("generate: %w", err)
					}
				}
				if err := w.Flush(); err != nil {
					return fmt.Errorf("generate: %w", err)
				}
				prog.Step(grp.Index+1, nil, tokens)
			}
			st := s.eng.Stats()
			fmt.Fprintf(cmd.ErrOrStderr(), "generate: %d prompts × %d samples: %d new tokens in %.2fs (%.1f tokens/s; prefill %.2fs, %d decode steps %.2fs; at most %d sequences in one step)\n",
				st.Prompts, p.G, st.NewTokens, st.Elapsed.Seconds(), st.TokensPerSec(), st.Prefill.Seconds(), st.DecodeSteps, st.Decode.Seconds(), st.MaxRows)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "Hugging Face model directory (required)")
	f.StringVar(&adapter, "adapter", "", "PEFT LoRA adapter directory to apply")
	f.StringVar(&dataPath, "data", "", "records (argrl JSONL) to answer")
	f.StringVar(&promptIDs, "prompt-ids", "", `JSONL of {"id","token_ids"} prompts (no tokenizer needed)`)
	f.StringVar(&formatName, "format", "tool_call", "output format the prompt asks for: "+strings.Join(format.Names(), ", "))
	f.IntVar(&p.G, "n", 8, "samples per prompt")
	f.Float64Var(&temp, "temperature", 0.6, "sampling temperature (0: greedy)")
	f.Float64Var(&topP, "top-p", 0.95, "nucleus sampling mass (1: off)")
	f.IntVar(&p.TopK, "top-k", 0, "keep the K most likely tokens (0: off)")
	f.Uint64Var(&p.Seed, "seed", 1, "sampling seed")
	addGenFlags(c, &g, 256, "most new tokens per sample")
	return c
}

// checkGenParams rejects bad flag values before the model is loaded.
func checkGenParams(p rollout.Params, batch int) error {
	switch {
	case p.G < 1:
		return fmt.Errorf("--n %d: want ≥ 1", p.G)
	case batch < p.G:
		return fmt.Errorf("--batch %d is smaller than --n %d", batch, p.G)
	case !(p.Temperature >= 0) || math.IsInf(float64(p.Temperature), 0):
		return fmt.Errorf("--temperature %v: want a finite value ≥ 0", p.Temperature)
	case !(p.TopP > 0 && p.TopP <= 1):
		return fmt.Errorf("--top-p %v: want a value in (0, 1]", p.TopP)
	case p.TopK < 0:
		return fmt.Errorf("--top-k %d: want ≥ 0", p.TopK)
	case p.MaxNewTokens < 0:
		return fmt.Errorf("--max-new-tokens %d: want ≥ 0", p.MaxNewTokens)
	}
	return nil
}

// readPromptIDs reads {"id","token_ids"} lines (blank lines skipped; other
// keys ignored). Ids must be unique non-empty strings; errors name FILE:LINE.
func readPromptIDs(path string, vocab int) ([]rollout.Prompt, []string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	r := bufio.NewReaderSize(fh, 1<<20)
	var out []rollout.Prompt
	var where []string
	seen := map[string]int{}
	for n := 1; ; n++ {
		raw, rerr := r.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, n, rerr)
		}
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			var rec struct {
				ID       *string        `json:"id"`
				TokenIDs *[]json.Number `json:"token_ids"`
			}
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&rec); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			at := fmt.Sprintf("%s:%d", path, n)
			switch {
			case rec.ID == nil || *rec.ID == "":
				return nil, nil, fmt.Errorf("%s: key \"id\": missing or empty (it seeds the samples)", at)
			case seen[*rec.ID] > 0:
				return nil, nil, fmt.Errorf("%s: key \"id\": %q repeats line %d", at, *rec.ID, seen[*rec.ID])
			case rec.TokenIDs == nil:
				return nil, nil, fmt.Errorf("%s: key \"token_ids\": missing", at)
			case len(*rec.TokenIDs) == 0:
				return nil, nil, fmt.Errorf("%s: key \"token_ids\": empty prompt (a prompt needs at least one token)", at)
			}
			seen[*rec.ID] = n
			ids := make([]int32, len(*rec.TokenIDs))
			for i, v := range *rec.TokenIDs {
				x, err := strconv.ParseInt(v.String(), 10, 32)
				if err != nil || x < 0 || int(x) >= vocab {
					return nil, nil, fmt.Errorf("%s: key \"token_ids\"[%d]: %s is not a token id in [0, %d)", at, i, v, vocab)
				}
				ids[i] = int32(x)
			}
			out = append(out, rollout.Prompt{ID: *rec.ID, IDs: ids})
			where = append(where, at)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("%s: no prompts", path)
	}
	return out, where, nil
}

// sampleLine renders one output line; log-probs print as the shortest
// decimal that reads back as the same float32 (as `train score` does).
func sampleLine(id string, s rollout.Sample) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString(`{"id":`)
	if err := enc.Encode(id); err != nil {
		return nil, err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	fmt.Fprintf(&b, `,"sample":%d,"text":`, s.Index)
	if err := enc.Encode(s.Text); err != nil {
		return nil, err
	}
	b.Truncate(b.Len() - 1)
	b.WriteString(`,"token_ids":[`)
	for i, id := range s.IDs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	b.WriteString(`],"logprobs":[`)
	for i, lp := range s.LogProbs {
		v := float64(lp)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("log-prob of token %d is %v", i, v)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 32))
	}
	fmt.Fprintf(&b, `],"finish_reason":%q}`+"\n", string(s.Finish))
	return b.Bytes(), nil
}

// evalGenerate is `train eval`'s model-driven path: one greedy response
// per record, stopping at EOS/end of turn, the config's stop strings or
// max_new_tokens (--max-new-tokens, else the config's rollout.max_new_tokens,
// else 512). Each response goes to each as it is done, in record order,
// with its token count.
func evalGenerate(ctx context.Context, f *evalFlags, recs []data.Record, each func(i int, text string, tokens int) error) ([]string, error) {
	g := f.gen
	var stop []string
	if rc := f.run; rc != nil {
		if g.template == "" {
			g.template = rc.Model.Template
		}
		if g.backend == "" {
			g.backend = rc.Model.Backend
		}
		if g.maxLen == 0 {
			g.maxLen = rc.Model.MaxLen
		}
		if g.maxNewTokens == 0 {
			g.maxNewTokens = rc.Rollout.MaxNewTokens
		}
		stop = rc.Rollout.Stop
	}
	if g.maxNewTokens == 0 {
		g.maxNewTokens = 512
	}
	if g.maxNewTokens < 0 || g.batch < 1 {
		return nil, fmt.Errorf("--max-new-tokens %d and --batch %d: want ≥ 0 and ≥ 1", g.maxNewTokens, g.batch)
	}
	stop = append(stop, g.stop...)
	s, err := openGen(f.model, f.adapter, &g, true, os.Stderr)
	if err != nil {
		return nil, err
	}
	defer s.close()
	prompts, err := s.recordPrompts(recs, g.template, f.reward.Format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.dataPath, err)
	}
	// Greedy decoding, group by group (what Engine.Greedy does at once).
	p := rollout.Params{G: 1, MaxNewTokens: g.maxNewTokens, StopIDs: rollout.StopIDs(s.tok, s.m.Config), Stop: stop}
	texts := make([]string, len(prompts))
	for grp, err := range s.eng.Groups(ctx, prompts, p) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.dataPath, err)
		}
		smp := grp.Samples[0]
		texts[grp.Index] = smp.Text
		if err := each(grp.Index, smp.Text, len(smp.IDs)); err != nil {
			return nil, err
		}
	}
	return texts, nil
}
