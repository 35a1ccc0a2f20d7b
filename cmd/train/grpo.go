package main

import "github.com/spf13/cobra"

func init() {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "grpo --config F [--set k=v]... [--resume]",
		Short: "grpo training (REFERENCE §8)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := loadRunConfig("grpo", &f); err != nil {
				return err
			}
			return notYet("grpo")(cmd, nil)
		},
	}
	addRunFlags(cmd, &f)
	root.AddCommand(cmd)
}
