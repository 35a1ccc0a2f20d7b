package ranks

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
)

// fakeComm is rank `rank` of `size` whose Check returns `check` (and
// counts the calls); no other collective is used by these tests.
type fakeComm struct {
	dist.Comm
	rank, size int
	check      error
	checks     int
}

func (f *fakeComm) Rank() int { return f.rank }
func (f *fakeComm) Size() int { return f.size }
func (f *fakeComm) Check(error) error {
	f.checks++
	return f.check
}

// The split rule: whole micro-batches dealt over the shares when there are
// enough of them, records dealt otherwise; one share is the Batcher's
// micro-batches as they are.
func TestTeamSplitDeal(t *testing.T) {
	one, _ := New(nil, 1)
	two, _ := New(nil, 2)
	for _, c := range []struct {
		t       *Team
		n, size int
		shares  []int
		chunks  [][]int
	}{
		{one, 7, 3, []int{0, 0, 0, 0, 0, 0, 0}, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}},
		{two, 8, 4, []int{0, 0, 0, 0, 1, 1, 1, 1}, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{two, 8, 2, []int{0, 0, 1, 1, 0, 0, 1, 1}, [][]int{{0, 1}, {4, 5}, {2, 3}, {6, 7}}},
		{two, 5, 2, []int{0, 0, 1, 1, 0}, [][]int{{0, 1}, {4}, {2, 3}}},
		{two, 3, 4, []int{0, 1, 0}, [][]int{{0, 2}, {1}}}, // one micro-batch for two shares
	} {
		sh := c.t.Deal(c.n, c.size)
		if !reflect.DeepEqual(sh, c.shares) {
			t.Errorf("S=%d Deal(%d, %d) = %v, want %v", c.t.shares, c.n, c.size, sh, c.shares)
		}
		var got [][]int
		for j, b := range c.t.Batches(sh, c.size) {
			got = append(got, b.At)
			if sh[b.At[0]] != b.Share || b.Index != j {
				t.Errorf("batch %d %v labelled share %d, index %d", j, b.At, b.Share, b.Index)
			}
		}
		if !reflect.DeepEqual(got, c.chunks) {
			t.Errorf("S=%d Batches(%d, Deal(%d)) = %v, want %v", c.t.shares, c.size, c.n, got, c.chunks)
		}
	}
}

// dist.shares must be a multiple of the ranks; rank r holds its block.
func TestTeamShares(t *testing.T) {
	tm, err := New(&fakeComm{rank: 1, size: 2}, 4)
	if err != nil {
		t.Fatal(err)
	}
	var held []int
	for s := range tm.shares {
		if tm.holds(s) {
			held = append(held, s)
		}
	}
	if !reflect.DeepEqual(held, []int{2, 3}) || tm.MostItems(5) != 4 {
		t.Errorf("rank 1 of 2 with 4 shares holds %v", held)
	}
	if tm, _ := New(&fakeComm{size: 3}, 0); tm.shares != 3 || tm.per != 1 {
		t.Errorf("shares 0 on 3 ranks: %d shares, %d per rank", tm.shares, tm.per)
	}
	if _, err := New(&fakeComm{size: 2}, 3); err == nil || !strings.Contains(err.Error(), `"dist.shares": 3 is not a multiple of the 2 ranks`) {
		t.Errorf("3 shares on 2 ranks: %v", err)
	}
}

