package model

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPageTableProperty drives the page accounting alone through random
// arrivals, appends (decode steps and prefill chunks, several sequences at
// once), forks and finishes, checking every invariant after every
// operation, that need() predicts exactly what grow() takes, and that all
// pages come back when every sequence is done.
func TestPageTableProperty(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 33))
		const seqs, pages = 12, 40
		pt := newPageTable(seqs, pages)
		copies := 0
		cow := func(src, dst int32, rows int) {
			if rows <= 0 || rows >= PageSize || src == dst {
				t.Fatalf("seed %d: copy on write of %d rows from page %d to %d", seed, rows, src, dst)
			}
			copies++
		}
		for op := range 3000 {
			switch k := r.IntN(10); {
			case k < 5: // a step over a random subset of sequences
				var ss, add []int
				for _, s := range r.Perm(seqs)[:1+r.IntN(seqs)] {
					ss = append(ss, s)
					if r.IntN(4) == 0 {
						add = append(add, 1+r.IntN(3*PageSize)) // a prefill chunk
					} else {
						add = append(add, 1)
					}
				}
				need := pt.need(ss, add)
				if need > len(pt.free) {
					s := r.IntN(seqs) // out of pages: someone finishes (or is preempted)
					pt.release(s)
					break
				}
				before := len(pt.free)
				for i, s := range ss {
					pt.grow(s, add[i], cow)
					pt.seqs[s].n += add[i]
				}
				if got := before - len(pt.free); got != need {
					t.Fatalf("seed %d op %d: need said %d pages, grow took %d", seed, op, need, got)
				}
			case k < 8: // fork: G samples share a prompt
				src := r.IntN(seqs)
				for range 1 + r.IntN(3) {
					pt.share(src, r.IntN(seqs))
				}
			default: // finish
				pt.release(r.IntN(seqs))
			}
			if err := pt.check(); err != nil {
				t.Fatalf("seed %d op %d: %v", seed, op, err)
			}
		}
		for s := range seqs {
			pt.release(s)
		}
		if err := pt.check(); err != nil || len(pt.free) != pages {
			t.Fatalf("seed %d: after every finish %d of %d pages free (%v)", seed, len(pt.free), pages, err)
		}
		if copies == 0 {
			t.Errorf("seed %d: no copy on write happened", seed)
		}
	}
}

// TestKVCacheRandomSchedule runs a small paged cache (pages for about half
// its sequences) through random arrivals, mixed steps of decode rows and
// prefill chunks, forks, finishes and running out of pages, and checks
// that (1) a step refused for want of pages changed nothing, (2) the
// accounting holds after every call and returns every page at the end,
// and (3) the logits after each sequence's newest token are bit for bit
// those of its whole history prefilled alone in a fresh cache: pages
// shared, copied on write, recycled or scattered never change a result.
func TestKVCacheRandomSchedule(t *testing.T) {
	m := openFixture(t, "qwen2-f32", withAdapter("qwen2-f32"))
	V, maxLen := m.Config.VocabSize, min(m.MaxLen(), 80)
	const seqs = 6
	d, err := m.NewPagedKVCache(KVOptions{Seqs: seqs, MaxLen: maxLen, Pages: seqs * pagesFor(maxLen) / 2, MaxTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ref, err := m.NewKVCache(1, maxLen, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	r := rand.New(rand.NewPCG(7, 33))
	hist := make([][]int32, seqs) // every token each sequence holds
	host, want := make([]float32, seqs*V), make([]float32, V)
	tokens := func(n int) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(r.IntN(V))
		}
		return ids
	}
	checked, refused := 0, 0
	for op := range 150 {
		switch k := r.IntN(10); {
		case k < 6: // a step: each chosen sequence gets 1 token or a chunk
			var rows []KVRow
			total := 0
			for _, s := range r.Perm(seqs)[:1+r.IntN(seqs)] {
				n := 1
				if len(hist[s]) == 0 || r.IntN(3) == 0 {
					n = 1 + r.IntN(20)
				}
				n = min(n, maxLen-len(hist[s]), 64-total)
				if n <= 0 {
					continue
				}
				total += n
				rows = append(rows, KVRow{Seq: s, IDs: tokens(n)})
			}
			if len(rows) == 0 {
				break
			}
			free := d.FreePages()
			lens := make([]int, seqs)
			for s := range lens {
				lens[s] = d.Len(s)
			}
			buf, err := d.Step(rows)
			if errors.Is(err, ErrOutOfPages) {
				refused++
				for s := range lens {
					if d.Len(s) != lens[s] {
						t.Fatalf("op %d: a refused step changed sequence %d: %d tokens, was %d", op, s, d.Len(s), lens[s])
					}
				}
				if d.FreePages() != free {
					t.Fatalf("op %d: a refused step changed the free pages: %d, was %d", op, d.FreePages(), free)
				}
				s := r.IntN(seqs) // preempt someone
				hist[s] = nil
				if err := d.Reset(s); err != nil {
					t.Fatal(err)
				}
				break
			}
			if err != nil {
				t.Fatalf("op %d: %v", op, err)
			}
			m.be.CopyOut(host[:len(rows)*V], buf)
			for i, row := range rows {
				hist[row.Seq] = append(hist[row.Seq], row.IDs...)
				if r.IntN(3) > 0 {
					continue // check a third of the rows against a fresh prefill
				}
				if err := ref.Reset(0); err != nil {
					t.Fatal(err)
				}
				rb, err := ref.Prefill(0, hist[row.Seq])
				if err != nil {
					t.Fatal(err)
				}
				m.be.CopyOut(want, rb)
				if !slices.Equal(host[i*V:(i+1)*V], want) {
					t.Fatalf("op %d: sequence %d (%d tokens): logits differ from its history prefilled alone", op, row.Seq, len(hist[row.Seq]))
				}
				checked++
			}
		case k < 8: // fork
			src := r.IntN(seqs)
			dst := r.Perm(seqs)[:1+r.IntN(2)]
			if err := d.Fork(src, dst); err != nil {
				t.Fatal(err)
			}
			for _, s := range dst {
				hist[s] = slices.Clone(hist[src])
			}
		default: // finish
			s := r.IntN(seqs)
			hist[s] = nil
			if err := d.Reset(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.CheckPages(); err != nil {
			t.Fatalf("op %d: %v", op, err)
		}
		for s := range seqs {
			if d.Len(s) != len(hist[s]) {
				t.Fatalf("op %d: sequence %d holds %d tokens, want %d", op, s, d.Len(s), len(hist[s]))
			}
		}
	}
	for s := range seqs {
		if err := d.Reset(s); err != nil {
			t.Fatal(err)
		}
	}
	if d.FreePages() != d.Pages || d.CheckPages() != nil {
		t.Fatalf("after every finish %d of %d pages are free", d.FreePages(), d.Pages)
	}
	if checked < 20 || refused == 0 {
		t.Errorf("the schedule checked %d rows and ran out of pages %d times; want ≥ 20 and ≥ 1", checked, refused)
	}
}
