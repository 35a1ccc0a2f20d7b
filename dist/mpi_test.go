//go:build argrl_mpi

package dist

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
)

// The MPI tests re-execute this test binary as the ranks of an mpirun job:
// TestMPI* start `mpirun -np N <this binary> -test.run ^TestMPIRank$` with
// the scenario in scenarioEnv, and read what every rank printed.

const scenarioEnv = "ARGRL_DIST_SCENARIO"

// mpirun runs scenario on np ranks and returns the job's output and error
// (an *exec.ExitError when some rank failed). A job still running after 3
// minutes is killed and fails the test: no scenario may hang.
func mpirun(t *testing.T, np int, scenario string) (string, error) {
	t.Helper()
	if os.Getenv("OMPI_COMM_WORLD_SIZE") != "" {
		t.Skip("already a rank under mpirun")
	}
	bin, err := exec.LookPath("mpirun")
	if err != nil {
		if os.Getenv("CI") == "1" {
			t.Fatalf("mpirun not found (CI=1): install openmpi-bin and libopenmpi-dev: %v", err)
		}
		t.Skipf("mpirun not found, skipping the MPI tests (install openmpi-bin): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(np),
		"-x", scenarioEnv+"="+scenario, os.Args[0], "-test.run", "^TestMPIRank$", "-test.count=1", "-test.v")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun -np %d (%s) hung; output:\n%s", np, scenario, out)
	}
	return string(out), err
}

