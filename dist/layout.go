package dist

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/argrl/argrl/kernels"
)

// The pieces every implementation shares: argument checks, the split of a
// reduction across ranks, the rank-order sum, and the wire form of Check.

// f32Lens checks the buffers of a device collective and returns their
// lengths.
func f32Lens(op string, be kernels.Backend, bufs []kernels.Buffer) ([]int, error) {
	if be == nil {
		return nil, fmt.Errorf("dist: %s: nil backend", op)
	}
	lens := make([]int, len(bufs))
	for i, b := range bufs {
		if b == nil {
			return nil, fmt.Errorf("dist: %s: buffer %d is nil", op, i)
		}
		if b.DType() != kernels.F32 {
			return nil, fmt.Errorf("dist: %s: buffer %d is %v; collectives move f32 buffers", op, i, b.DType())
		}
		lens[i] = b.Len()
	}
	return lens, nil
}

func checkRoot(op string, root, size int) error {
	if root < 0 || root >= size {
		return fmt.Errorf("dist: %s: root %d outside [0, %d)", op, root, size)
	}
	return nil
}

// part is rank p's share of n elements split over size ranks: elements
// [p·n/size, (p+1)·n/size), so shares differ by at most one element.
func part(n, size, p int) (off, cnt int) {
	off = p * n / size
	return off, (p+1)*n/size - off
}

// sumRanks writes out[i] = ((in₀[i] + in₁[i]) + …) + in_{size−1}[i] for
// i < cnt, where in_r = in[r·cnt : (r+1)·cnt]: the one reduction order of
// every AllReduce (package comment). out may alias in₀.
func sumRanks(out, in []float32, size, cnt int) {
	out = out[:cnt]
	copy(out, in[:cnt])
	for r := 1; r < size; r++ {
		src := in[r*cnt : (r+1)*cnt]
		for i := range out {
			out[i] += src[i]
		}
	}
}

// piece is elements [off, off+n) of buffer buf, at offset at of a chunk.
type piece struct{ buf, off, n, at int }

// span returns the pieces of the buffers (lengths lens, concatenated) that
// cover elements [lo, hi) of the concatenation, skipping empty buffers.
func span(lens []int, lo, hi int) []piece {
	var ps []piece
	start := 0
	for i, n := range lens {
		end := start + n
		if a, b := max(lo, start), min(hi, end); a < b {
			ps = append(ps, piece{buf: i, off: a - start, n: b - a, at: a - lo})
		}
		start = end
		if start >= hi {
			break
		}
	}
	return ps
}

// view is piece p of bufs on be (the buffer itself when p covers it).
func view(be kernels.Backend, bufs []kernels.Buffer, p piece) kernels.Buffer {
	b := bufs[p.buf]
	if p.off == 0 && p.n == b.Len() {
		return b
	}
	return be.View(b, p.off, p.n)
}

func total(lens []int) int {
	n := 0
	for _, l := range lens {
		n += l
	}
	return n
}

// Check's wire form: one byte, 0 (no failure) or 1, then the message.

func encodeStatus(err error) []byte {
	if err == nil {
		return []byte{0}
	}
	return append([]byte{1}, err.Error()...)
}

// decodeStatuses turns the gathered statuses into Check's result; local is
// this rank's own error, wrapped by its RankError.
func decodeStatuses(st [][]byte, rank int, local error) error {
	var errs []error
	for r, b := range st {
		if len(b) == 0 || b[0] == 0 {
			continue
		}
		e := &RankError{Rank: r, Msg: string(b[1:])}
		if r == rank {
			e.err = local
		}
		errs = append(errs, e)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// localRankVars are the launchers' node-local rank variables (Open MPI,
// Slurm, MPICH/Hydra, PMI, MVAPICH), in that order.
var localRankVars = []string{"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK"}

// localRank is this process's rank among those of its node, which picks
// its GPU: the launcher's own variable when it sets one, else fromMPI (the
// rank in MPI's shared-memory split of the job).
func localRank(fromMPI int) int {
	for _, v := range localRankVars {
		if s, ok := os.LookupEnv(v); ok {
			if n, err := strconv.Atoi(s); err == nil && n >= 0 {
				return n
			}
		}
	}
	return fromMPI
}

// deviceFor is the GPU ordinal of a rank: its local rank, one rank per
// GPU; or 0 when a single device is visible (a launcher that binds each
// rank to its own GPU through CUDA_VISIBLE_DEVICES).
func deviceFor(localRank, devices int) (int, error) {
	switch {
	case devices < 1:
		return 0, fmt.Errorf("dist: no CUDA device is visible")
	case localRank < devices:
		return localRank, nil
	case devices == 1:
		return 0, nil
	}
	return 0, fmt.Errorf("dist: local rank %d but only %d GPUs are visible: run one rank per GPU", localRank, devices)
}

// poll calls done until it reports true (poll returns true) or timeout
// passes (false). It busy-polls briefly, then sleeps, backing off to 1 ms.
func poll(timeout time.Duration, done func() bool) bool {
	deadline := time.Now().Add(timeout)
	nap := time.Duration(0)
	for spin := 0; ; spin++ {
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		if spin >= 100 {
			nap = min(max(2*nap, 10*time.Microsecond), time.Millisecond)
			time.Sleep(nap)
		}
	}
}

// timeoutMsg is the reason a collective is fatal after its timeout.
func timeoutMsg(d time.Duration) string {
	return fmt.Sprintf("timed out after %v waiting for the other ranks (one failed, stalled, or called another collective)", d)
}

// xfer is one point-to-point transfer of n elements at element off of
// buffer buf (0: the chunk, 1: the gathered parts), to or from peer.
type xfer struct {
	recv         bool
	buf          int
	off, n, peer int
}

// reducePlan is rank me's transfers in an all-reduce of cnt elements over s
// ranks by point-to-point groups (NCCL's path). scatter sends each rank p
// its part of this rank's chunk and receives this rank's part of every
// other rank's chunk into block p of buffer 1 (s blocks of this rank's
// part length; its own block is a local copy); gather, after the sum,
// sends this rank's part to every rank and receives theirs into place.
// Transfers of 0 elements are listed and skipped by the caller.
func reducePlan(cnt, s, me int) (scatter, gather []xfer) {
	myOff, myCnt := part(cnt, s, me)
	for p := range s {
		if p == me {
			continue
		}
		off, c := part(cnt, s, p)
		scatter = append(scatter, xfer{buf: 0, off: off, n: c, peer: p}, xfer{recv: true, buf: 1, off: p * myCnt, n: myCnt, peer: p})
		gather = append(gather, xfer{buf: 0, off: myOff, n: myCnt, peer: p}, xfer{recv: true, buf: 0, off: off, n: c, peer: p})
	}
	return scatter, gather
}
