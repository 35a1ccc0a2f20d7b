package graph

// Activation recompute. Config.Segments groups forward nodes (one decoder
// layer each). A segment node whose value is read only inside its segment
// (and is not an output) is recomputable: its forward value is released
// after its last forward reader, and the backward pass computes it again,
// as a second incarnation (version 1), right before the first backward
// step that reads a recomputable node of that segment. Only the nodes the
// backward needs, with their recomputable ancestors, run again, in forward
// order. Nodes read outside their segment (a layer's output, which the next
// layer reads) are kept, as every node is without segments.
//
// The recomputation runs the same kernels on the same inputs (dropout
// masks come from the batch seed and each op's site), so every backward
// step reads the same values as without segments: gradients are
// bit-identical.

import (
	"fmt"

	"gorgonia.org/gorgonia"
)

// sched is the run order of a compiled graph: node incarnations, with the
// rule for which incarnation of each child a step reads (kids).
type sched struct {
	steps      []pnode
	bwd        map[*gorgonia.Node]bool
	rec        map[*gorgonia.Node]bool // recomputable: read as version 1 in the backward
	recomputed int                     // recompute steps that run a kernel
}

// kids returns the incarnations of pn's children that pn reads: a
// recomputed step or a backward step reads the recomputation of a
// recomputable child, every other step version 0.
func (s *sched) kids(pn pnode) []pnode {
	cs := children(pn.n)
	out := make([]pnode, len(cs))
	for i, c := range cs {
		out[i] = pnode{n: c}
		if (pn.v == 1 || s.bwd[pn.n]) && s.rec[c] {
			out[i].v = 1
		}
	}
	return out
}

// root is the node whose storage n is a window of (n itself unless n is a
// view).
func root(n *gorgonia.Node) *gorgonia.Node {
	for {
		o, ok := ourOp(n)
		if !ok || o.view == nil {
			return n
		}
		n = children(n)[0]
	}
}

// schedule orders the forward nodes, then the backward nodes with the
// recomputation of each segment inserted before its first reader.
func schedule(fwd, bwd []*gorgonia.Node, segments [][]*gorgonia.Node, isOutput map[*gorgonia.Node]bool) (*sched, error) {
	sc := &sched{bwd: map[*gorgonia.Node]bool{}, rec: map[*gorgonia.Node]bool{}}
	for _, n := range bwd {
		sc.bwd[n] = true
	}
	for _, n := range fwd {
		sc.steps = append(sc.steps, pnode{n: n})
	}
	if len(segments) == 0 {
		for _, n := range bwd {
			sc.steps = append(sc.steps, pnode{n: n})
		}
		return sc, nil
	}
	inFwd := map[*gorgonia.Node]bool{}
	for _, n := range fwd {
		inFwd[n] = true
	}
	seg := map[*gorgonia.Node]int{}
	for i, s := range segments {
		for _, n := range s {
			if !inFwd[n] {
				continue // not run, an input, or a backward node
			}
			if j, dup := seg[n]; dup && j != i {
				return nil, fmt.Errorf("graph: Compile: node %v is in recompute segments %d and %d", n, j, i)
			}
			seg[n] = i
		}
	}
	// Keep the storages read outside their segment, and outputs.
	keep := map[*gorgonia.Node]bool{}
	for _, n := range fwd {
		if isOutput[n] {
			keep[root(n)] = true
		}
		sn, inSeg := seg[n]
		for _, c := range children(n) {
			if sc2, ok := seg[c]; ok && (!inSeg || sn != sc2) {
				keep[root(c)] = true
			}
		}
	}
	for n, s := range seg {
		r := root(n)
		if rs, ok := seg[r]; ok && rs == s && !keep[r] {
			sc.rec[n] = true
		}
	}
	// What the backward needs recomputed, with its recomputable ancestors.
	need := map[*gorgonia.Node]bool{}
	var mark func(n *gorgonia.Node)
	mark = func(n *gorgonia.Node) {
		if need[n] {
			return
		}
		need[n] = true
		for _, c := range children(n) {
			if sc.rec[c] {
				mark(c)
			}
		}
	}
	for _, b := range bwd {
		for _, c := range children(b) {
			if sc.rec[c] {
				mark(c)
			}
		}
	}
	lists := make([][]*gorgonia.Node, len(segments))
	for _, n := range fwd {
		if need[n] {
			lists[seg[n]] = append(lists[seg[n]], n)
		}
	}
	done := make([]bool, len(segments))
	for _, b := range bwd {
		for _, c := range children(b) {
			if s := seg[c]; sc.rec[c] && !done[s] {
				done[s] = true
				for _, n := range lists[s] {
					sc.steps = append(sc.steps, pnode{n: n, v: 1})
					if o, _ := ourOp(n); o != nil && o.view == nil {
						sc.recomputed++
					}
				}
			}
		}
		sc.steps = append(sc.steps, pnode{n: b})
	}
	return sc, nil
}
