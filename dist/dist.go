// Package dist is argrl's communication layer for data-parallel training:
// one Comm per process (a rank), with the collectives a training step needs.
//
// Implementations:
//   - Single: one process, every collective is a local no-op. The default.
//   - MPI (build tag argrl_mpi, cgo, OpenMPI): ranks launched by mpirun or
//     srun. Device buffers of any backend are staged through host memory.
//   - NCCL (build tags argrl_cuda,argrl_mpi): buffers of the CUDA backend
//     move GPU to GPU through libnccl.so.2, loaded at run time; MPI
//     bootstraps it and carries the host collectives. See OpenBackend.
//
// # Determinism
//
// AllReduce sums in a fixed order on every implementation: element i of
// the result is ((x₀[i] + x₁[i]) + x₂[i]) + … + x_{N−1}[i], x_r being rank
// r's buffer, each addition rounded to float32. It is built from data
// movement only (an all-to-all that hands each rank one slice of every
// rank's buffer, a local rank-order sum of that slice, an all-gather of
// the sums), never from MPI_SUM or NCCL's reductions, whose association
// depends on the algorithm the library picks for a message size,
// topology, transport and version. So two runs with the same number of
// ranks are byte-identical, the MPI (CPU) and NCCL (GPU) paths add in the
// same order, and every rank holds the same bytes. The cost is that of a
// ring all-reduce: each rank sends and receives 2·(N−1)/N of the buffer.
//
// One rank and N ranks are not byte-identical in general: with one rank
// the caller sums the whole batch in its own order; with N ranks each
// rank sums its share and AllReduce adds the N partial sums as above. For
// two ranks the result is fl(g₀ + g₁), one rounding of the exact sum of
// the two partial sums; it equals the one-rank value exactly when the
// one-rank caller forms the same two partial sums and adds them once, and
// otherwise differs by float32 rounding only (any association of k terms
// is within about (k−1)·2⁻²⁴·Σ|terms| of the exact sum).
//
// # Failures
//
// A collective that does not complete within Options.Timeout, and any
// error MPI or NCCL reports during a collective, is unrecoverable: the
// rank prints "dist: rank R: <op>: <why>; aborting every rank" to stderr
// and aborts the whole job (MPI_Abort), so no rank hangs. Errors of the
// caller's own (an argument, a rank's training step) are returned; Check
// at step boundaries makes every rank learn them, so all ranks stop
// together with the failing rank's message.
package dist

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/argrl/argrl/kernels"
)

// Comm is one rank's view of the ranks of a job. Every rank must call the
// same collectives in the same order with matching arguments; a mismatch
// the layer can see (another collective, another root, another element
// count) is returned as the same error on every rank. Methods are safe for
// concurrent use (they serialize), but each rank must issue its
// collectives in one order.
type Comm interface {
	// Rank is this process's rank in [0, Size).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// LocalRank is this process's rank among the ranks on its node (it
	// chooses the GPU).
	LocalRank() int

	// AllReduce replaces each of bufs, F32 buffers of be, with the sum of
	// that buffer over all ranks, added in rank order (package comment).
	// The buffers are reduced as one concatenation, whose length every rank
	// must agree on.
	AllReduce(be kernels.Backend, bufs ...kernels.Buffer) error
	// Broadcast copies root's bufs (F32 buffers of be) into every rank's
	// bufs, which must have the same lengths.
	Broadcast(be kernels.Backend, root int, bufs ...kernels.Buffer) error
	// BroadcastBytes returns root's b on every rank (other ranks' b is
	// ignored). For small host data: configs, ids, seeds.
	BroadcastBytes(root int, b []byte) ([]byte, error)
	// AllGather returns every rank's b, indexed by rank. Lengths may
	// differ; for small host data (metrics, counters).
	AllGather(b []byte) ([][]byte, error)
	// Barrier returns once every rank has called it.
	Barrier() error
	// Check is an all-gather of each rank's err (nil: no failure), for step
	// boundaries. With one rank it returns err. With several it returns nil
	// when no rank failed, otherwise on every rank a *RankError per failed
	// rank in rank order (joined with errors.Join when several): "rank R:
	// <message>". On the failing rank the RankError unwraps to err.
	Check(err error) error
	// Close releases the communicator (MPI_Finalize for MPI). Every rank
	// must call it; later calls of any method fail.
	Close() error
}

// DefaultTimeout bounds every collective when Options.Timeout is 0.
const DefaultTimeout = 10 * time.Minute

