package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/trainer"
)

// runFlags are the flags every training subcommand shares (REFERENCE §8).
type runFlags struct {
	config string
	sets   []string
	resume bool
}

func addRunFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.config, "config", "", "YAML config file (keys override the defaults)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override one key, e.g. --set kl.coef=0.01 (repeatable)")
	cmd.Flags().BoolVar(&f.resume, "resume", false, "continue from RUN/checkpoints/latest")
}

// loadRunConfig loads and validates the config for algo.
func loadRunConfig(algo string, f *runFlags) (trainer.Config, error) {
	if f.config == "" {
		return trainer.Config{}, fmt.Errorf("%s: --config is required", algo)
	}
	sets := append([]string{"algo=" + algo}, f.sets...)
	return trainer.Load(f.config, sets)
}
