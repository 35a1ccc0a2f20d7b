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

// reported is a failure already printed (before the ranks' Comm closed).
type reported struct{ err error }

func (r *reported) Error() string { return r.err.Error() }
func (r *reported) Unwrap() error { return r.err }

// reportFailure prints a failure, once per job: from rank 0, and from a rank > 0
// only when rank 0 does not know it.
func reportFailure(err error) {
	switch {
	case procRank == 0:
		fmt.Fprintln(os.Stderr, "train:", redact.Text(err.Error()))
	case !trainer.Shared(err):
		fmt.Fprintf(os.Stderr, "train: rank %d: %s\n", procRank, redact.Text(err.Error()))
	}
}

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
		var done *reported
		if !errors.As(err, &done) {
			reportFailure(err)
		}
		var in *trainer.Interrupted
		if errors.As(err, &in) {
			os.Exit(in.ExitCode())
		}
		os.Exit(1)
	}
}
