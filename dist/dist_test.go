package dist

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/argrl/argrl/kernels"
)

func TestSingle(t *testing.T) {
	c := Single()
	if c.Rank() != 0 || c.Size() != 1 || c.LocalRank() != 0 {
		t.Fatalf("Single: rank %d size %d local %d", c.Rank(), c.Size(), c.LocalRank())
	}
	be := kernels.NewCPU()
	a, b := be.Alloc(kernels.F32, 3), be.Alloc(kernels.F32, 2)
	be.CopyIn(a, []float32{1, -2, 3.5})
	be.CopyIn(b, []float32{7, 8})
	if err := c.AllReduce(be, a, b); err != nil {
		t.Fatal(err)
	}
	if err := c.Broadcast(be, 0, a, b); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 3)
	be.CopyOut(got, a)
	if got[0] != 1 || got[1] != -2 || got[2] != 3.5 {
		t.Errorf("one rank's all-reduce changed the buffer: %v", got)
	}

	src := []byte("seed 42")
	out, err := c.BroadcastBytes(0, src)
	if err != nil || !bytes.Equal(out, src) {
		t.Errorf("BroadcastBytes = %q, %v", out, err)
	}
	src[0] = 'X'
	if out[0] != 's' {
		t.Error("BroadcastBytes returned the caller's slice, not a copy")
	}
	all, err := c.AllGather([]byte("m"))
	if err != nil || len(all) != 1 || string(all[0]) != "m" {
		t.Errorf("AllGather = %q, %v", all, err)
	}
	if err := c.Barrier(); err != nil {
		t.Error(err)
	}
	if err := c.Check(nil); err != nil {
		t.Errorf("Check(nil) = %v", err)
	}
	boom := errors.New("boom")
	if err := c.Check(boom); err != boom {
		t.Errorf("one rank's Check(boom) = %v, want boom itself", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(); !errors.Is(err, ErrClosed) {
		t.Errorf("Barrier after Close = %v, want ErrClosed", err)
	}
	if err := c.AllReduce(be, a); !errors.Is(err, ErrClosed) {
		t.Errorf("AllReduce after Close = %v, want ErrClosed", err)
	}
}

func TestSingleBadArguments(t *testing.T) {
	c := Single()
	be := kernels.NewCPU()
	for name, err := range map[string]error{
		"nil backend":  c.AllReduce(nil, be.Alloc(kernels.F32, 1)),
		"nil buffer":   c.AllReduce(be, be.Alloc(kernels.F32, 1), nil),
		"bf16 buffer":  c.AllReduce(be, be.Alloc(kernels.BF16, 4)),
		"root 1":       c.Broadcast(be, 1, be.Alloc(kernels.F32, 1)),
		"bf16 bcast":   c.Broadcast(be, 0, be.Alloc(kernels.BF16, 1)),
		"bytes root 1": func() error { _, err := c.BroadcastBytes(1, nil); return err }(),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "dist: ") {
			t.Errorf("%s: err = %v, want a dist error", name, err)
		}
	}
}

func TestOpenBadTimeout(t *testing.T) {
	if _, err := Open(Options{Timeout: -time.Second}); err == nil {
		t.Error("Open with a negative timeout succeeded")
	}
}

func TestLaunchedSize(t *testing.T) {
	cases := []struct {
		env      map[string]string
		n        int
		launched bool
	}{
		{map[string]string{}, 0, false},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "4"}, 4, true},
		{map[string]string{"PMI_SIZE": "2"}, 2, true},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "8"}, 8, true},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "1"}, 0, false},
		{map[string]string{"SLURM_STEP_NUM_TASKS": "1", "PMIX_RANK": "0"}, 1, true},
		{map[string]string{"PMIX_RANK": "3"}, 0, true},
		{map[string]string{"OMPI_COMM_WORLD_SIZE": "zero"}, 0, true},
	}
	for _, tc := range cases {
		restore := setEnv(t, launcherVars, tc.env)
		n, launched := launchedSize()
		restore()
		if n != tc.n || launched != tc.launched {
			t.Errorf("%v: launchedSize = %d, %v; want %d, %v", tc.env, n, launched, tc.n, tc.launched)
		}
	}
}

