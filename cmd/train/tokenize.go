package main

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/argrl/argrl/model/tokenizer"
	"github.com/spf13/cobra"
)

// train tokenize --tokenizer PATH [--no-special] TEXT...
// One JSON line per text: {"ids":[...],"offsets":[[start,end],...]}, byte
// offsets into the text. Nothing but JSON goes to stdout.
func init() {
	var path string
	var noSpecial bool
	cmd := &cobra.Command{
		Use:   "tokenize --tokenizer PATH [--no-special] TEXT...",
		Short: "print token ids and byte offsets of each TEXT as JSON lines",
		Long: "Encodes each TEXT with the tokenizer.json at PATH (a file or a model directory) and prints\n" +
			`{"ids":[...],"offsets":[[start,end],...]} per text, offsets in bytes. Special tokens written in the` + "\n" +
			"text are always recognized; --no-special only leaves out the ones the tokenizer adds itself (Llama-3.1's BOS).",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if path == "" {
				return fmt.Errorf("tokenize: --tokenizer is required")
			}
			tok, err := tokenizer.Load(path)
			if err != nil {
				return fmt.Errorf("tokenize: %w", err)
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			enc := json.NewEncoder(w)
			for _, text := range args {
				ids, offs := tok.Encode(text, !noSpecial)
				line := struct {
					IDs     []int32  `json:"ids"`
					Offsets [][2]int `json:"offsets"`
				}{ids, offs}
				if err := enc.Encode(line); err != nil {
					return fmt.Errorf("tokenize: %w", err)
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&path, "tokenizer", "", "tokenizer.json or a model directory holding one (required)")
	cmd.Flags().BoolVar(&noSpecial, "no-special", false, "do not add the tokenizer's own special tokens (BOS)")
	root.AddCommand(cmd)
}
