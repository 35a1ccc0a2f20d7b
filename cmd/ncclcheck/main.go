// Command ncclcheck is the multi-GPU check of make gpu-check
// (dist/nccl-check.sh): run as one rank per GPU,
//
//	mpirun -np 2 bin/ncclcheck
//
// it opens the CUDA backend on its local rank's GPU and an NCCL Comm over
// every rank, all-reduces and broadcasts known buffers, checks the results
// byte for byte against the rank-order sum computed on the host and
// against the MPI path on the CPU backend, times a large all-reduce, and
// prints PASS or FAIL (exit status 1). It needs -tags argrl_cuda,argrl_mpi,
// a GPU per rank, and libnccl.so.2 at run time.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ncclcheck: FAIL:", err)
		os.Exit(1)
	}
}
