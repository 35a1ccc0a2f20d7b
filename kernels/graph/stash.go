package graph

// Stashing (Config.StashBF16): a forward activation that the backward
// phase reads is converted to bf16 right after its last forward reader and
// back to float32 right before its first backward reader, so between the
// phases it costs half the memory; the forward phase is untouched (its
// results are bit-identical) and the backward reads the activation rounded
// to bf16, as under mixed-precision autocast. In the plan the float32
// storage ends at its last forward reader, a bf16 stash slot (a second
// slot pool) lives from there to the first backward reader, and a restore
// storage (an ordinary float32 slot) from there to the last reader.
//
// Kept in float32: outputs and other pinned buffers, storages under
// stashMin elements, and the statistics of multi-output nodes (RMSNorm's
// rstd, Attention's lse, which backward recomputes norms and probabilities
// from): of a node read through windows only the primary part (the largest
// window at offset 0) is stashed, the rest is copied to a float32 tail
// (an arena of its own) and back.

import "github.com/argrl/argrl/kernels"

// stashMin is the smallest storage worth two conversions (elements).
const stashMin = 1024

// stash is the bf16 copy of a storage and the float32 storage it is
// restored into.
type stash struct {
	n       int      // elements stashed in bf16: [0, n) of the storage
	bf      *storage // its place in the bf16 arena (def..last: packed..unpacked)
	restore *storage // def: the first backward reader; node nil
	tail    *storage // [n, size) in float32 between the phases, or nil
}

// read records that step i reads st.
func (st *storage) read(i, nFwd int) {
	if st.last < i {
		st.last = i
	}
	if i < nFwd {
		st.lastFwd = max(st.lastFwd, i)
	} else if st.firstBwd < 0 || i < st.firstBwd {
		st.firstBwd = i
	}
}

// planStash picks the storages to stash and returns their restore
// storages (layout places them with the others).
func (p *plan) planStash(sts []*storage) []*storage {
	var out []*storage
	for _, st := range sts {
		n := st.size
		if st.packed {
			n = st.primary
		}
		if st.pinned || st.def >= p.nFwd || st.firstBwd < 0 || n < stashMin {
			continue
		}
		rs := &storage{size: st.size, def: st.firstBwd, last: st.last, lastFwd: st.firstBwd, firstBwd: -1}
		st.stash = &stash{n: n, restore: rs, bf: &storage{size: n, def: st.lastFwd, last: st.firstBwd}}
		out = append(out, rs)
		if n < st.size {
			st.stash.tail = &storage{size: st.size - n, def: st.lastFwd, last: st.firstBwd, lastFwd: st.lastFwd, firstBwd: -1}
		}
		st.last = st.lastFwd
		p.stashes = append(p.stashes, st)
	}
	return out
}

// stashBufs holds the materialized stash buffers: per stashed storage its
// bf16 copy and its restored float32 buffer.
type stashBufs struct {
	bf16, restored, tail map[*storage]kernels.Buffer
	packAt               map[int][]*storage // step index → storages packed after it
	unpackAt             map[int][]*storage // step index → storages unpacked before it
}

// materializeStash allocates the stash arenas and maps every stashed
// storage onto its buffers (restored: a window of the float32 arena).
func (e *Executor) materializeStash(p *plan, arena kernels.Buffer) *stashBufs {
	sb := &stashBufs{bf16: map[*storage]kernels.Buffer{}, restored: map[*storage]kernels.Buffer{},
		tail: map[*storage]kernels.Buffer{}, packAt: map[int][]*storage{}, unpackAt: map[int][]*storage{}}
	if len(p.stashes) == 0 {
		return sb
	}
	bf, tails := e.be.Alloc(kernels.BF16, p.arena[1]), e.be.Alloc(kernels.F32, p.arena[2])
	e.owned = append(e.owned, bf, tails)
	for _, st := range p.stashes {
		sh := st.stash
		sb.bf16[st] = viewOf(e.be, bf, sh.bf.off, sh.n)
		sb.restored[st] = viewOf(e.be, arena, sh.restore.off, st.size)
		if sh.tail != nil {
			sb.tail[st] = viewOf(e.be, tails, sh.tail.off, sh.tail.size)
		}
		sb.packAt[st.last] = append(sb.packAt[st.last], st)
		sb.unpackAt[sh.restore.def] = append(sb.unpackAt[sh.restore.def], st)
	}
	return sb
}

// packSteps converts f (the storage's float32 buffer) into its stash.
func (sb *stashBufs) packSteps(st *storage, f kernels.Buffer, be kernels.Backend) []step {
	sh := st.stash
	out := []step{{node: st.node, kind: kConvert, in: []kernels.Buffer{viewOf(be, f, 0, sh.n)}, out: sb.bf16[st]}}
	if sh.tail != nil {
		out = append(out, step{node: st.node, kind: kCopy, in: []kernels.Buffer{viewOf(be, f, sh.n, sh.tail.size)}, out: sb.tail[st]})
	}
	return out
}

// unpackSteps restores the stash into the storage's restore buffer.
func (sb *stashBufs) unpackSteps(st *storage, be kernels.Backend) []step {
	sh, r := st.stash, sb.restored[st]
	out := []step{{node: st.node, kind: kConvert, in: []kernels.Buffer{sb.bf16[st]}, out: viewOf(be, r, 0, sh.n)}}
	if sh.tail != nil {
		out = append(out, step{node: st.node, kind: kCopy, in: []kernels.Buffer{sb.tail[st]}, out: viewOf(be, r, sh.n, sh.tail.size)})
	}
	return out
}
