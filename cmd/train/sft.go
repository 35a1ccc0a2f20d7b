package main

import "github.com/spf13/cobra"

func init() {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "sft --config F [--set k=v]... [--resume]",
		Short: "sft training (REFERENCE §8)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := loadRunConfig("sft", &f); err != nil {
				return err
			}
			return notYet("sft")(cmd, nil)
		},
	}
	addRunFlags(cmd, &f)
	root.AddCommand(cmd)
}
