package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/config"
)

// runFlags are the flags every training subcommand shares (docs/contracts.md §8).
type runFlags struct {
	config        string
	sets          []string
	resume        bool
	resumeFrom    string
	debugTemplate bool
}

func addRunFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.config, "config", "", "YAML config file (keys override the defaults)")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override one key, e.g. --set kl.coef=0.01 (repeatable)")
	cmd.Flags().BoolVar(&f.resume, "resume", false, "continue from RUN/checkpoints/latest")
	cmd.Flags().StringVar(&f.resumeFrom, "resume-from", "", "continue from the named checkpoint, e.g. step-000100 (= --resume --set checkpoint.resume_from=NAME)")
	cmd.Flags().BoolVar(&f.debugTemplate, "debug-template", false, "print the first training record as the chat template renders it (prompt, loss target, token counts) and exit")
}

// loadRunConfig loads and validates the config for algo.
func loadRunConfig(algo string, f *runFlags) (config.Config, error) {
	if f.config == "" {
		return config.Config{}, fmt.Errorf("%s: --config is required", algo)
	}
	sets := append([]string{"algo=" + algo}, f.sets...)
	if f.resumeFrom != "" {
		sets = append(sets, "checkpoint.resume_from="+f.resumeFrom)
		f.resume = true
	}
	return config.Load(f.config, sets)
}

// printDebugTemplate is --debug-template: the first training record as the
// model sees it, without loading the weights.
func printDebugTemplate(cmd *cobra.Command, cfg config.Config) error {
	s, err := trainer.NewSetup(cfg, trainer.SetupOptions{NoModel: true, Log: cmd.ErrOrStderr()})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.DebugTemplate(cmd.OutOrStdout())
}
