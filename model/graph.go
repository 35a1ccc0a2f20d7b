package model

// Training and scoring graphs: one Gorgonia graph of kernels/graph ops per
// batch shape (B, T), built on first use and cached. T is the longest
// sequence of the batch rounded up to a multiple of Options.TBucket, so a
// run sees at most MaxLen/TBucket lengths per batch size; rows are right
// padded (pad id 0) and masked: Batch.Lens stops attention at each row's
// length and target −1 zeroes the padded log-probs and their gradients.
// With Options.Pack a micro-batch is one packed row instead (layout.go).
//
//	x    = Embedding(embed)                                  [N, C]   N = B·T
//	per layer l (layers.go):
//	  h  = RMSNorm(x);  q, k, v = lin(h) (+ arch: qwen2 biases, qwen3 q/k norms)
//	  x += lin_o(Attention(RoPE(q), RoPE(k), v))
//	  h  = RMSNorm(x);  x += lin_down(SwiGLU(lin_gate(h), lin_up(h)))
//	hf   = RMSNorm(x, norm)
//	lp, ent = LogProbs(hf·lm_headᵀ, targets)                 [N]
//	value   = hf·wᵀ + b (value head)                          [N, 1]
//	cost    = Dot(lp, dlp) + Dot(value, dval)    dlp, dval: Late inputs from the host
//
// The decoder part is the architecture's forward pass (ops.go) over
// graphOps; lin(x) = x·Wᵀ + ScaleVar(Linear(Linear(Dropout(x), A), B),
// &scale): the LoRA branch W x + (α/r)·B A x, switched off by scale = 0.

import (
	"fmt"

	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/graph"
)

// graphOps builds one graph: the ops of ops.go as kernels/graph nodes.
type graphOps struct {
	m        *Model
	g        *gorgonia.ExprGraph
	b        *graph.Batch
	nodes    map[*Param]*gorgonia.Node
	bind     map[*gorgonia.Node]kernels.Buffer
	cos, sin *gorgonia.Node
	err      error
	starts   []int64 // setLayer calls: the id of the next node at each
}

// in returns the input node of a device tensor (one per tensor).
func (c *graphOps) in(p *Param) *gorgonia.Node {
	if n, ok := c.nodes[p]; ok {
		return n
	}
	n := gorgonia.NewTensor(c.g, gorgonia.Float32, len(p.Shape), gorgonia.WithShape(p.Shape...), gorgonia.WithName(p.Name))
	c.nodes[p] = n
	c.bind[n] = p.W
	return n
}

// ok records the first error of a graph op and passes its node on.
func (c *graphOps) ok(n *gorgonia.Node, err error) *gorgonia.Node {
	if err != nil && c.err == nil {
		c.err = err
	}
	return n
}

// act wraps a node; after an error every op passes an empty act along.
func (c *graphOps) act(n *gorgonia.Node, err error) act {
	n = c.ok(n, err)
	if c.err != nil || n == nil {
		return act{}
	}
	return act{node: n, w: n.Shape()[len(n.Shape())-1]}
}

var _ ops = (*graphOps)(nil)

// setLayer records the id the graph's next node gets (ids count the nodes
// added so far, in creation order).
func (c *graphOps) setLayer(int) { c.starts = append(c.starts, int64(len(c.g.AllNodes()))) }

// segments groups the graph's op nodes by the decoder layer that created
// them: the recompute segments of Options.Recompute.
func (c *graphOps) segments() [][]*gorgonia.Node {
	out := make([][]*gorgonia.Node, max(0, len(c.starts)-1))
	for _, n := range c.g.AllNodes() {
		if n.Op() == nil {
			continue
		}
		for l := range out {
			if n.ID() >= c.starts[l] && n.ID() < c.starts[l+1] {
				out[l] = append(out[l], n)
			}
		}
	}
	return out
}

func (c *graphOps) embed(table *Param) act {
	return c.act(graph.Embedding(c.in(table), c.b))
}

func (c *graphOps) rmsNorm(x act, w *Param) act {
	if c.err != nil {
		return act{}
	}
	return c.act(graph.RMSNorm(x.node, c.in(w), c.m.eps))
}

// preNorm is rmsNorm: the training graph's activations are f32 nodes.
func (c *graphOps) preNorm(x act, w *Param) act { return c.rmsNorm(x, w) }

// linear is x·Wᵀ + ScaleVar(Linear(Linear(Dropout(x), A), B), &scale) when
// LoRA targets l: the branch (α/r)·B A x, switched off by scale = 0.
func (c *graphOps) linear(x act, l *Linear) act {
	if c.err != nil {
		return act{}
	}
	return c.withLoRA(x, c.ok(c.m.linearOp(x.node, c.in(l.W))), l)
}

