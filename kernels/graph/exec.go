package graph

// The Executor runs a Gorgonia graph of this package's ops on a Backend.
//
// Compile walks gorgonia.Sort's order (reversed: inputs first), keeps the
// nodes the requested outputs need, splits them into a forward phase (nodes
// that do not depend on a Late input) and a backward phase (the rest), and
// plans memory: inputs are bound to caller buffers or allocated once,
// constants are uploaded once, outputs get dedicated buffers, and every
// other node gets a window of a shared arena that later nodes reuse once
// its last consumer has run (plan.go). Views cost nothing: they are windows
// of their parent's buffer.
//
// Gorgonia's Grad inserts two kinds of nodes besides calls to our ops'
// SymDiff: the scalar constant 1 (the cost's gradient) and elementwise
// additions (gradient accumulation where a node feeds several consumers).
// The Executor runs the constant as a preloaded buffer and the addition
// as AXPBY; any other foreign op is a Compile error.

import (
	"fmt"
	"strings"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// Config says what a compiled graph computes.
type Config struct {
	// Outputs are the nodes to read after running: log-probs, entropy,
	// values, the cost, gradients. Only their ancestors run.
	Outputs []*gorgonia.Node
	// Late are input nodes set between Forward and Backward (dLoss/dlp).
	// Nodes depending on them run in Backward; all others in Forward.
	Late []*gorgonia.Node
	// Bind maps input nodes to existing buffers of the Backend (weights,
	// uploaded once, shared by several executors). Each must have exactly
	// the node's number of elements. Unbound inputs get executor-owned
	// buffers (see Set and Buffer).
	Bind map[*gorgonia.Node]kernels.Buffer
	// StashBF16 keeps the forward activations the backward phase reads in
	// bf16 between the phases (stash.go): about half the activation memory
	// of a training step, the forward unchanged, the backward reading
	// rounded activations.
	StashBF16 bool
	// Segments are groups of forward nodes (a decoder layer each) whose
	// values are not kept for the backward pass but computed again there
	// (activation recompute, recompute.go). Nil keeps every value.
	Segments [][]*gorgonia.Node
}

// Stats describes a compiled plan, in float32 elements.
type Stats struct {
	ForwardSteps, BackwardSteps int
	RecomputeSteps              int   // backward steps that recompute a forward node (Config.Segments)
	Slots                       int   // shared arenas (float32, bf16 stashes, stash tails)
	SlotElems                   int64 // float32 arena elements: the intermediate memory allocated
	LiveElems                   int64 // the most float32 intermediate elements live at one step (≤ SlotElems)
	ScratchElems                int64 // the ops' work space (one buffer, the largest need)
	NaiveElems                  int64 // intermediates if none were reused
	PinnedElems                 int64 // outputs, constants, executor-owned inputs
	StashElems                  int64 // bf16 elements of the stash arena (StashBF16)
	Stashed                     int   // activations stashed
}

// ActivationBytes is the memory the plan allocates for intermediates (the
// activations the backward pass reads among them), the ops' work space and
// the bf16 stash: 4·(SlotElems + ScratchElems) + 2·StashElems.
func (s Stats) ActivationBytes() int64 { return 4*(s.SlotElems+s.ScratchElems) + 2*s.StashElems }

// Executor is a compiled graph. It is not safe for concurrent use.
type Executor struct {
	be     kernels.Backend
	steps  []step
	nFwd   int
	pinned map[*gorgonia.Node]kernels.Buffer // inputs, constants, outputs
	owned  []kernels.Buffer                  // freed by Close
	stats  Stats
	ready  bool // Forward ran; Backward may run
	closed bool
}

type stepKind uint8

const (
	kKernel  stepKind = iota // one of our ops
	kAdd                     // Gorgonia's elementwise + (gradient accumulation)
	kCopy                    // an output that is a window of a larger node
	kConvert                 // a stash packed to bf16 or restored (stash.go)
)

type step struct {
	node *gorgonia.Node
	kind stepKind
	op   *op
	out  kernels.Buffer
	in   []kernels.Buffer
}

// Compile plans g for be. See Config.
func Compile(g *gorgonia.ExprGraph, be kernels.Backend, cfg Config) (*Executor, error) {
	if g == nil || be == nil {
		return nil, fmt.Errorf("graph: Compile: nil graph or backend")
	}
	p, sc, err := makePlan(g, cfg)
	if err != nil {
		return nil, err
	}
	e := &Executor{be: be, pinned: map[*gorgonia.Node]kernels.Buffer{}, stats: p.stats}
	if err := e.materialize(p, cfg, sc); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Plan returns the Stats of the plan Compile would make for g, allocating
// nothing: what a graph will need, checked before it is built.
func Plan(g *gorgonia.ExprGraph, cfg Config) (Stats, error) {
	if g == nil {
		return Stats{}, fmt.Errorf("graph: Plan: nil graph")
	}
	p, _, err := makePlan(g, cfg)
	if err != nil {
		return Stats{}, err
	}
	return p.stats, nil
}

// makePlan orders g's needed nodes by phase, schedules them and lays out
// their storage.
func makePlan(g *gorgonia.ExprGraph, cfg Config) (*plan, *sched, error) {
	if len(cfg.Outputs) == 0 {
		return nil, nil, fmt.Errorf("graph: Compile: no outputs")
	}
	sorted, err := gorgonia.Sort(g)
	if err != nil {
		return nil, nil, fmt.Errorf("graph: Compile: %w", err)
	}

	// Needed nodes: ancestors of the outputs.
	need := map[*gorgonia.Node]bool{}
	var mark func(n *gorgonia.Node)
	mark = func(n *gorgonia.Node) {
		if need[n] {
			return
		}
		need[n] = true
		for _, c := range children(n) {
			mark(c)
		}
	}
	p := newPlan()
	for _, n := range cfg.Outputs {
		if n == nil || n.Graph() != g {
			return nil, nil, fmt.Errorf("graph: Compile: output %v is not a node of this graph", n)
		}
		mark(n)
		p.isOutput[n] = true
	}
	late := map[*gorgonia.Node]bool{}
	for _, n := range cfg.Late {
		if n == nil || n.Graph() != g || n.Op() != nil {
			return nil, nil, fmt.Errorf("graph: Compile: late node %v is not an input of this graph", n)
		}
		late[n] = true
	}
	for n := range cfg.Bind {
		if n == nil || n.Graph() != g || n.Op() != nil {
			return nil, nil, fmt.Errorf("graph: Compile: bound node %v is not an input of this graph", n)
		}
	}

	// Sort puts roots first; run inputs first. Split by phase.
	var fwd, bwd []*gorgonia.Node
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		if !need[n] {
			continue
		}
		cs := children(n)
		for _, c := range cs {
			if late[c] {
				late[n] = true
			}
		}
		switch {
		case n.Op() == nil:
			_, bound := cfg.Bind[n]
			p.leaf(n, bound)
		case isConstant(n):
			p.leaf(n, false)
		default:
			if err := classify(n, cs); err != nil {
				return nil, nil, err
			}
			if late[n] {
				bwd = append(bwd, n)
			} else {
				fwd = append(fwd, n)
			}
		}
	}
	sc, err := schedule(fwd, bwd, cfg.Segments, p.isOutput)
	if err != nil {
		return nil, nil, err
	}
	p.nFwd, p.stashBF16 = len(fwd), cfg.StashBF16
	p.layout(sc.steps, sc.kids)
	p.stats.RecomputeSteps = sc.recomputed
	p.stats.Stashed = len(p.stashes)
	for _, pn := range sc.steps {
		if o, _ := ourOp(pn.n); o != nil && o.view == nil {
			p.stats.ScratchElems = max(p.stats.ScratchElems, int64(o.scratch))
		}
	}

	return p, sc, nil
}

// isConstant reports a Gorgonia constant (Grad's scalar 1, or NewConstant).
func isConstant(n *gorgonia.Node) bool {
	if _, ours := ourOp(n); ours {
		return false
	}
	return n.Op() != nil && n.Op().Arity() == 0 && n.Value() != nil
}

// isGorgoniaAdd reports Gorgonia's elementwise addition, which Grad inserts
// to sum the gradients of a node with several consumers.
func isGorgoniaAdd(n *gorgonia.Node) bool {
	o := n.Op()
	return fmt.Sprintf("%T", o) == "gorgonia.elemBinOp" && strings.HasPrefix(o.String(), "+ ")
}

// classify checks that the executor can run n.
func classify(n *gorgonia.Node, cs []*gorgonia.Node) error {
	if o, ok := ourOp(n); ok {
		if len(cs) != o.Arity() {
			return fmt.Errorf("graph: node %v: %d inputs, op wants %d", n, len(cs), o.Arity())
		}
		return nil
	}
	if isGorgoniaAdd(n) {
		if len(cs) != 2 || size(cs[0]) != size(n) || size(cs[1]) != size(n) {
			return fmt.Errorf("graph: node %v: broadcasting addition is not supported (shapes %v + %v)", n, cs[0].Shape(), cs[1].Shape())
		}
		return nil
	}
	return fmt.Errorf("graph: node %v: unsupported Gorgonia op %v (%T); build graphs from this package's ops", n, n.Op(), n.Op())
}

// materialize allocates the plan's buffers and resolves every step's
// buffers; sc.steps[:p.nFwd] form the forward phase.
func (e *Executor) materialize(p *plan, cfg Config, sc *sched) error {
	be, nFwd := e.be, p.nFwd
	arena := be.Alloc(kernels.F32, p.arena[0])
	e.owned = append(e.owned, arena)
	sb := e.materializeStash(p, arena)
	roots := map[*storage]kernels.Buffer{}
	// bufOfPhase is pn's buffer as a step of the given phase reads it: a
	// backward step reads a stashed storage's restored copy.
	bufOfPhase := func(pn pnode, bwd bool) (kernels.Buffer, error) {
		n := pn.n
		l, ok := p.loc[pn]
		if !ok {
			return nil, fmt.Errorf("graph: Compile: node %v has no buffer", n)
		}
		st := l.st
		if bwd && st.stash != nil {
			return viewOf(be, sb.restored[st], l.off, size(n)), nil
		}
		b, ok := roots[st]
		if !ok {
			switch {
			case st.bound:
				b = cfg.Bind[st.node]
				if b == nil || b.Len() != st.size {
					return nil, fmt.Errorf("graph: Compile: input %s: bound buffer has %v elements, want %d", st.node.Name(), lenOf(b), st.size)
				}
			case st.pinned:
				b = be.Alloc(kernels.F32, st.size)
				e.owned = append(e.owned, b)
				if isConstant(st.node) {
					data, err := float32s(st.node.Value())
					if err != nil {
						return nil, fmt.Errorf("graph: Compile: constant %v: %w", st.node, err)
					}
					be.CopyIn(b, data)
				}
			default:
				b = viewOf(be, arena, st.off, st.size)
			}
			roots[st] = b
		}
		return viewOf(be, b, l.off, size(n)), nil
	}
	bufOf := func(pn pnode) (kernels.Buffer, error) { return bufOfPhase(pn, false) }
	for pn := range p.loc {
		if n := pn.n; pn.v == 0 && (n.Op() == nil || isConstant(n) || p.isOutput[n]) {
			b, err := bufOf(pn)
			if err != nil {
				return err
			}
			e.pinned[n] = b
		}
	}
	var scratch kernels.Buffer // the ops' work space (op.scratch, sized by makePlan)
	if e.stats.ScratchElems > 0 {
		scratch = be.Alloc(kernels.F32, int(e.stats.ScratchElems))
		e.owned = append(e.owned, scratch)
	}
	addStep := func(i int, pn pnode) error {
		n := pn.n
		o, _ := ourOp(n)
		kind := kKernel
		switch {
		case o == nil:
			kind = kAdd
		case o.view != nil && !p.copied[n]:
			return nil // a window of its parent: nothing to run
		case o.view != nil:
			kind = kCopy
		}
		cs := sc.kids(pn)
		s := step{node: n, kind: kind, op: o, in: make([]kernels.Buffer, len(cs))}
		var err error
		if s.out, err = bufOf(pn); err != nil {
			return err
		}
		for j, c := range cs {
			if s.in[j], err = bufOfPhase(c, i >= nFwd); err != nil {
				return err
			}
		}
		if kind == kCopy {
			s.in[0] = viewOf(be, s.in[0], o.view.off, size(n))
		}
		if kind == kKernel && o.scratch > 0 {
			s.in = append(s.in, viewOf(be, scratch, 0, o.scratch))
		}
		e.steps = append(e.steps, s)
		return nil
	}
	for i, pn := range sc.steps {
		for _, st := range sb.unpackAt[i] {
			e.steps = append(e.steps, sb.unpackSteps(st, be)...)
		}
		if err := addStep(i, pn); err != nil {
			return err
		}
		for _, st := range sb.packAt[i] {
			f, err := bufOf(pnode{n: st.node})
			if err != nil {
				return err
			}
			e.steps = append(e.steps, sb.packSteps(st, f, be)...)
		}
		if i < nFwd {
			e.nFwd = len(e.steps)
		}
	}
	e.stats.ForwardSteps, e.stats.BackwardSteps = e.nFwd, len(e.steps)-e.nFwd
	if err := be.Sync(); err != nil {
		return fmt.Errorf("graph: Compile: %w", err)
	}
	return nil
}

func lenOf(b kernels.Buffer) any {
	if b == nil {
		return "nil"
	}
	return b.Len()
}

// Forward runs the nodes that do not depend on a Late input.
func (e *Executor) Forward() error {
	if e.closed {
		return fmt.Errorf("graph: Forward on a closed Executor")
	}
	e.ready = false
	if err := e.exec(e.steps[:e.nFwd]); err != nil {
		return fmt.Errorf("graph: Forward: %w", err)
	}
	e.ready = true
	return nil
}

// Backward runs the rest, after Forward and after the Late inputs are set.
// The forward activations it consumes are then released, so each Backward
// needs its own Forward.
func (e *Executor) Backward() error {
	if e.closed {
		return fmt.Errorf("graph: Backward on a closed Executor")
	}
	if !e.ready {
		return fmt.Errorf("graph: Backward without a preceding Forward")
	}
	e.ready = false
	if err := e.exec(e.steps[e.nFwd:]); err != nil {
		return fmt.Errorf("graph: Backward: %w", err)
	}
	return nil
}

// Run is Forward then Backward.
func (e *Executor) Run() error {
	if err := e.Forward(); err != nil {
		return err
	}
	return e.Backward()
}

func (e *Executor) exec(steps []step) error {
	be := e.be
	for i := range steps {
		s := &steps[i]
		switch s.kind {
		case kKernel:
			if err := s.op.run(be, s.out, s.in); err != nil {
				return fmt.Errorf("%s (node %s): %w", s.op.name, s.node.Name(), err)
			}
		case kAdd:
			be.AXPBY(s.out, s.in[0], s.in[1], 1, 1, s.out.Len())
		case kCopy:
			be.Copy(s.out, s.in[0])
		case kConvert:
			be.Convert(s.out, s.in[0])
		}
	}
	return be.Sync()
}

// Buffer returns the device buffer of an input, constant or output node
// (nil for any other node). Output buffers hold the last run's values until
// the next run; input buffers may be written between runs.
func (e *Executor) Buffer(n *gorgonia.Node) kernels.Buffer { return e.pinned[n] }

// Set copies host data into input node n's buffer.
func (e *Executor) Set(n *gorgonia.Node, data []float32) error {
	b := e.pinned[n]
	if b == nil || n.Op() != nil {
		return fmt.Errorf("graph: Set: %v is not an input of this executor", n)
	}
	if len(data) != b.Len() {
		return fmt.Errorf("graph: Set %s: %d values, want %d", n.Name(), len(data), b.Len())
	}
	e.be.CopyIn(b, data)
	return nil
}

// Read copies the values of an input or output node to the host.
func (e *Executor) Read(n *gorgonia.Node) ([]float32, error) {
	b := e.pinned[n]
	if b == nil {
		return nil, fmt.Errorf("graph: Read: %v is not an input or output of this executor", n)
	}
	out := make([]float32, b.Len())
	e.be.CopyOut(out, b)
	if err := e.be.Sync(); err != nil {
		return nil, fmt.Errorf("graph: Read %s: %w", n.Name(), err)
	}
	return out, nil
}

// Stats describes the memory plan.
func (e *Executor) Stats() Stats { return e.stats }

// Close frees the executor's buffers (not the bound ones).
func (e *Executor) Close() {
	if e.closed {
		return
	}
	e.closed = true
	for _, b := range e.owned {
		e.be.Free(b)
	}
	e.owned, e.steps, e.pinned = nil, nil, nil
}
