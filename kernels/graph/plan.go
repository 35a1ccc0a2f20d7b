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

// pnode is one incarnation of a node: version 0 is the node as the forward
// (or backward) pass computes it, version 1 its recomputation in the
// backward pass (recompute.go).
type pnode struct {
	n *gorgonia.Node
	v uint8
}

type plan struct {
	loc      map[pnode]location
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
	return &plan{loc: map[pnode]location{}, copied: map[*gorgonia.Node]bool{}, isOutput: map[*gorgonia.Node]bool{}}
}

// leaf registers an input or constant node.
func (p *plan) leaf(n *gorgonia.Node, bound bool) {
	st := &storage{node: n, size: size(n), pinned: true, bound: bound, def: -1}
	p.loc[pnode{n: n}] = location{st: st}
	p.leaves = append(p.leaves, st)
}

// layout assigns storages to the steps' node incarnations (in run order;
// kids gives the incarnations each step reads), then places the
// unpinned storages in the arenas.
func (p *plan) layout(steps []pnode, kids func(pnode) []pnode) {
	var sts []*storage
	for i, pn := range steps {
		n := pn.n
		cs := kids(pn)
		for _, c := range cs {
			if l, ok := p.loc[c]; ok {
				l.st.read(i, p.nFwd)
			}
		}
		o, _ := ourOp(n)
		if o != nil && o.view != nil {
			parent := p.loc[cs[0]]
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
				p.loc[pn] = location{st: parent.st, off: parent.off + o.view.off}
				if p.isOutput[n] {
					parent.st.pinned = true
				}
				continue
			}
		}
		st := &storage{node: n, size: size(n), pinned: p.isOutput[n], def: i, last: i, lastFwd: i, firstBwd: -1}
		p.loc[pn] = location{st: st}
		sts = append(sts, st)
	}
	if p.stashBF16 {
		sts = append(sts, p.planStash(sts)...)
	}

	var f32s, tails, stashes []*storage
	for _, st := range sts {
		if st.pinned {
			p.stats.PinnedElems += int64(st.size)
			continue
		}
		p.stats.NaiveElems += int64(st.size)
		f32s = append(f32s, st)
		if sh := st.stash; sh != nil {
			stashes = append(stashes, sh.bf)
			if sh.tail != nil {
				tails = append(tails, sh.tail)
			}
		}
	}
	// The most float32 elements live at one step: a lower bound of the
	// float32 arenas.
	delta := make([]int64, len(steps)+1)
	for _, st := range append(f32s, tails...) {
		delta[st.def] += int64(st.size)
		delta[st.last+1] -= int64(st.size)
	}
	live := int64(0)
	for _, d := range delta {
		live += d
		p.stats.LiveElems = max(p.stats.LiveElems, live)
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

// place gives every storage an offset in one arena such that storages live
// at the same step (def..last, inclusive: a step's output never overlaps
// its inputs) never overlap, and returns the arena's size. Greedy orders
// are tried and the smallest arena kept: largest storage first (ties by
// definition, earliest or latest first), longest-lived first, and
// definition order (a first-fit allocator); each storage goes at the lowest
// offset (a multiple of 16 elements) clear of the placed storages whose
// lifetimes meet its own.
func place(sts []*storage) int {
	life := func(st *storage) int { return st.last - st.def }
	orders := []func(a, b *storage) bool{
		func(a, b *storage) bool { return a.size > b.size || (a.size == b.size && a.def < b.def) },
		func(a, b *storage) bool { return a.size > b.size || (a.size == b.size && a.def > b.def) },
		func(a, b *storage) bool { return life(a) > life(b) || (life(a) == life(b) && a.size > b.size) },
		func(a, b *storage) bool { return a.def < b.def },
	}
	best, offs := -1, make([]int, len(sts))
	for _, less := range orders {
		order := append([]*storage(nil), sts...)
		sort.SliceStable(order, func(i, j int) bool { return less(order[i], order[j]) })
		if a := placeInOrder(order); best < 0 || a < best {
			best = a
			for i, st := range sts {
				offs[i] = st.off
			}
		}
	}
	for i, st := range sts {
		st.off = offs[i]
	}
	return max(best, 0)
}

// placeInOrder places sts in this order (see place) and returns the arena.
func placeInOrder(sts []*storage) int {
	var placed []*storage
	var busy [][2]int
	arena := 0
	for _, st := range sts {
		busy = busy[:0]
		for _, q := range placed {
			if q.def <= st.last && st.def <= q.last {
				busy = append(busy, [2]int{q.off, q.off + q.size})
			}
		}
		sort.Slice(busy, func(i, j int) bool { return busy[i][0] < busy[j][0] })
		off := 0
		for _, b := range busy {
			if b[0] >= off+st.size {
				break
			}
			off = max(off, (b[1]+15)&^15)
		}
		st.off = off
		placed = append(placed, st)
		arena = max(arena, off+st.size)
	}
	return arena
}
