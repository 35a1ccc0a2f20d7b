package graph

// Liveness-based memory planning. Every node that computes something owns a
// storage; a view node is a window (offset) of its parent's storage. Inputs,
// constants and outputs are pinned: they get buffers of their own for the
// executor's lifetime. Every other storage lives from the step that defines
// it to the last step that reads it (through any window), and occupies a
// range of a shared arena meanwhile: storages alive at the same time never
// overlap, later ones reuse the memory of earlier ones (place). Steps run
// in a fixed order, so the plan is static and no allocation happens while
// running.

import (
	"slices"
	"sort"

	"gorgonia.org/gorgonia"
)

type storage struct {
	node      *gorgonia.Node // owner
	size      int            // elements
	pinned    bool           // own buffer, never reused
	bound     bool           // the caller's buffer (Config.Bind)
	off       int            // offset in its arena when not pinned
	def, last int            // defining step, last reading step

	lastFwd, firstBwd int    // last forward reader (def if none), first backward one (-1: none)
	packed            bool   // a multi-output node read through windows (stash.go)
	primary           int    // its largest window at offset 0 (its primary output)
	stash             *stash // kept in bf16 between the phases (Config.StashBF16)
}

type location struct {
	st  *storage
	off int
}

type plan struct {
	loc      map[*gorgonia.Node]location
	copied   map[*gorgonia.Node]bool // output windows materialized by a copy step
	isOutput map[*gorgonia.Node]bool
	leaves   []*storage
	stats    Stats

	nFwd      int        // steps[:nFwd] are the forward phase
	stashBF16 bool       // Config.StashBF16
	stashes   []*storage // the stashed storages, in definition order
	arena     [3]int     // elements of the arenas: float32, bf16 stashes, stash tails
}

func newPlan() *plan {
	return &plan{loc: map[*gorgonia.Node]location{}, copied: map[*gorgonia.Node]bool{}, isOutput: map[*gorgonia.Node]bool{}}
}

// leaf registers an input or constant node.
func (p *plan) leaf(n *gorgonia.Node, bound bool) {
	st := &storage{node: n, size: size(n), pinned: true, bound: bound, def: -1}
	p.loc[n] = location{st: st}
	p.leaves = append(p.leaves, st)
}

// layout assigns storages to the steps' nodes (in run order), then places
// the unpinned storages in the arenas.
func (p *plan) layout(steps []*gorgonia.Node) {
	var sts []*storage
	for i, n := range steps {
		for _, c := range children(n) {
			if l, ok := p.loc[c]; ok {
				l.st.read(i, p.nFwd)
			}
		}
		o, _ := ourOp(n)
		if o != nil && o.view != nil {
			parent := p.loc[children(n)[0]]
			if o.view.off != 0 || parent.st.size != size(n) {
				parent.st.packed = true
			}
			if parent.off+o.view.off == 0 && size(n) < parent.st.size {
				parent.st.primary = max(parent.st.primary, size(n))
			}
			if p.isOutput[n] && parent.st.size != size(n) {
				// A window of a larger node (lp inside [lp | lse | ent], a
				// weight gradient inside a packed backward): copy it out
				// rather than pin the whole parent.
				p.copied[n] = true
			} else {
				p.loc[n] = location{st: parent.st, off: parent.off + o.view.off}
				if p.isOutput[n] {
					parent.st.pinned = true
				}
				continue
			}
		}
		st := &storage{node: n, size: size(n), pinned: p.isOutput[n], def: i, last: i, lastFwd: i, firstBwd: -1}
		p.loc[n] = location{st: st}
		sts = append(sts, st)
	}
	if p.stashBF16 {
		sts = append(sts, p.planStash(sts)...)
	}

	var f32s, tails, stashes []span
	for _, st := range sts {
		if st.pinned {
			p.stats.PinnedElems += int64(st.size)
			continue
		}
		p.stats.NaiveElems += int64(st.size)
		f32s = append(f32s, span{st.def, st.last, st.size, &st.off})
		if sh := st.stash; sh != nil { // packed after its last forward reader, unpacked before the first backward one
			stashes = append(stashes, span{st.last, sh.restore.def, sh.n, &sh.off})
			if t := sh.tail; t != nil {
				tails = append(tails, span{t.def, t.last, t.size, &t.off})
			}
		}
	}
	p.arena[0], p.arena[1], p.arena[2] = place(f32s), place(stashes), place(tails)
	p.stats.SlotElems = int64(p.arena[0] + p.arena[2])
	p.stats.StashElems = int64(p.arena[1])
	for _, a := range p.arena {
		if a > 0 {
			p.stats.Slots++
		}
	}
	for _, st := range p.leaves {
		if !st.bound {
			p.stats.PinnedElems += int64(st.size)
		}
	}
}

// span is a storage's lifetime (steps def..last, inclusive) and size;
// place writes its offset in the arena.
type span struct {
	def, last, size int
	off             *int
}

// place lays spans out in one arena, each at the lowest offset where it
// overlaps no placed span alive at the same time, and returns the arena's
// size (near the most elements alive at once, where reusing whole per-node
// buffers can hold a small activation in a large buffer for the backward
// phase). It tries two orders, the largest spans first and definition
// order, and keeps the smaller arena.
func place(spans []span) int {
	bySize := make([]int, len(spans))
	for i := range bySize {
		bySize[i] = i
	}
	byDef := slices.Clone(bySize)
	sort.SliceStable(bySize, func(a, b int) bool {
		x, y := spans[bySize[a]], spans[bySize[b]]
		if x.size != y.size {
			return x.size > y.size
		}
		return x.def < y.def
	})
	sort.SliceStable(byDef, func(a, b int) bool { return spans[byDef[a]].def < spans[byDef[b]].def })
	offs := make([]int, len(spans))
	best := -1
	for _, order := range [][]int{bySize, byDef} {
		if n := placeInOrder(spans, order, offs); best < 0 || n < best {
			best = n
			for i, s := range spans {
				*s.off = offs[i]
			}
		}
	}
	return max(best, 0)
}

// placeInOrder places spans in the given order into offs and returns the
// arena size.
func placeInOrder(spans []span, order []int, offs []int) int {
	var placed []int
	arena := 0
	for _, i := range order {
		s := spans[i]
		var busy []int // placed spans alive at the same time
		for _, j := range placed {
			if q := spans[j]; q.def <= s.last && s.def <= q.last {
				busy = append(busy, j)
			}
		}
		sort.Slice(busy, func(a, b int) bool { return offs[busy[a]] < offs[busy[b]] })
		off := 0
		for _, j := range busy {
			if off+s.size <= offs[j] {
				break
			}
			off = max(off, offs[j]+spans[j].size)
		}
		offs[i] = off
		placed = append(placed, i)
		arena = max(arena, off+s.size)
	}
	return arena
}
