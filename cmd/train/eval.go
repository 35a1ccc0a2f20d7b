package main

import "github.com/spf13/cobra"

func init() {
	root.AddCommand(&cobra.Command{Use: "eval", Short: "see REFERENCE §8", RunE: notYet("eval")})
}