// fused is one Linear over f's concatenated weights, cut into its parts
// (graph.SplitCols), each with its member's LoRA branch.
func (c *graphOps) fused(x act, f *fusedLinear) []act {
	if f == nil || c.m.merged != nil {
		return nil
	}
	out := make([]act, len(f.parts))
	if c.err != nil {
		return out
	}
	var y *gorgonia.Node
	if f.bias != nil {
		y = c.ok(graph.LinearBias(x.node, c.in(f.W), c.in(f.bias), c.m.bf16))
	} else {
		y = c.ok(c.m.linearOp(x.node, c.in(f.W)))
	}
	if c.err != nil {
		return out
	}
	if f.inPlace && c.inPlaceLoRA(f) {
		return c.fusedInPlace(x, y, f)
	}
	parts, err := graph.SplitCols(y, f.widths...)
	if c.ok(nil, err); c.err != nil {
		return out
	}
	for i, l := range f.parts {
		out[i] = c.withLoRA(x, parts[i], l)
	}
	return out
}

// inPlaceLoRA says whether every LoRA branch of f's members can be
// accumulated into y's columns (graph.LoRAUpCols: rank ≤ LoRAMaxRank).
func (c *graphOps) inPlaceLoRA(f *fusedLinear) bool {
	for _, l := range f.parts {
		if l.lora != nil && c.m.lora.r > graph.LoRAMaxRank {
			return false
		}
	}
	return true
}

// fusedInPlace leaves f's parts in y [n, W] (act.ld, act.col), with each
// member's LoRA branch accumulated into its columns (graph.LoRAUpCols):
// no split copy, and swiGLU reads y whole (graph.SwiGLUFused).
func (c *graphOps) fusedInPlace(x act, y *gorgonia.Node, f *fusedLinear) []act {
	var offs []int
	var ts, bs []*gorgonia.Node
	for i, l := range f.parts {
		if l.lora == nil {
			continue
		}
		xd := x.node
		if p := c.m.lora.dropout; p > 0 {
			xd = c.ok(graph.Dropout(xd, p, c.b))
		}
		ts = append(ts, c.ok(c.m.linearOp(xd, c.in(l.lora.A))))
		bs = append(bs, c.in(l.lora.B))
		offs = append(offs, f.offsets()[i])
	}
	if len(offs) > 0 && c.err == nil {
		y = c.ok(graph.LoRAUpCols(y, offs, ts, bs, &c.m.scale, c.m.bf16))
	}
	out := make([]act, len(f.parts))
	W := f.W.Shape[0]
	for i, off := range f.offsets() {
		out[i] = act{node: y, w: f.widths[i], ld: W, col: off}
	}
	return out
}

// withLoRA is y, the output of l's frozen product, plus l's LoRA branch
// of x when LoRA targets l.
func (c *graphOps) withLoRA(x act, y *gorgonia.Node, l *Linear) act {
	if l.lora == nil || c.err != nil {
		return c.act(y, nil)
	}
	xd := x.node
	if p := c.m.lora.dropout; p > 0 {
		xd = c.ok(graph.Dropout(xd, p, c.b))
	}
	t := c.ok(c.m.linearOp(xd, c.in(l.lora.A)))
	if c.err != nil {
		return act{}
	}
	if c.m.lora.r <= graph.LoRAMaxRank { // the branch accumulated into y
		return c.act(graph.LoRAUp(y, t, c.in(l.lora.B), &c.m.scale, c.m.bf16))
	}
	u := c.ok(graph.ScaleVar(c.ok(c.m.linearOp(t, c.in(l.lora.B))), &c.m.scale))
	if c.err != nil {
		return act{}
	}
	return c.act(graph.Add(y, u))
}

func (c *graphOps) addBias(x act, b *Param) act {
	if c.err != nil {
		return act{}
	}
	return c.act(graph.AddBias(x.node, c.in(b)))
}

func (c *graphOps) rope(x act) act {
	if c.err != nil {
		return act{}
	}
	return c.act(graph.RoPE(x.node, c.cos, c.sin, c.b, x.w/c.m.Config.HeadDim))
}

func (c *graphOps) attention(q, k, v act, _ int) act {
	if c.err != nil {
		return act{}
	}
	cfg := c.m.Config
	return c.act(graph.Attention(q.node, k.node, v.node, c.b, cfg.NumHeads, cfg.NumKVHeads))
}

func (c *graphOps) add(a, b act) act {
	if c.err != nil {
		return act{}
	}
	return c.act(graph.Add(a.node, b.node))
}

