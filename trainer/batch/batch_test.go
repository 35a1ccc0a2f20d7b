package batch

import (
	"math"
	"reflect"
	"sort"
	"testing"
)

// realisticLengths draws tool-calling SFT record lengths: tool schemas +
// user turn + call, log-normal around 450 tokens, clipped to [48, 2048].
func realisticLengths(n int) []int {
	r := NewRNG(3, "lengths")
	out := make([]int, n)
	for i := range out {
		l := int(math.Exp(math.Log(450) + 0.6*r.NormFloat64()))
		out[i] = min(2048, max(48, l))
	}
	return out
}

func collect(b *Batcher, n int) []StepBatch {
	var out []StepBatch
	for i := 0; i < n; i++ {
		out = append(out, b.Next())
	}
	return out
}

func TestBatcherCoversEachEpochOnce(t *testing.T) {
	lens := realisticLengths(103)
	b, err := New(lens, 4, 2, 4, 9)
	if err != nil {
		t.Fatal(err)
	}
	if b.StepsPerEpoch() != 13 { // ceil(103/8)
		t.Fatalf("steps per epoch %d", b.StepsPerEpoch())
	}
	var orders [][]int
	for e := 0; e < 3; e++ {
		var all []int
		for s := 0; s < b.StepsPerEpoch(); s++ {
			sb := b.Next()
			if sb.Epoch != e || sb.Index != s {
				t.Fatalf("step (%d,%d), want (%d,%d)", sb.Epoch, sb.Index, e, s)
			}
			for _, m := range sb.Micro {
				if len(m) == 0 || len(m) > 4 {
					t.Fatalf("micro-batch of %d", len(m))
				}
				for i := 1; i < len(m); i++ {
					if lens[m[i]] > lens[m[i-1]] {
						t.Fatalf("micro-batch not sorted by length: %v", m)
					}
				}
			}
			if len(sb.Micro) > 2 {
				t.Fatalf("%d micro-batches, accum is 2", len(sb.Micro))
			}
			all = append(all, sb.Records()...)
		}
		orders = append(orders, append([]int(nil), all...))
		sort.Ints(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("epoch %d does not cover every record once", e)
			}
		}
	}
	if reflect.DeepEqual(orders[0], orders[1]) {
		t.Fatal("epochs 0 and 1 have the same order: not reshuffled")
	}
}

// Resuming at (epoch, cursor) in a fresh Batcher gives the batches of an
// uninterrupted run, across epoch boundaries.
func TestBatcherResumeExact(t *testing.T) {
	lens := realisticLengths(50)
	straight, _ := New(lens, 3, 2, 8, 11)
	want := collect(straight, 40) // 9 steps per epoch: crosses 4 epochs
	for _, stop := range []int{0, 1, 8, 9, 10, 27} {
		a, _ := New(lens, 3, 2, 8, 11)
		got := collect(a, stop)
		e, c := a.Position()
		b, _ := New(lens, 3, 2, 8, 11)
		if err := b.Seek(e, c); err != nil {
			t.Fatal(err)
		}
		got = append(got, collect(b, 40-stop)...)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("resume after %d steps at (%d,%d) diverges", stop, e, c)
		}
	}
	b, _ := New(lens, 3, 2, 8, 11)
	if err := b.Seek(0, 10); err == nil {
		t.Fatal("cursor past the epoch accepted")
	}
	if _, err := New(nil, 1, 1, 0, 1); err == nil {
		t.Fatal("empty data accepted")
	}
}

// micro 8 × accum 1 and micro 1 × accum 8 train on the same records per step.
func TestBatcherAccumulationInvariant(t *testing.T) {
	lens := realisticLengths(70)
	a, _ := New(lens, 8, 1, 4, 5)
	b, _ := New(lens, 1, 8, 4, 5)
	for s := 0; s < 20; s++ {
		x, y := a.Next(), b.Next()
		if !reflect.DeepEqual(x.Records(), y.Records()) {
			t.Fatalf("step %d: %v vs %v", s, x.Records(), y.Records())
		}
		if len(x.Micro) != 1 || len(y.Micro) != len(y.Records()) {
			t.Fatalf("step %d: split %d / %d", s, len(x.Micro), len(y.Micro))
		}
	}
}

func TestBatcherPadding(t *testing.T) {
	lens := realisticLengths(4000)
	for _, mb := range []struct{ micro, accum int }{{8, 1}, {4, 4}} {
		pad := map[int]float64{}
		for _, w := range []int{0, 4, 16, 64} {
			b, _ := New(lens, mb.micro, mb.accum, w, 1)
			var micro [][]int
			for s := 0; s < b.StepsPerEpoch(); s++ {
				micro = append(micro, b.Next().Micro...)
			}
			pad[w] = PaddingFraction(lens, micro)
		}
		t.Logf("micro %d × accum %d, 4000 records, log-normal lengths (median 450, σ 0.6, [48,2048]): padding %.1f%% shuffled, %.1f%% window 4, %.1f%% window 16, %.1f%% window 64",
			mb.micro, mb.accum, 100*pad[0], 100*pad[4], 100*pad[16], 100*pad[64])
		if !(pad[64] < 0.05 && pad[64] < pad[0]/5 && pad[16] < pad[4] && pad[4] < pad[0]) {
			t.Errorf("bucketing leaves %.1f%% (window 64) / %.1f%% (16) / %.1f%% (4) padding vs %.1f%% shuffled", 100*pad[64], 100*pad[16], 100*pad[4], 100*pad[0])
		}
	}
	if f := PaddingFraction([]int{4, 2, 2}, [][]int{{0, 1}, {2}}); math.Abs(f-2.0/10) > 1e-12 {
		t.Fatalf("PaddingFraction hand case: %v, want 0.2", f)
	}
}