func TestOpenRefusesRanksWithoutMPI(t *testing.T) {
	if MPIAvailable {
		t.Skip("built with MPI")
	}
	restore := setEnv(t, launcherVars, map[string]string{"OMPI_COMM_WORLD_SIZE": "2"})
	_, err := Open(Options{})
	restore()
	if err == nil || !strings.Contains(err.Error(), "make build-mpi") {
		t.Errorf("Open as one of 2 ranks without MPI: %v", err)
	}
	restore = setEnv(t, launcherVars, map[string]string{})
	c, err := Open(Options{})
	restore()
	if err != nil || c.Size() != 1 {
		t.Errorf("Open outside a launcher = %v, %v; want Single", c, err)
	}
}

func TestOpenBackend(t *testing.T) {
	c := Single()
	be, dc, err := OpenBackend(c, "cpu")
	if err != nil || be == nil || dc != c {
		t.Fatalf("OpenBackend(cpu) = %v, %v, %v", be, dc, err)
	}
	if _, _, err := OpenBackend(c, "no-such-backend"); err == nil {
		t.Error("OpenBackend of an unknown name succeeded")
	}
}

func TestPartAndSumRanks(t *testing.T) {
	for _, n := range []int{0, 1, 5, 1000, 1001} {
		for size := 1; size <= 5; size++ {
			next := 0
			for p := range size {
				off, cnt := part(n, size, p)
				if off != next || cnt < n/size || cnt > n/size+1 {
					t.Fatalf("part(%d, %d, %d) = %d, %d", n, size, p, off, cnt)
				}
				next = off + cnt
			}
			if next != n {
				t.Fatalf("part(%d, %d, ·) covers %d elements", n, size, next)
			}
		}
	}
	// Rank order matters: (1e8 + -1e8) + 1 = 1, but 1e8 + (-1e8 + 1) = 0 in f32.
	in := []float32{1e8, 3, -1e8, 4, 1, 5}
	out := make([]float32, 2)
	sumRanks(out, in, 3, 2)
	if out[0] != 1 || out[1] != 12 {
		t.Errorf("sumRanks = %v, want [1 12]", out)
	}
	sumRanks(in, in, 3, 2) // out aliasing rank 0's block
	if in[0] != 1 || in[1] != 12 {
		t.Errorf("sumRanks in place = %v, want [1 12 ...]", in[:2])
	}
}

func TestSpan(t *testing.T) {
	lens := []int{3, 0, 4, 2}
	got := span(lens, 2, 8)
	want := []piece{{buf: 0, off: 2, n: 1, at: 0}, {buf: 2, off: 0, n: 4, at: 1}, {buf: 3, off: 0, n: 1, at: 5}}
	if len(got) != len(want) {
		t.Fatalf("span = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if ps := span(lens, 0, 9); len(ps) != 3 || ps[2].n != 2 {
		t.Errorf("span of everything = %v", ps)
	}
}

func TestStatuses(t *testing.T) {
	boom := errors.New("step 3: loss is NaN")
	st := [][]byte{encodeStatus(nil), encodeStatus(boom), encodeStatus(nil)}
	for rank := range 3 {
		var local error
		if rank == 1 {
			local = boom
		}
		err := decodeStatuses(st, rank, local)
		var re *RankError
		if !errors.As(err, &re) || re.Rank != 1 || err.Error() != "rank 1: step 3: loss is NaN" {
			t.Errorf("rank %d: %v", rank, err)
		}
		if errors.Is(err, boom) != (rank == 1) {
			t.Errorf("rank %d: errors.Is(err, boom) = %v", rank, errors.Is(err, boom))
		}
	}
	if err := decodeStatuses([][]byte{encodeStatus(nil), encodeStatus(nil)}, 0, nil); err != nil {
		t.Errorf("no failure: %v", err)
	}
	two := decodeStatuses([][]byte{encodeStatus(errors.New("a")), encodeStatus(nil), encodeStatus(errors.New("b"))}, 1, nil)
	if two == nil || two.Error() != "rank 0: a\nrank 2: b" {
		t.Errorf("two failures: %q", two)
	}
}

func TestDeviceFor(t *testing.T) {
	for _, tc := range []struct{ local, devices, want int }{{0, 8, 0}, {7, 8, 7}, {3, 1, 0}} {
		if got, err := deviceFor(tc.local, tc.devices); err != nil || got != tc.want {
			t.Errorf("deviceFor(%d, %d) = %d, %v", tc.local, tc.devices, got, err)
		}
	}
	for _, tc := range [][2]int{{0, 0}, {2, 2}} {
		if _, err := deviceFor(tc[0], tc[1]); err == nil {
			t.Errorf("deviceFor(%d, %d) succeeded", tc[0], tc[1])
		}
	}
}

func TestPollTimesOut(t *testing.T) {
	calls := 0
	if poll(0, func() bool { calls++; return false }) || calls == 0 {
		t.Errorf("poll with no time left: calls %d", calls)
	}
	if !poll(time.Minute, func() bool { calls++; return calls > 150 }) {
		t.Error("poll gave up before done")
	}
}

// launcherVars are the variables launchedSize reads.
var launcherVars = []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"}

// setEnv sets exactly env among names (unsetting the others) and returns
// the function that restores them.
func setEnv(t *testing.T, names []string, env map[string]string) func() {
	t.Helper()
	old := map[string]*string{}
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			old[n] = &v
		} else {
			old[n] = nil
		}
		if v, ok := env[n]; ok {
			os.Setenv(n, v)
		} else {
			os.Unsetenv(n)
		}
	}
	return func() {
		for n, v := range old {
			if v == nil {
				os.Unsetenv(n)
			} else {
				os.Setenv(n, *v)
			}
		}
	}
}

