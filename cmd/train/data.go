package main

import "github.com/spf13/cobra"

var dataCmd = &cobra.Command{Use: "data", Short: "dataset tools"}

func init() {
	dataCmd.AddCommand(&cobra.Command{Use: "convert", RunE: notYet("data convert")})
	root.AddCommand(dataCmd)
}
