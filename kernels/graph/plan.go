package graph

// Liveness-based memory planning. Every node that computes something owns a
// storage; a view node is a window (offset) of its parent's storage. Inputs,
// constants and outputs are pinned: they get buffers of their own for the
// executor's lifetime. Every other storage lives from the step that defines
// it to the last step that reads it (through any window), and occupies a
// shared slot meanwhile: a slot is handed back after that last reader, so a
// later node reuses it. Steps run in a fixed order, so the plan is static
// and no allocation happens while running.

import (
	"gorgonia.org/gorgonia"
)

type storage struct {
	node      *gorgonia.Node // owner
	size      int            // elements
	pinned    bool           // own buffer, never reused
	bound     bool           // the caller's buffer (Config.Bind)
	slot      int            // shared slot when not pinned
	def, last int            // defining step, last reading step

	lastFwd, firstBwd int    // last forward reader (def if none), first backward one (-1: none)
	packed            bool   // a multi-output node read through windows (stash.go)
	primary           int    // its largest window at offset 0 (its primary output)
	tail              bool   // a stash tail (its slot is in plan.tailCap)
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
	slotCap  []int
	stats    Stats

	nFwd      int        // steps[:nFwd] are the forward phase
	stashBF16 bool       // Config.StashBF16
	stashes   []*storage // the stashed storages, in definition order
	bf16Cap   []int      // the stash slots (bf16 elements)
	tailCap   []int      // the stash tails' slots (float32, kept apart: tiny)
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

// layout assigns storages to the steps' nodes (in run order), then slots
// to the unpinned storages.
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

	dies := make([][]*storage, len(steps))
	born := make([][]*storage, len(steps)) // restored stashes, taken before their step
	for _, st := range sts {
		if !st.pinned && !st.tail {
			dies[st.last] = append(dies[st.last], st)
		}
		if st.node == nil && !st.tail { // a restore: taken before its step
			born[st.def] = append(born[st.def], st)
		}
	}
	var bfree, tfree []int // stash and tail slots not in use
	var free []int         // slot ids not in use
	for _, st := range sts {
		if st.pinned {
			p.stats.PinnedElems += int64(st.size)
		} else {
			p.stats.NaiveElems += int64(st.size)
		}
	}
	for i, n := range steps {
		for _, st := range born[i] {
			st.slot, free = take(&p.slotCap, free, st.size)
		}
		if l, ok := p.loc[n]; ok && l.st.def == i && !l.st.pinned {
			l.st.slot, free = take(&p.slotCap, free, l.st.size)
		}
		for _, st := range dies[i] {
			free = append(free, st.slot)
			if sh := st.stash; sh != nil { // packed after step i, while its slot is still intact
				sh.slot, bfree = take(&p.bf16Cap, bfree, sh.n)
				if sh.tail != nil {
					sh.tail.slot, tfree = take(&p.tailCap, tfree, sh.tail.size)
				}
			}
		}
		for _, st := range p.stashes {
			if sh := st.stash; sh.restore.def == i { // unpacked before step i
				bfree = append(bfree, sh.slot)
				if sh.tail != nil {
					tfree = append(tfree, sh.tail.slot)
				}
			}
		}
	}
	for _, c := range p.slotCap {
		p.stats.SlotElems += int64(c)
	}
	for _, c := range p.bf16Cap {
		p.stats.StashElems += int64(c)
	}
	for _, c := range p.tailCap {
		p.stats.SlotElems += int64(c)
	}
	p.stats.Slots = len(p.slotCap)
	for _, st := range p.leaves {
		if !st.bound {
			p.stats.PinnedElems += int64(st.size)
		}
	}
}

// take returns a slot of *caps for n elements and the remaining free
// list: the smallest free slot that fits, else the largest free slot grown
// to n, else a new slot.
func take(caps *[]int, free []int, n int) (int, []int) {
	slotCap := *caps
	best := -1
	for j, s := range free {
		c := slotCap[s]
		if c >= n && (best < 0 || c < slotCap[free[best]]) {
			best = j
		}
	}
	if best < 0 {
		for j, s := range free {
			if best < 0 || slotCap[s] > slotCap[free[best]] {
				best = j
			}
		}
	}
	if best < 0 {
		*caps = append(slotCap, n)
		return len(*caps) - 1, free
	}
	s := free[best]
	if slotCap[s] < n {
		slotCap[s] = n
	}
	free[best] = free[len(free)-1]
	return s, free[:len(free)-1]
}
