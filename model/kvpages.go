package model

// The page table of the KV cache (decode.go): the cache's token rows are
// cut into pages of PageSize tokens; each sequence owns a table of pages,
// in order, and a length. Pages are reference-counted: Fork gives a
// sequence another's table (no copy), and a sequence that appends to a
// shared, partly filled last page first copies that page's filled rows
// into a page of its own (copy on write: at most PageSize−1 tokens per
// layer, once per fork). Full pages stay shared for good. A page returns
// to the free list the moment no table holds it.
//
// Invariants (CheckPages): ref[p] is the number of tables that hold p; the
// free list holds exactly the pages with ref 0, once each; a table holds
// ceil(len/PageSize) pages.

import (
	"errors"
	"fmt"
)

// PageSize is the tokens per KV-cache page.
const PageSize = 16

// ErrOutOfPages is returned (wrapped) by a KVCache call that needs more
// free pages than the cache has; the call changed nothing.
var ErrOutOfPages = errors.New("the KV cache is out of pages")

// seqPages is one sequence's page table.
type seqPages struct {
	pages []int32
	n     int // tokens cached
}

// pagesFor is the pages that hold n tokens.
func pagesFor(n int) int { return (n + PageSize - 1) / PageSize }

// pageTable is the cache's page accounting (no device memory).
type pageTable struct {
	seqs []seqPages
	ref  []int32 // per page
	free []int32 // stack; pages are handed out lowest first
}

func newPageTable(seqs, pages int) pageTable {
	t := pageTable{seqs: make([]seqPages, seqs), ref: make([]int32, pages), free: make([]int32, pages)}
	for i := range t.free {
		t.free[i] = int32(pages - 1 - i)
	}
	return t
}

// release drops seq's pages; it holds none after.
func (t *pageTable) release(seq int) {
	s := &t.seqs[seq]
	for _, p := range s.pages {
		if t.ref[p]--; t.ref[p] == 0 {
			t.free = append(t.free, p)
		}
	}
	s.pages, s.n = s.pages[:0], 0
}

// share makes dst hold src's pages (dst's own are released first).
func (t *pageTable) share(src, dst int) {
	if src == dst {
		return
	}
	t.release(dst)
	s := &t.seqs[src]
	for _, p := range s.pages {
		t.ref[p]++
	}
	t.seqs[dst].pages = append(t.seqs[dst].pages[:0], s.pages...)
	t.seqs[dst].n = s.n
}

// need is the free pages appending add[i] tokens to seqs[i] takes, in
// order (a sibling's copy on write may leave the last holder of a page
// alone with it, so the count follows the same order as grow).
func (t *pageTable) need(seqs []int, add []int) int {
	total := 0
	var dropped map[int32]int32
	for i, seq := range seqs {
		s := &t.seqs[seq]
		if s.n%PageSize != 0 {
			last := s.pages[len(s.pages)-1]
			if t.ref[last]-dropped[last] > 1 {
				if dropped == nil {
					dropped = map[int32]int32{}
				}
				dropped[last]++
				total++
			}
		}
		total += pagesFor(s.n+add[i]) - pagesFor(s.n)
	}
	return total
}

// grow makes room for add more tokens in seq: a private copy of a shared
// partial last page (cow is called with the source page, the new page and
// the rows to copy) and new pages. The caller checked need ≤ free.
func (t *pageTable) grow(seq, add int, cow func(src, dst int32, rows int)) {
	s := &t.seqs[seq]
	if r := s.n % PageSize; r != 0 && add > 0 {
		last := s.pages[len(s.pages)-1]
		if t.ref[last] > 1 {
			np := t.pop()
			cow(last, np, r)
			t.ref[last]--
			s.pages[len(s.pages)-1] = np
		}
	}
	for len(s.pages) < pagesFor(s.n+add) {
		s.pages = append(s.pages, t.pop())
	}
}

func (t *pageTable) pop() int32 {
	p := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	t.ref[p] = 1
	return p
}

// check verifies the invariants of the file comment.
func (t *pageTable) check() error {
	count := make([]int32, len(t.ref))
	for i, s := range t.seqs {
		if len(s.pages) != pagesFor(s.n) {
			return fmt.Errorf("sequence %d holds %d tokens in %d pages", i, s.n, len(s.pages))
		}
		for _, p := range s.pages {
			if p < 0 || int(p) >= len(t.ref) {
				return fmt.Errorf("sequence %d holds page %d of %d", i, p, len(t.ref))
			}
			count[p]++
		}
	}
	inFree := make([]bool, len(t.ref))
	for _, p := range t.free {
		if inFree[p] {
			return fmt.Errorf("page %d is free twice", p)
		}
		inFree[p] = true
	}
	for p, c := range count {
		if t.ref[p] != c {
			return fmt.Errorf("page %d: %d references counted, %d held", p, t.ref[p], c)
		}
		if (c == 0) != inFree[p] {
			return fmt.Errorf("page %d: held %d times, free %v", p, c, inFree[p])
		}
	}
	return nil
}
