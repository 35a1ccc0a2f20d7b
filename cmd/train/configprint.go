package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/argrl/argrl/trainer/config"
)

// train config print [--config F] [--set k=v]...
//
// The full resolved config, every default included, as YAML that loads
// back to the same config (and config hash).
func init() {
	cfgCmd := &cobra.Command{
		Use:   "config",
		Short: "inspect run configs (print the resolved config with every default)",
		Args:  cobra.NoArgs,
	}
	var path string
	var sets []string
	printCmd := &cobra.Command{
		Use:   "print [--config F] [--set k=v]...",
		Short: "print the full resolved config (defaults, --config, ARGRL_*, --set) as YAML",
		Long: `Print the resolved config as YAML, every key with its value: the defaults,
then the --config file, ARGRL_* variables and --set flags over them, checked
as a training command checks them (with algo grpo or ppo, the RL keys too).
The output is a config file: give it back with --config and the run is the
same one (same config hash). Without --config it is every default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := config.Load(path, sets)
			if err != nil {
				return err
			}
			if c.Algo == "grpo" || c.Algo == "ppo" {
				if err := c.ValidateRL(); err != nil {
					return err
				}
			}
			b, err := yaml.Marshal(c)
			if err != nil {
				return fmt.Errorf("config print: %w", err)
			}
			src := "the defaults"
			if path != "" {
				src = "the defaults, " + path
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# train config print: %s, ARGRL_* and --set; every key\n%s", src, b)
			return nil
		},
	}
	printCmd.Flags().StringVar(&path, "config", "", "YAML config file (keys override the defaults)")
	printCmd.Flags().StringArrayVar(&sets, "set", nil, "override one key, e.g. --set kl.coef=0.01 (repeatable)")
	_ = printCmd.RegisterFlagCompletionFunc("set", completeSet)
	cfgCmd.AddCommand(printCmd)
	root.AddCommand(cfgCmd)
}

// completeSet completes --set: a config key followed by "=" (no space, so
// the value follows), or nothing once the "=" is there.
func completeSet(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if strings.Contains(toComplete, "=") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, k := range config.Keys() {
		if strings.HasPrefix(k, toComplete) {
			out = append(out, k+"=")
		}
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// completeKeys completes a flag that takes a config key.
func completeKeys(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, k := range config.Keys() {
		if strings.HasPrefix(k, toComplete) {
			out = append(out, k)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