// TestReducePlan runs the NCCL all-reduce's transfers between simulated
// ranks (a send matches the peer's receive from this rank, as NCCL pairs
// them) and checks that every rank ends with the rank-order sum.
func TestReducePlan(t *testing.T) {
	for _, s := range []int{2, 3, 4} {
		for _, cnt := range []int{1, 2, 7, 100} {
			flat := make([][]float32, s)
			gath := make([][]float32, s)
			want := make([]float32, cnt)
			for r := range s {
				flat[r] = make([]float32, cnt)
				for i := range flat[r] {
					flat[r][i] = float32(int((r+1)*(i+3))%11) * float32(int(1)<<(3*r))
					want[i] += flat[r][i]
				}
				off, c := part(cnt, s, r)
				gath[r] = make([]float32, s*c)
				copy(gath[r][r*c:], flat[r][off:off+c])
			}
			bufs := func(r int) [][]float32 { return [][]float32{flat[r], gath[r]} }
			plans := make([][2][]xfer, s)
			for r := range s {
				plans[r][0], plans[r][1] = reducePlan(cnt, s, r)
			}
			deliver(t, plans, 0, bufs)
			for r := range s {
				off, c := part(cnt, s, r)
				sumRanks(flat[r][off:], gath[r], s, c)
			}
			deliver(t, plans, 1, bufs)
			for r := range s {
				for i := range want {
					if flat[r][i] != want[i] {
						t.Fatalf("s=%d cnt=%d: rank %d element %d = %v, want %v", s, cnt, r, i, flat[r][i], want[i])
					}
				}
			}
		}
	}
}

// deliver applies phase ph of every rank's plan: each send meets the one
// receive its peer posts from the sender, with the same length.
func deliver(t *testing.T, plans [][2][]xfer, ph int, bufs func(r int) [][]float32) {
	t.Helper()
	for r := range plans {
		for _, x := range plans[r][ph] {
			if x.recv {
				continue
			}
			var match []xfer
			for _, y := range plans[x.peer][ph] {
				if y.recv && y.peer == r {
					match = append(match, y)
				}
			}
			if len(match) != 1 || match[0].n != x.n {
				t.Fatalf("rank %d's send of %d to %d meets receives %v", r, x.n, x.peer, match)
			}
			y := match[0]
			copy(bufs(x.peer)[y.buf][y.off:y.off+y.n], bufs(r)[x.buf][x.off:x.off+x.n])
		}
	}
}

// TestLocalRank: the launcher's node-local rank variable picks the GPU
// when set (Open MPI's first, then Slurm's, …), else MPI's split.
func TestLocalRank(t *testing.T) {
	for _, v := range localRankVars {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	if got := localRank(3); got != 3 {
		t.Errorf("no variable: %d, want MPI's 3", got)
	}
	t.Setenv("SLURM_LOCALID", "5")
	if got := localRank(3); got != 5 {
		t.Errorf("SLURM_LOCALID=5: %d", got)
	}
	t.Setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2")
	if got := localRank(3); got != 2 {
		t.Errorf("OMPI_COMM_WORLD_LOCAL_RANK=2 over SLURM_LOCALID=5: %d", got)
	}
	t.Setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x")
	if got := localRank(3); got != 5 {
		t.Errorf("a bad OMPI_COMM_WORLD_LOCAL_RANK is skipped: %d", got)
	}
}
