package main

import "github.com/spf13/cobra"

func init() {
	root.AddCommand(&cobra.Command{Use: "plot", Short: "see REFERENCE §8", RunE: notYet("plot")})
}
