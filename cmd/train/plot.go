package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/trainer/metrics"
)

// train plot RUN [--out DIR]: PNG curves of RUN/metrics.jsonl (loss, lr,
// grad norm, eval metrics; reward, KL, clip fraction and entropy for RL
// runs), written to DIR (default RUN/plots). The written paths go to stderr.
func init() {
	var out string
	cmd := &cobra.Command{
		Use:   "plot RUN [--out DIR]",
		Short: "write PNG curves of RUN/metrics.jsonl (default into RUN/plots)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run := args[0]
			if out == "" {
				out = filepath.Join(run, "plots")
			}
			files, err := metrics.Plot(filepath.Join(run, metrics.File), out)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", f)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output directory (default RUN/plots)")
	root.AddCommand(cmd)
}
