package main

import "github.com/spf13/cobra"

func init() {
	root.AddCommand(&cobra.Command{Use: "tokenize", Short: "see REFERENCE §8", RunE: notYet("tokenize")})
}
