package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/metrics"
)

// train score --model DIR [--adapter DIR] (--ids 1,2,3 | --input F.jsonl)
//
// One JSON line per input sequence: {"token_ids":[...],"logprobs":[null,
// lp1, ...]} with logprobs[t] = log p(token t | tokens < t) (docs/contracts.md §8).
// Works on a model directory without tokenizer files. Every input is
// validated before anything is printed; nothing but JSON goes to stdout
// (progress goes to stderr).
func init() { root.AddCommand(newScoreCmd()) }

func newScoreCmd() *cobra.Command {
	var modelDir, adapter, ids, input, backend, compute string
	cmd := &cobra.Command{
		Use:   "score --model DIR [--adapter DIR] (--ids 1,2,3 | --input F.jsonl)",
		Short: "print per-token log-probs of token id sequences as JSON lines",
		Long: "Scores token id sequences with the model at DIR (and a PEFT LoRA adapter) and prints\n" +
			`{"token_ids":[...],"logprobs":[null, lp1, ...]} per sequence, where logprobs[t] = log p(token t | tokens < t).` + "\n" +
			`--input reads JSON lines with a "token_ids" array (other keys are ignored).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true, // stdout carries only JSON
		SilenceErrors: true, // main prints the error
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelDir == "" {
				return fmt.Errorf("score: --model is required")
			}
			if (ids == "") == (input == "") {
				return fmt.Errorf("score: give exactly one of --ids and --input")
			}
			var seqs [][]int32
			var where []string // for error messages
			if ids != "" {
				s, err := parseIDs(ids)
				if err != nil {
					return fmt.Errorf("score: --ids: %w", err)
				}
				seqs, where = [][]int32{s}, []string{"--ids"}
			} else {
				var err error
				if seqs, where, err = readTokenJSONL(input); err != nil {
					return fmt.Errorf("score: %w", err)
				}
			}
			cfg, err := model.LoadConfig(modelDir)
			if err != nil {
				return fmt.Errorf("score: %w", err)
			}
			for i, s := range seqs {
				for t, id := range s {
					if int(id) >= cfg.VocabSize {
						return fmt.Errorf("score: %s: token %d: id %d is outside the vocabulary of %s (vocab_size %d)", where[i], t, id, modelDir, cfg.VocabSize)
					}
				}
			}
			if err := checkCompute(compute); err != nil {
				return fmt.Errorf("score: %w", err)
			}
			be, chosen, err := kernels.Choose(backend)
			if err != nil {
				return fmt.Errorf("score: %w", err)
			}
			defer closeBackend(be, cmd.ErrOrStderr())
			m, err := model.Open(modelDir, be, model.Options{Adapter: adapter, Compute: compute})
			if err != nil {
				return fmt.Errorf("score: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "score: backend %s, compute %s\n", chosen, m.Compute())
			defer m.Close()
			w := bufio.NewWriter(cmd.OutOrStdout())
			prog := metrics.NewCounter(cmd.ErrOrStderr(), "score", len(seqs))
			for i, s := range seqs {
				lps, err := m.LogProbs([][]int32{s}, true)
				if err != nil {
					return fmt.Errorf("score: %s: %w", where[i], err)
				}
				line, err := scoreLine(s, lps[0])
				if err != nil {
					return fmt.Errorf("score: %s: %w", where[i], err)
				}
				if _, err := w.Write(line); err != nil {
					return fmt.Errorf("score: %w", err)
				}
				prog.Step(i+1, nil, len(s))
			}
			return w.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&modelDir, "model", "", "Hugging Face model directory (config.json + safetensors; required)")
	f.StringVar(&adapter, "adapter", "", "PEFT LoRA adapter directory to apply")
	f.StringVar(&ids, "ids", "", "one sequence of comma-separated token ids")
	f.StringVar(&input, "input", "", `JSONL file of {"token_ids":[...]} objects`)
	addComputeFlag(cmd, &compute)
	f.StringVar(&backend, "backend", kernels.Auto, "compute backend ("+strings.Join(kernels.Names(), ", ")+", or auto: cuda when the binary has it and a GPU answers, else cpu)")
	return cmd
}

// parseIDs parses "1,2,3" (spaces allowed around items).
func parseIDs(s string) ([]int32, error) {
	parts := strings.Split(s, ",")
	out := make([]int32, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		v, err := strconv.ParseInt(p, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("item %d %q is not a non-negative integer token id", i+1, p)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// readTokenJSONL reads {"token_ids":[...]} lines; blank lines are skipped.
func readTokenJSONL(path string) ([][]int32, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var seqs [][]int32
	var where []string
	for n := 1; ; n++ {
		raw, err := r.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if line := bytes.TrimSpace(raw); len(line) > 0 {
			var rec struct {
				TokenIDs *[]json.Number `json:"token_ids"`
			}
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if e := dec.Decode(&rec); e != nil {
				return nil, nil, fmt.Errorf("%s:%d: %v", path, n, e)
			}
			if rec.TokenIDs == nil || len(*rec.TokenIDs) == 0 {
				return nil, nil, fmt.Errorf("%s:%d: key \"token_ids\": missing or empty", path, n)
			}
			s := make([]int32, len(*rec.TokenIDs))
			for i, v := range *rec.TokenIDs {
				x, e := strconv.ParseInt(v.String(), 10, 32)
				if e != nil || x < 0 {
					return nil, nil, fmt.Errorf("%s:%d: key \"token_ids\"[%d]: %s is not a non-negative integer token id", path, n, i, v)
				}
				s[i] = int32(x)
			}
			seqs = append(seqs, s)
			where = append(where, fmt.Sprintf("%s:%d", path, n))
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(seqs) == 0 {
		return nil, nil, fmt.Errorf("%s: no token_ids lines", path)
	}
	return seqs, where, nil
}

// scoreLine renders one output line; log-probs print as the shortest
// decimal that reads back as the same float32.
func scoreLine(ids []int32, lp []float32) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"token_ids":[`)
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	b.WriteString(`],"logprobs":[null`)
	for t := 1; t < len(lp); t++ {
		v := float64(lp[t])
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("log-prob of token %d is %v", t, v)
		}
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 32))
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}
