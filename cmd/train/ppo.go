package main

import "github.com/spf13/cobra"

func init() {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "ppo --config F [--set k=v]... [--resume]",
		Short: "ppo training (REFERENCE §8)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := loadRunConfig("ppo", &f); err != nil {
				return err
			}
			return notYet("ppo")(cmd, nil)
		},
	}
	addRunFlags(cmd, &f)
	root.AddCommand(cmd)
}
