package main

import "github.com/spf13/cobra"

func init() {
	root.AddCommand(&cobra.Command{Use: "score", Short: "see REFERENCE §8", RunE: notYet("score")})
}