// swiGLU is graph.SwiGLU over dense gate and up, or graph.SwiGLUFused
// over the fused gate/up output they are the column blocks of (act.ld).
func (c *graphOps) swiGLU(gate, up act) act {
	if c.err != nil {
		return act{}
	}
	if gate.ld != 0 || up.ld != 0 {
		if gate.node != up.node || gate.col != 0 || up.col != gate.w || up.w != gate.w || gate.ld != 2*gate.w {
			c.err = fmt.Errorf("model: swiGLU: gate (columns %d+%d of %d) and up (%d+%d of %d) are not the halves of one fused output",
				gate.col, gate.w, gate.ld, up.col, up.w, up.ld)
			return act{}
		}
		return c.act(graph.SwiGLUFused(gate.node))
	}
	return c.act(graph.SwiGLU(gate.node, up.node))
}

// headChunkRows bounds the rows of one chunk of logits with Recompute
// layer (graph.LogProbsLinear): 512·V floats, 311 MB at V = 151936 (a
// variable for tests).
var headChunkRows = 512

// linearOp is graph.Linear, or graph.LinearBF16 with Compute bf16.
func (m *Model) linearOp(x, w *gorgonia.Node) (*gorgonia.Node, error) {
	if m.bf16 {
		return graph.LinearBF16(x, w)
	}
	return graph.Linear(x, w)
}

// modelGraph is the graph of one (B, T) with its executors.
type modelGraph struct {
	B, T      int
	g         *gorgonia.ExprGraph
	b         *graph.Batch
	bind      map[*gorgonia.Node]kernels.Buffer
	lp, ent   *gorgonia.Node // [N]
	value     *gorgonia.Node // [N, 1] or nil
	dlp, dval *gorgonia.Node // Late inputs
	grads     []*gorgonia.Node
	segments  [][]*gorgonia.Node // per layer, with Options.Recompute layer
	train     *graph.Executor    // lazily compiled
	eval      *graph.Executor
	used      uint64 // LRU clock
}

func (mg *modelGraph) close() {
	for _, e := range []*graph.Executor{mg.train, mg.eval} {
		if e != nil {
			e.Close()
		}
	}
	mg.train, mg.eval = nil, nil
}

// build constructs the graph for B rows of T tokens: the decoder (forward
// over graphOps), then the heads and the cost.
func (m *Model) build(B, T int) (*modelGraph, error) {
	D := m.Config.HeadDim
	c := &graphOps{m: m, g: gorgonia.NewGraph(), b: graph.NewBatch(B, T), nodes: map[*Param]*gorgonia.Node{},
		bind: map[*gorgonia.Node]kernels.Buffer{}}
	c.cos = c.in(&Param{Name: "rope_cos", Shape: []int{m.maxLen, D / 2}, W: m.cos})
	c.sin = c.in(&Param{Name: "rope_sin", Shape: []int{m.maxLen, D / 2}, W: m.sin})
	hf := forward(c, m.w)
	if c.err != nil {
		return nil, c.err
	}
	mg := &modelGraph{B: B, T: T, g: c.g, b: c.b, bind: c.bind}
	var err error
	head := m.w.head().LMHead
	if m.recompute && head.G == nil { // a frozen head: logits in chunks of rows
		if mg.lp, mg.ent, err = graph.LogProbsLinear(hf.node, c.in(head), c.b, headChunkRows, m.bf16); err != nil {
			return nil, err
		}
	} else {
		logits := c.ok(m.linearOp(hf.node, c.in(head)))
		if c.err != nil {
			return nil, c.err
		}
		if mg.lp, mg.ent, err = graph.LogProbs(logits, c.b, true); err != nil {
			return nil, err
		}
	}
	if m.recompute {
		mg.segments = c.segments()
	}
	if m.vw != nil {
		mg.value = c.ok(graph.AddBias(c.ok(graph.Linear(hf.node, c.in(m.vw))), c.in(m.vb)))
	}
	if len(m.trainable) == 0 || c.err != nil {
		return mg, c.err
	}
	N := B * T
	mg.dlp = gorgonia.NewVector(c.g, gorgonia.Float32, gorgonia.WithShape(N), gorgonia.WithName("dlp"))
	cost := c.ok(graph.Dot(mg.lp, mg.dlp))
	if mg.value != nil {
		mg.dval = gorgonia.NewMatrix(c.g, gorgonia.Float32, gorgonia.WithShape(N, 1), gorgonia.WithName("dval"))
		cost = c.ok(graph.Add(cost, c.ok(graph.Dot(mg.value, mg.dval))))
	}
	if c.err != nil {
		return nil, c.err
	}
	wrt := make(gorgonia.Nodes, len(m.trainable))
	for i, p := range m.trainable {
		wrt[i] = c.in(p)
	}
	if mg.grads, err = gorgonia.Grad(cost, wrt...); err != nil {
		return nil, fmt.Errorf("gradient graph: %w", err)
	}
	return mg, nil
}

