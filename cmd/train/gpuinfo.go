//go:build argrl_cuda

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/kernels/cuda"
)

// train gpu-info (GPU build only): which CUDA driver and cuBLAS this binary
// found, the entry points it resolved at run time, and the GPU it opens.
func init() {
	root.AddCommand(&cobra.Command{
		Use:   "gpu-info",
		Short: "the CUDA driver, cuBLAS and GPU this binary uses (GPU build)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := cuda.DriverReport()
			fmt.Fprint(cmd.OutOrStdout(), rep)
			if err != nil {
				return err
			}
			be, err := cuda.New(cuda.Options{})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "device: %s\n", be.Device())
			return be.Close()
		},
	})
}
