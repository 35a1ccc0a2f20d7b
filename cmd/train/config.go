package main

import (
	"fmt"
	"strings"

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
	allowChange   []string
	debugTemplate bool
}

func addRunFlags(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.config, "config", "", "YAML config file (keys override the defaults); with --resume the run's own RUN/config.yaml is used when omitted")
	cmd.Flags().StringArrayVar(&f.sets, "set", nil, "override one key, e.g. --set kl.coef=0.01 (repeatable)")
	cmd.Flags().BoolVar(&f.resume, "resume", false, "continue from RUN/checkpoints/latest with the run's recorded config (RUN/config.yaml; no --config needed)")
	cmd.Flags().StringVar(&f.resumeFrom, "resume-from", "", "continue from the named checkpoint, e.g. step-000100 (= --resume --set checkpoint.resume_from=NAME)")
	cmd.Flags().StringArrayVar(&f.allowChange, "allow-config-change", nil, "with --resume: let KEY (or every key of a section) differ from the recorded config (repeatable); the change is appended to RUN/config.history")
	cmd.Flags().BoolVar(&f.debugTemplate, "debug-template", false, "print the first training record as the chat template renders it (prompt, loss target, token counts) and exit")
	_ = cmd.RegisterFlagCompletionFunc("set", completeSet)
	_ = cmd.RegisterFlagCompletionFunc("allow-config-change", completeKeys)
}

// resumeHelp is the training commands' help on --resume.
var resumeHelp = `A resumed run continues its own config: --resume --set run.dir=RUN reloads
RUN/config.yaml (no --config needed). A key that would then differ from
the recorded config (through --config, --set or ARGRL_*) is refused and
named, old → new, unless --allow-config-change KEY accepts it or it is
safe to change on resume: ` + strings.Join(config.ResumeSafe, ", ") + `.
RUN/config.yaml is never rewritten; accepted changes are appended to
RUN/config.history.`

// loadRunConfig loads and validates the config for algo: a fresh run's
// from --config, a resumed run's from its own RUN/config.yaml (or
// --config), any changed key refused (config.LoadResume).
func loadRunConfig(algo string, f *runFlags) (config.Config, error) {
	for _, s := range f.sets {
		if k, v, _ := strings.Cut(s, "="); strings.TrimSpace(k) == "algo" && strings.TrimSpace(v) != algo {
			return config.Config{}, fmt.Errorf("--set %s: train %s trains algo %s; run train %s for that", s, algo, algo, strings.TrimSpace(v))
		}
	}
	sets := append([]string{"algo=" + algo}, f.sets...)
	if f.resumeFrom != "" {
		sets = append(sets, "checkpoint.resume_from="+f.resumeFrom)
		f.resume = true
	}
	if len(f.allowChange) > 0 && !f.resume {
		return config.Config{}, fmt.Errorf("%s: --allow-config-change applies to a resumed run; add --resume", algo)
	}
	if f.resume {
		return config.LoadResume(f.config, sets, f.allowChange)
	}
	if f.config == "" {
		return config.Config{}, fmt.Errorf("%s: --config is required (or --resume --set run.dir=RUN to continue a run with its own config)", algo)
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