// graphCache keeps the most recently used graphs.
type graphCache struct {
	max   int
	clock uint64
	built int // graphs built so far
	m     map[[2]int]*modelGraph
}

func newGraphCache(max int) *graphCache {
	return &graphCache{max: max, m: map[[2]int]*modelGraph{}}
}

func (gc *graphCache) clear() {
	for k, g := range gc.m {
		g.close()
		delete(gc.m, k)
	}
}

// planned is the memory, in bytes, that mg's compiled executors hold.
func (mg *modelGraph) planned() int64 {
	var n int64
	for _, e := range []*graph.Executor{mg.train, mg.eval} {
		if e != nil {
			st := e.Stats()
			n += st.ActivationBytes() + 4*st.PinnedElems
		}
	}
	return n
}

// DefaultGraphBytes is the cached executors' budget when
// Options.GraphBytes is 0. It was 4 GiB: RL calls the model at a new
// (B, T) shape almost every step (the rollouts' longest length varies),
// so up to MaxGraphs shapes' training and scoring executors stayed alive,
// 4 GiB of activations even for the demo's 1M-parameter model (one
// training executor of 32 rows of 320 tokens plans 519 MB: the logits
// alone are B·T·vocab floats), and the Go heap, collected at twice its
// live size, took 7–8.6 GB of RSS (BENCHMARKS.md, "GRPO's resident
// memory"). Evicting costs a graph build and compile, not results: a
// rebuilt graph computes the same bits.
const DefaultGraphBytes int64 = 512 << 20

// trim evicts least recently used graphs other than keep while the cached
// executors plan more than budget bytes (0: DefaultGraphBytes).
func (gc *graphCache) trim(keep *modelGraph, budget int64) {
	if budget <= 0 {
		budget = DefaultGraphBytes
	}
	for {
		var total int64
		var old [2]int
		var oldest uint64 = ^uint64(0)
		for k, g := range gc.m {
			total += g.planned()
			if g != keep && g.used < oldest {
				old, oldest = k, g.used
			}
		}
		if total <= budget || oldest == ^uint64(0) {
			return
		}
		gc.m[old].close()
		delete(gc.m, old)
	}
}

// graphShape returns the cached graph for B rows of T tokens (a layout's
// shape), building it (and evicting the least recently used one) when
// needed.
func (m *Model) graphShape(B, T int) (*modelGraph, error) {
	gc := m.graphs
	key := [2]int{B, T}
	gc.clock++
	if g, ok := gc.m[key]; ok {
		g.used = gc.clock
		return g, nil
	}
	if len(gc.m) >= gc.max {
		var old [2]int
		var oldest uint64 = ^uint64(0)
		for k, g := range gc.m {
			if g.used < oldest {
				old, oldest = k, g.used
			}
		}
		gc.m[old].close()
		delete(gc.m, old)
	}
	g, err := m.build(B, T)
	if err != nil {
		return nil, fmt.Errorf("model: build graph B=%d T=%d: %w", B, T, err)
	}
	g.used = gc.clock
	gc.built++
	gc.m[key] = g
	return g, nil
}

// execConfig is the compile configuration of mg's training or
// forward-only executor.
func (m *Model) execConfig(mg *modelGraph, train bool) graph.Config {
	cfg := graph.Config{Outputs: []*gorgonia.Node{mg.lp, mg.ent}, Bind: mg.bind}
	if mg.value != nil {
		cfg.Outputs = append(cfg.Outputs, mg.value)
	}
	if train {
		if b, ok := m.be.(kernels.BF16Activations); ok && b.BF16Activations() {
			cfg.StashBF16 = true
		}
		cfg.Outputs = append(cfg.Outputs, mg.grads...)
		cfg.Segments = mg.segments
		cfg.Late = []*gorgonia.Node{mg.dlp}
		if mg.dval != nil {
			cfg.Late = append(cfg.Late, mg.dval)
		}
	}
	return cfg
}

// executor returns the graph's training or forward-only executor.
func (m *Model) executor(mg *modelGraph, train bool) (*graph.Executor, error) {
	if train && mg.train != nil {
		return mg.train, nil
	}
	if !train && mg.eval != nil {
		return mg.eval, nil
	}
	e, err := graph.Compile(mg.g, m.be, m.execConfig(mg, train))
	if err != nil {
		return nil, fmt.Errorf("model: compile B=%d T=%d: %w", mg.B, mg.T, err)
	}
	if train {
		mg.train = e
	} else {
		mg.eval = e
	}
	m.graphs.trim(mg, m.opt.GraphBytes)
	return e, nil
}
