//go:build argrl_cuda

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/kernels/cuda"
	"github.com/argrl/argrl/kernels/cuda/cudalib"
)

// train gpu-info (GPU build only): each NVIDIA library file this binary
// opened (driver, cuBLASLt, cuBLAS) with its version and where it was
// found, the NCCL it would open, the entry points it resolved at run
// time, and the GPU it opens.
func init() {
	root.AddCommand(&cobra.Command{
		Use:   "gpu-info",
		Short: "the CUDA driver, cuBLAS and GPU this binary uses (GPU build)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := cuda.DriverReport()
			fmt.Fprint(cmd.OutOrStdout(), rep)
			// NCCL is opened only by the CUDA+MPI build with 2+ ranks: say
			// which file that would be
			if nc, nerr := cudalib.System().Find(cudalib.NCCL, 0); nerr == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "found NCCL: %s (opened by the CUDA+MPI build with 2 or more ranks)\n", nc[0])
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "found NCCL: none (%v)\n", nerr)
			}
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