// TestMPIRank is one rank of a scenario; it runs only under mpirun.
func TestMPIRank(t *testing.T) {
	sc := os.Getenv(scenarioEnv)
	if sc == "" {
		t.Skip("a rank of an mpirun job started by TestMPI*")
	}
	timeout := time.Minute
	if sc == "timeout" {
		timeout = 2 * time.Second
	}
	c, err := MPI(Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	switch sc {
	case "collectives":
		rankCollectives(t, c)
	case "check-exit":
		// A recipe's step boundary: rank 1 failed; every rank exits non-zero
		// with its error.
		var stepErr error
		if c.Rank() == 1 {
			stepErr = errors.New("step 3: loss is NaN")
		}
		if err := c.Check(stepErr); err != nil {
			fmt.Printf("rank %d exits: %v\n", c.Rank(), err)
			_ = c.Close()
			os.Exit(1)
		}
	case "timeout":
		be := kernels.NewCPU()
		if c.Rank() == 0 {
			fmt.Println("rank 0: sleeping past the timeout")
			time.Sleep(90 * time.Second)
			fmt.Println("rank 0: woke up")
		}
		err := c.AllReduce(be, be.Alloc(kernels.F32, 4))
		fmt.Printf("rank %d: allreduce returned %v\n", c.Rank(), err)
	default:
		t.Fatalf("unknown scenario %q", sc)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rank %d: %s ok\n", c.Rank(), sc)
}

// rankCollectives checks every collective on this rank against values
// computed locally for every rank, and prints the all-reduce's digest.
func rankCollectives(t *testing.T, c Comm) {
	chunkElems = 1000 // several chunks, split unevenly over the ranks
	be := kernels.NewCPU()
	r, n := c.Rank(), c.Size()
	lens := []int{0, 1, 2503, 7, 1000}
	got := reduceOnce(t, c, be, lens)
	if again := reduceOnce(t, c, be, lens); !bytes.Equal(again, got) {
		t.Errorf("rank %d: a second all-reduce of the same inputs differs", r)
	}
	fmt.Printf("rank %d: allreduce digest %x\n", r, digest(got))

	// Broadcast device buffers from the last rank.
	root := n - 1
	bufs, want := make([]kernels.Buffer, len(lens)), make([][]float32, len(lens))
	for i, l := range lens {
		want[i] = values(root, i, l)
		bufs[i] = be.Alloc(kernels.F32, l)
		if r == root {
			be.CopyIn(bufs[i], want[i])
		}
	}
	if err := c.Broadcast(be, root, bufs...); err != nil {
		t.Fatal(err)
	}
	for i, b := range bufs {
		if g := readBuf(be, b); !bytes.Equal(f32Bytes(g), f32Bytes(want[i])) {
			t.Errorf("rank %d: broadcast buffer %d differs from rank %d's", r, i, root)
		}
	}

	msg := []byte(fmt.Sprintf("from rank %d", root))
	mine := msg
	if r != root {
		mine = []byte("ignored, not the root")
	}
	if b, err := c.BroadcastBytes(root, mine); err != nil || !bytes.Equal(b, msg) {
		t.Errorf("rank %d: BroadcastBytes = %q, %v; want %q", r, b, err, msg)
	}

	all, err := c.AllGather(bytes.Repeat([]byte{byte('a' + r)}, r)) // rank 0 sends nothing
	if err != nil {
		t.Fatal(err)
	}
	for q := range n {
		if w := bytes.Repeat([]byte{byte('a' + q)}, q); len(all) != n || !bytes.Equal(all[q], w) {
			t.Errorf("rank %d: AllGather[%d] = %q, want %q", r, q, all[q], w)
		}
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}

	// Check: nil everywhere, then the last rank fails.
	if err := c.Check(nil); err != nil {
		t.Errorf("rank %d: Check(nil) = %v", r, err)
	}
	boom := errors.New("boom")
	var mineErr error
	if r == n-1 {
		mineErr = boom
	}
	err = c.Check(mineErr)
	wantMsg := fmt.Sprintf("rank %d: boom", n-1)
	if n == 1 {
		wantMsg = "boom" // one rank: Check returns the error itself
	}
	if err == nil || err.Error() != wantMsg {
		t.Errorf("rank %d: Check = %v, want %q", r, err, wantMsg)
	}
	if r == n-1 && !errors.Is(err, boom) {
		t.Errorf("rank %d: Check's error does not wrap the rank's own error", r)
	}
	fmt.Printf("rank %d: check says %q\n", r, err)

	if n > 1 {
		mismatches(t, c, be)
	}
}

// mismatches: calls that disagree across ranks fail on every rank, and the
// Comm stays usable.
func mismatches(t *testing.T, c Comm, be kernels.Backend) {
	r := c.Rank()
	err := c.AllReduce(be, be.Alloc(kernels.F32, 10+r))
	if err == nil || !strings.Contains(err.Error(), "do not match") {
		t.Errorf("rank %d: all-reduce of different lengths: %v", r, err)
	}
	b := be.Alloc(kernels.F32, 3)
	if r == 1 {
		b = be.Alloc(kernels.BF16, 3)
	}
	err = c.AllReduce(be, b)
	switch {
	case r == 1 && (err == nil || !strings.Contains(err.Error(), "is bf16")):
		t.Errorf("rank 1: all-reduce of a bf16 buffer: %v", err)
	case r != 1 && (err == nil || !strings.Contains(err.Error(), "rank 1 passed invalid arguments")):
		t.Errorf("rank %d: all-reduce with rank 1's bad buffer: %v", r, err)
	}
	if r == 0 {
		err = c.Barrier()
	} else {
		_, err = c.AllGather(nil)
	}
	if err == nil || !strings.Contains(err.Error(), "rank 0 barrier, rank 1 allgather") {
		t.Errorf("rank %d: barrier against allgather: %v", r, err)
	}
	if err := c.Barrier(); err != nil {
		t.Errorf("rank %d: barrier after the mismatches: %v", r, err)
	}
}

// reduceOnce all-reduces values(rank, i, lens[i]) for every buffer i and
// checks the result bit for bit against the rank-order sum.
func reduceOnce(t *testing.T, c Comm, be kernels.Backend, lens []int) []byte {
	r, n := c.Rank(), c.Size()
	bufs := make([]kernels.Buffer, len(lens))
	for i, l := range lens {
		bufs[i] = be.Alloc(kernels.F32, l)
		be.CopyIn(bufs[i], values(r, i, l))
	}
	if err := c.AllReduce(be, bufs...); err != nil {
		t.Fatal(err)
	}
	var got []byte
	reassoc := 0
	for i, b := range bufs {
		g := readBuf(be, b)
		want := make([]float32, lens[i])
		rev := make([]float32, lens[i])
		for q := range n {
			v, w := values(q, i, lens[i]), values(n-1-q, i, lens[i])
			for j := range want {
				want[j] += v[j]
				rev[j] += w[j]
			}
		}
		for j := range want {
			if rev[j] != want[j] {
				reassoc++
			}
		}
		if !bytes.Equal(f32Bytes(g), f32Bytes(want)) {
			t.Errorf("rank %d: all-reduced buffer %d is not the rank-order sum", r, i)
		}
		got = append(got, f32Bytes(g)...)
	}
	if n >= 3 && reassoc == 0 {
		t.Errorf("rank %d: the test inputs do not depend on the summation order", r)
	}
	return got
}

func TestMPICollectives(t *testing.T) {
	digests := map[string]bool{}
	for _, np := range []int{1, 2, 3, 3} {
		out, err := mpirun(t, np, "collectives")
		if err != nil {
			t.Fatalf("mpirun -np %d: %v\n%s", np, err, out)
		}
		d := map[string]bool{}
		for r := range np {
			if !strings.Contains(out, fmt.Sprintf("rank %d: collectives ok", r)) {
				t.Errorf("-np %d: rank %d did not finish:\n%s", np, r, out)
			}
			m := regexp.MustCompile(fmt.Sprintf(`rank %d: allreduce digest ([0-9a-f]+)`, r)).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("-np %d: rank %d printed no digest:\n%s", np, r, out)
			}
			d[m[1]] = true
			if np == 3 {
				digests[m[1]] = true
			}
		}
		if len(d) != 1 {
			t.Errorf("-np %d: the ranks' all-reduce results differ: %v", np, d)
		}
	}
	if len(digests) != 1 {
		t.Errorf("two 3-rank runs gave different all-reduce bytes: %v", digests)
	}
}

func TestMPICheckExit(t *testing.T) {
	out, err := mpirun(t, 2, "check-exit")
	if err == nil {
		t.Fatalf("the job exited 0 after rank 1 failed:\n%s", out)
	}
	for r := range 2 {
		if want := fmt.Sprintf("rank %d exits: rank 1: step 3: loss is NaN", r); !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestMPITimeout(t *testing.T) {
	out, err := mpirun(t, 2, "timeout")
	if err == nil {
		t.Fatalf("the job exited 0 after a collective timed out:\n%s", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != abortCode {
		t.Errorf("mpirun: %v, want exit status %d (MPI_Abort's code)", err, abortCode)
	}
	if want := "dist: rank 1: allreduce: timed out after 2s"; !strings.Contains(out, want) {
		t.Errorf("missing %q in:\n%s", want, out)
	}
	for _, bad := range []string{"rank 0: woke up", "allreduce returned", "timeout ok"} {
		if strings.Contains(out, bad) {
			t.Errorf("%q: a rank went on after the timeout:\n%s", bad, out)
		}
	}
}

// values are rank r's inputs for buffer i: signs and exponents spread
// widely, so that sums depend on their association.
func values(r, i, n int) []float32 {
	v := make([]float32, n)
	s := uint64(r)*0x9E3779B97F4A7C15 + uint64(i)*0xBF58476D1CE4E5B9 + 1
	for j := range v {
		s = s*6364136223846793005 + 1442695040888963407
		m := float32(int32(s>>40)-(1<<23)) / (1 << 23)
		v[j] = m * float32(uint64(1)<<(s>>20%24)) / (1 << 12)
	}
	return v
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func digest(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

func readBuf(be kernels.Backend, b kernels.Buffer) []float32 {
	out := make([]float32, b.Len())
	be.CopyOut(out, b)
	return out
}

// TestNCCLLoad: without NCCL (CI, any CPU machine) loading names the
// library and why; with it, the version is new enough.
func TestNCCLLoad(t *testing.T) {
	v, err := loadNCCL()
	if err == nil {
		if v < ncclMinVersion {
			t.Errorf("loaded NCCL version %d without an error", v)
		}
		t.Logf("NCCL found: version code %d", v)
		return
	}
	if !strings.HasPrefix(err.Error(), "dist: libnccl.so.2 not found: ") || !strings.Contains(err.Error(), "LD_LIBRARY_PATH") {
		t.Errorf("error = %q", err)
	}
	if _, again := loadNCCL(); again != err {
		t.Errorf("second load: %v, want the first error", again)
	}
	t.Log(err)
}