// One process with two shares sums each share on its own and adds the
// sums: ((v0+v1) + (v2+v3)), which in float32 differs from the running sum
// of one share.
func TestTeamAccumulateShares(t *testing.T) {
	be := kernels.NewCPU()
	p := &model.Param{Name: "w", Shape: []int{1}, W: be.Alloc(kernels.F32, 1), G: be.Alloc(kernels.F32, 1)}
	params := []*model.Param{p}
	const tiny = 1.0 / (1 << 24)
	vals := []float32{1, tiny, tiny, tiny}
	run := func(shares int) float32 {
		tm, err := New(nil, shares)
		if err != nil {
			t.Fatal(err)
		}
		defer tm.Free()
		add := be.Alloc(kernels.F32, 1)
		defer be.Free(add)
		be.Fill(p.G, 42) // Accumulate zeroes first
		counts, n, err := Accumulate(tm, be, params, tm.Deal(len(vals), 1), 1, func(b Batch, count *int) error {
			be.CopyIn(add, vals[b.At[0]:b.At[0]+1])
			be.AXPBY(p.G, p.G, add, 1, 1, 1)
			*count++
			return nil
		})
		if n != len(vals) || len(counts) != shares {
			t.Errorf("%d shares: %d batches, %d accumulators", shares, n, len(counts))
		}
		for s, c := range counts {
			if c != len(vals)/shares {
				t.Errorf("%d shares: share %d ran %d batches", shares, s, c)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, 1)
		be.CopyOut(out, p.G)
		return out[0]
	}
	// Shares 0 and 1 of 4 records in micro-batches of 1: records 0, 2 and 1, 3.
	want1 := ((vals[0] + vals[1]) + vals[2]) + vals[3]
	want2 := (vals[0] + vals[2]) + (vals[1] + vals[3])
	if want1 == want2 {
		t.Fatal("the test values do not tell the sums apart")
	}
	if g := run(1); g != want1 {
		t.Errorf("one share: %v, want %v", g, want1)
	}
	if g := run(2); g != want2 {
		t.Errorf("two shares: %v, want %v", g, want2)
	}
}

// Settle: a rank's own failure that every failing rank shares comes back
// once as its own error; another rank's comes back as that rank's; an
// error already shared needs no collective and loses what this rank was
// doing when it learned it.
func TestSettle(t *testing.T) {
	own := errors.New("step 2: loss is NaN")
	c := &fakeComm{rank: 1, size: 2, check: &dist.RankError{Rank: 1, Msg: own.Error()}}
	got := Settle(c, own)
	if !errors.Is(got, own) || !Shared(got) || got.Error() != own.Error() {
		t.Errorf("own failure: %v (shared %v)", got, Shared(got))
	}
	other := &dist.RankError{Rank: 0, Msg: "disk full"}
	c = &fakeComm{rank: 1, size: 2, check: other}
	if got := Settle(c, nil); got != other {
		t.Errorf("rank 0's failure: %v", got)
	}
	c = &fakeComm{rank: 0, size: 2}
	if got := Settle(c, fmt.Errorf("sft: step 3: %w", other)); got != other || c.checks != 0 {
		t.Errorf("shared failure: %v after %d checks", got, c.checks)
	}
	both := errors.Join(&dist.RankError{Rank: 0, Msg: "a"}, &dist.RankError{Rank: 1, Msg: "b"})
	c = &fakeComm{rank: 0, size: 2, check: both}
	if got := Settle(c, errors.New("a")); got != both {
		t.Errorf("two failures: %v", got)
	}
	if got := Settle(&fakeComm{size: 2}, nil); got != nil {
		t.Errorf("no failure: %v", got)
	}
}

// memGroup is n ranks in one process (goroutines): AllGather and Check
// exchange through a barrier; no other collective is used by these tests.
type memGroup struct {
	n     int
	mu    sync.Mutex
	cond  *sync.Cond
	gen   int
	slots [][]byte
	out   [][]byte
	in    int
}

func newMemGroup(n int) *memGroup {
	g := &memGroup{n: n, slots: make([][]byte, n)}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// gather deposits b as rank r's and returns every rank's once all came.
func (g *memGroup) gather(r int, b []byte) [][]byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.gen
	g.slots[r] = append([]byte(nil), b...)
	g.in++
	if g.in == g.n {
		g.out, g.slots, g.in = g.slots, make([][]byte, g.n), 0
		g.gen++
		g.cond.Broadcast()
	} else {
		for gen == g.gen {
			g.cond.Wait()
		}
	}
	return g.out
}

type memComm struct {
	dist.Comm
	g    *memGroup
	rank int
}

func (c *memComm) Rank() int { return c.rank }
func (c *memComm) Size() int { return c.g.n }
func (c *memComm) AllGather(b []byte) ([][]byte, error) {
	return c.g.gather(c.rank, b), nil
}
func (c *memComm) Check(err error) error {
	msg := []byte{}
	if err != nil {
		msg = []byte("!" + err.Error())
	}
	var errs []error
	for r, m := range c.g.gather(c.rank, msg) {
		if len(m) > 0 {
			errs = append(errs, &dist.RankError{Rank: r, Msg: string(m[1:])})
		}
	}
	return errors.Join(errs...)
}

// onRanks runs f on n ranks of one memGroup with dist.shares s and
// returns each rank's result.
func onRanks[T any](t *testing.T, n, s int, f func(tm *Team) (T, error)) ([]T, []error) {
	g := newMemGroup(n)
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tm, err := New(&memComm{g: g, rank: r}, s)
			if err != nil {
				errs[r] = err
				return
			}
			out[r], errs[r] = f(tm)
		}()
	}
	wg.Wait()
	return out, errs
}

// Map and Fold give every rank every item's result and every share's
// accumulator, equal to one process's with the same shares, and each
// rank runs only its own shares' micro-batches.
func TestMapFoldAcrossRanks(t *testing.T) {
	type result struct {
		Squares []int
		Sums    []float64
		Ran     [][]int
	}
	const n = 7
	phase := func(tm *Team) (result, error) {
		var res result
		dealt := tm.Deal(n, 2)
		sq, err := Map(tm, dealt, 2, func(b Batch) ([]int, error) {
			res.Ran = append(res.Ran, b.At)
			out := make([]int, len(b.At))
			for i, at := range b.At {
				out[i] = at * at
			}
			return out, nil
		})
		if err != nil {
			return res, err
		}
		sums, err := Fold(tm, dealt, 2, func(b Batch, acc *float64) error {
			for _, at := range b.At {
				*acc += 1 / float64(at+1)
			}
			return nil
		})
		res.Squares, res.Sums = sq, sums
		return res, err
	}
	one, err := New(nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, err := phase(one)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range want.Squares {
		if v != i*i {
			t.Fatalf("one process: item %d's result %d", i, v)
		}
	}
	got, errs := onRanks(t, 2, 2, phase)
	for r := range got {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		if !reflect.DeepEqual(got[r].Squares, want.Squares) || !reflect.DeepEqual(got[r].Sums, want.Sums) {
			t.Errorf("rank %d: %v %v, one process %v %v", r, got[r].Squares, got[r].Sums, want.Squares, want.Sums)
		}
	}
	// Items 0-1 and 4-5 are share 0's micro-batches, 2-3 and 6 share 1's.
	if !reflect.DeepEqual(got[0].Ran, [][]int{{0, 1}, {4, 5}}) || !reflect.DeepEqual(got[1].Ran, [][]int{{2, 3}, {6}}) {
		t.Errorf("ranks ran %v and %v", got[0].Ran, got[1].Ran)
	}
}

// A failure in one rank's phase function ends the phase on every rank
// with that rank's message.
func TestMapFailureReachesEveryRank(t *testing.T) {
	_, errs := onRanks(t, 2, 0, func(tm *Team) ([]string, error) {
		return Map(tm, tm.Deal(4, 1), 1, func(b Batch) ([]string, error) {
			if b.Share == 1 {
				return nil, errors.New("reward server down")
			}
			return []string{"ok"}, nil
		})
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 1: reward server down") || !Shared(err) {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
