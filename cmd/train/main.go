// Command train is argrl's single binary: SFT, GRPO, PPO, evaluation and the
// tools around them (docs/contracts.md §8). Each subcommand lives in its own file and
// registers itself on root in an init function.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

var root = &cobra.Command{
	Use:           "train",
	Short:         "argrl: post-training for tool-calling LLMs (LoRA SFT, GRPO, PPO)",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func main() {
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}
