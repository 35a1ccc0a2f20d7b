package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"golang.org/x/text/unicode/norm"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/model/chat"
	"github.com/argrl/argrl/model/tokenizer"
	"github.com/argrl/argrl/model/tokenizer/bpetrain"
)

// train data bpe --out DIR [--vocab-size 2048] [--template qwen2.5] [--isolate-prefix] FILE...
// Trains the demo's byte-level BPE on records rendered exactly as training
// will render them (chat template + output format), writes tokenizer.json
// and tokenizer_config.json, reloads them with model/tokenizer and checks
// the round trip.
func init() { dataCmd.AddCommand(dataBPECmd()) }

func dataBPECmd() *cobra.Command {
	var out, tmplName, formatName, system string
	cfg := bpetrain.Config{VocabSize: 2048, MinFrequency: 2}
	maxLen := 4096
	c := &cobra.Command{
		Use:   "bpe --out DIR [--vocab-size 2048] [--template qwen2.5] [--format tool_call] FILE...",
		Short: "train a small byte-level BPE tokenizer (Hugging Face tokenizer.json) on JSONL records",
		Long: `Train a byte-level BPE on the records of FILE... rendered as chat text (the
--template chat layout with tools, the user turn, and the gold answer in
--format), and write DIR/tokenizer.json and DIR/tokenizer_config.json in
Qwen2's Hugging Face layout with the ChatML added tokens. --vocab-size counts
the 256 byte tokens, the merges and the added tokens. The written files are
reloaded with argrl's tokenizer: encode→decode must give back every sampled
text; token counts per record are printed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("data bpe: --out is required")
			}
			tmpl, err := chat.New(tmplName, chat.Options{System: system})
			if err != nil {
				return fmt.Errorf("data bpe: %w", err)
			}
			f, err := format.Get(formatName, format.Options{})
			if err != nil {
				return fmt.Errorf("data bpe: %w", err)
			}
			var texts []string
			var rendered []chat.Rendered
			for _, path := range args {
				recs, err := data.ReadFile(path)
				if err != nil {
					return fmt.Errorf("data bpe: %w", err)
				}
				for _, rec := range recs {
					r, err := tmpl.Render(rec, f, true)
					if err != nil {
						return fmt.Errorf("data bpe: %s: %w", path, err)
					}
					texts = append(texts, r.Text)
					rendered = append(rendered, r)
				}
			}
			bpe, err := bpetrain.Train(texts, cfg)
			if err != nil {
				return fmt.Errorf("data bpe: %w", err)
			}
			if err := bpe.WriteDir(out, maxLen); err != nil {
				return fmt.Errorf("data bpe: %w", err)
			}
			tok, err := tokenizer.Load(out)
			if err != nil {
				return fmt.Errorf("data bpe: reloading what was written: %w", err)
			}
			st, err := corpusStats(tok, rendered, 2000)
			if err != nil {
				return fmt.Errorf("data bpe: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d texts: vocabulary %d (%d byte tokens, %d merges, %d added); wrote %s\n"+
				"tokens per record over %d sampled: prompt mean %.1f, target mean %.1f, total mean %.1f p95 %d max %d; encode→decode round trip OK\n",
				len(texts), tok.VocabSize(), 256, len(bpe.Merges), len(bpe.Added), out,
				st.n, st.prompt, st.target, st.prompt+st.target, st.p95, st.max)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&out, "out", "", "output directory for tokenizer.json and tokenizer_config.json (required)")
	fl.IntVar(&cfg.VocabSize, "vocab-size", cfg.VocabSize, "total vocabulary: bytes, merges and added tokens")
	fl.IntVar(&cfg.MinFrequency, "min-frequency", cfg.MinFrequency, "stop merging when the best pair is rarer")
	fl.StringVar(&tmplName, "template", "qwen2.5", "chat template the texts are rendered with")
	fl.StringVar(&formatName, "format", "tool_call", "output format of the gold answers")
	fl.StringVar(&system, "system", "", "system prompt for records without one (empty: the template's default)")
	fl.BoolVar(&cfg.IsolatePrefix, "isolate-prefix", false, "never merge the space or quote before a word into it (\" word\" = Ġ + tokens(\"word\")): copying words into argument values becomes token-for-token")
	fl.IntVar(&maxLen, "model-max-length", maxLen, "model_max_length written to tokenizer_config.json")
	return c
}

type bpeStats struct {
	n              int
	prompt, target float64
	p95, max       int
}

// corpusStats encodes up to limit records (evenly spaced) with the loaded
// tokenizer, checks that decoding gives back the NFC text, and returns the
// token counts.
func corpusStats(tok *tokenizer.Tokenizer, rs []chat.Rendered, limit int) (bpeStats, error) {
	step := max(1, len(rs)/limit)
	var st bpeStats
	var totals []int
	for i := 0; i < len(rs); i += step {
		e := rs[i].Encode(tok)
		if got, want := tok.Decode(e.IDs, false), norm.NFC.String(rs[i].Prompt)+norm.NFC.String(rs[i].Target); got != want {
			return st, fmt.Errorf("round trip fails on record %d: decode(encode(text)) differs from the text", i)
		}
		st.n++
		st.prompt += float64(e.PromptLen)
		st.target += float64(len(e.IDs) - e.PromptLen)
		totals = append(totals, len(e.IDs))
	}
	if st.n == 0 {
		return st, nil
	}
	st.prompt /= float64(st.n)
	st.target /= float64(st.n)
	sort.Ints(totals)
	st.p95, st.max = totals[len(totals)*95/100], totals[len(totals)-1]
	return st, nil
}
