package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/trainer/config"
)

// Data-parallel training (README.md, "Several processes, one or many
// nodes"): bin/train-mpi (make build-mpi) started by mpirun or srun runs
// one rank per process; any other start is one process (dist.Open). Rank 0
// prints the progress and the messages and writes the run directory; the
// other ranks print nothing but a failure of their own, as
// "train: rank R: …" (main).

// procRank is this process's rank once openRanks ran (0 before).
var procRank int

// ranks is this process's part of a run: its Comm, the backend opened for
// it when there are several ranks (nil: the recipe opens model.backend),
// and where its messages go.
type ranks struct {
	comm dist.Comm
	be   kernels.Backend
	log  io.Writer
}

// openRanks opens this process's Comm (the collectives' timeout is
// dist.timeout_s) and, with several ranks, its backend: model.backend,
// auto meaning cuda when the binary has it (every rank alike; with NCCL in
// the CUDA+MPI build, on the GPU of the local rank) and cpu otherwise.
func openRanks(cmd *cobra.Command, cfg config.Config) (*ranks, error) {
	c, err := dist.Open(dist.Options{Timeout: time.Duration(cfg.Dist.TimeoutS * float64(time.Second))})
	if err != nil {
		return nil, err
	}
	procRank = c.Rank()
	r := &ranks{comm: c, log: cmd.ErrOrStderr()}
	if c.Rank() > 0 {
		r.log = io.Discard
	}
	if c.Size() == 1 {
		return r, nil
	}
	// every CUDA mode, and auto on a GPU, moves gradients with NCCL in the
	// CUDA+MPI build; auto without a GPU is cpu, said in one line
	be, dc, line, err := dist.ChooseBackend(c, cfg.Model.Backend)
	if err = c.Check(err); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf(`key "model.backend": %w`, err)
	}
	fmt.Fprintf(r.log, "dist: backend %s\n", line)
	r.be, r.comm = be, dc
	return r, nil
}

// close ends the Comm (MPI_Finalize; with NCCL, before the backend goes)
// and returns err, or the Comm's failure when err is nil. With several
// ranks a failure is printed first (main prints it otherwise): MPI_Finalize
// waits for every rank, so rank 0's message is out before a rank's
// non-zero exit makes the launcher end the job.
func (r *ranks) close(err error) error {
	if err != nil && r.comm.Size() > 1 {
		reportFailure(err)
		err = &reported{err}
	}
	if cerr := r.comm.Close(); err == nil && cerr != nil && !errors.Is(cerr, dist.ErrClosed) {
		return cerr
	}
	return err
}
