// Command train is argrl's single binary: SFT, GRPO, PPO, evaluation and the
// tools around them (docs/contracts.md §8). Each subcommand lives in its own file and
// registers itself on root in an init function.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/internal/redact"
	"github.com/argrl/argrl/trainer"
)

var root = &cobra.Command{
	Use:           "train",
	Short:         "argrl: post-training for tool-calling LLMs (LoRA SFT, GRPO, PPO)",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// main prints a failure as "train: <error>" (URL passwords masked) and
// exits 1, or 128 + the signal's number (130 SIGINT, 143 SIGTERM) for a
// training run stopped by a signal after its checkpoint. A rank > 0 of a
// data-parallel run prints "train: rank R: <error>", and nothing for a
// failure every rank shares (rank 0 prints that one).
func main() {
	if err := root.Execute(); err != nil {
		switch {
		case procRank == 0:
			fmt.Fprintln(os.Stderr, "train:", redact.Text(err.Error()))
		case !trainer.Shared(err):
			fmt.Fprintf(os.Stderr, "train: rank %d: %s\n", procRank, redact.Text(err.Error()))
		}
		var in *trainer.Interrupted
		if errors.As(err, &in) {
			os.Exit(in.ExitCode())
		}
		os.Exit(1)
	}
}