// Options configure a Comm.
type Options struct {
	// Timeout bounds each collective, from this rank's call until it
	// completes: it must exceed the longest time a rank may wait for the
	// slowest one (the imbalance of a step, not the step). 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

func (o Options) timeout() (time.Duration, error) {
	switch {
	case o.Timeout < 0:
		return 0, fmt.Errorf("dist: negative timeout %v", o.Timeout)
	case o.Timeout == 0:
		return DefaultTimeout, nil
	}
	return o.Timeout, nil
}

// RankError is one rank's failure as Check reports it on every rank.
type RankError struct {
	Rank int
	Msg  string
	err  error // the original error, on the failing rank only
}

func (e *RankError) Error() string { return "rank " + strconv.Itoa(e.Rank) + ": " + e.Msg }

// Unwrap returns the failing rank's own error (nil on the other ranks).
func (e *RankError) Unwrap() error { return e.err }

// ErrClosed is returned by every method of a closed Comm.
var ErrClosed = errors.New("dist: communicator is closed")

// Open returns the Comm for this process: MPI when it was started by an
// MPI launcher (mpirun, or srun with PMI/PMIx) and the binary was built
// with MPI, Single otherwise. A launch of several ranks of a binary built
// without MPI is an error, so N copies never train alone side by side.
func Open(opt Options) (Comm, error) {
	if _, err := opt.timeout(); err != nil {
		return nil, err
	}
	n, launched := launchedSize()
	if !launched {
		return Single(), nil
	}
	if !MPIAvailable {
		if n > 1 {
			return nil, fmt.Errorf("dist: launched as one of %d ranks, but this binary was built without MPI: build bin/train-mpi (make build-mpi)", n)
		}
		return Single(), nil
	}
	return MPI(opt)
}

// launchedSize reports whether an MPI launcher started this process, and
// the job size it announced (0 when it says none). A one-task srun step
// without PMIx is not a launch: there is nothing to join.
func launchedSize() (int, bool) {
	if n, ok := envInt("OMPI_COMM_WORLD_SIZE"); ok {
		return n, true
	}
	if n, ok := envInt("PMI_SIZE"); ok {
		return n, true
	}
	_, pmix := os.LookupEnv("PMIX_RANK")
	if n, ok := envInt("SLURM_STEP_NUM_TASKS"); ok && (n > 1 || pmix) {
		return n, true
	}
	return 0, pmix
}

// envInt reads a positive count from the environment: (0, true) when set
// but not a positive integer.
func envInt(name string) (int, bool) {
	s, ok := os.LookupEnv(name)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, true
	}
	return n, true
}

// deviceBackend, set by the NCCL build, opens a device backend for a rank
// of c and the Comm that moves its buffers (ok false: not a device name).
var deviceBackend func(c Comm, name string) (be kernels.Backend, dc Comm, ok bool, err error)

// OpenBackend opens the named kernels backend for this rank and returns
// the Comm to use with it (ChooseBackend without its line).
func OpenBackend(c Comm, name string) (kernels.Backend, Comm, error) {
	be, dc, _, err := ChooseBackend(c, name)
	return be, dc, err
}

// ChooseBackend opens the named kernels backend for this rank, returns the
// Comm to use with it, and a line saying which backend it is (for "auto":
// which it picked and why). In a build with NCCL (argrl_cuda,argrl_mpi)
// and more than one rank, every CUDA mode ("cuda", "cuda-bf16tc",
// "cuda-bf16", and "auto" where this rank sees a GPU: kernels.AutoCUDA)
// opens the GPU chosen by the local rank and returns c wrapped so that its
// buffers move through NCCL; every other case is kernels.Choose(name) and
// c itself (so "auto" without a GPU is cpu, said in the line).
func ChooseBackend(c Comm, name string) (kernels.Backend, Comm, string, error) {
	if deviceBackend != nil && c.Size() > 1 {
		if be, dc, ok, err := deviceBackend(c, name); ok {
			if err != nil {
				return nil, nil, "", err
			}
			line := be.Name() + " with NCCL"
			if name == kernels.Auto {
				line = be.Name() + " with NCCL (auto: the GPU's fastest mode; model.backend: cuda for f32)"
			}
			if d, ok := be.(interface{ Device() string }); ok {
				line += ": " + d.Device()
			}
			return be, dc, line, nil
		}
	}
	be, line, err := kernels.Choose(name)
	if err != nil {
		return nil, nil, "", err
	}
	return be, c, line, nil
}
