package model

// The op interface every decoder layer is written against, once. Two
// implementations run it:
//
//	graphOps (graph.go)   builds the training and scoring graph of one (B, T)
//	                      shape out of kernels/graph nodes; n = B·T rows
//	eagerOps (decode.go)  runs each call at once on the KV-cache decode
//	                      buffers; n = the new tokens of one Prefill/Decode
//
// so prefill, decode and training share one forward pass per architecture
// (layers.go holds the shared blocks, qwen2.go, qwen3.go and llama.go what
// each architecture adds).
//
//	x  [n, w]   an activation: n token rows of w columns (C, Hq·D, Hkv·D or F)

import (
	"gorgonia.org/gorgonia"

	"github.com/argrl/argrl/kernels"
)

// act is one activation of a forward pass: a graph node (graphOps) or a
// device buffer of n·w elements (eagerOps), with its width w.
type act struct {
	node *gorgonia.Node
	buf  kernels.Buffer
	w    int
	// ld, when not 0, is the row stride: the act is columns [col, col+w)
	// of a wider matrix (the fused gate/up parts, read in place by swiGLU,
	// the one op that takes them): eagerOps' buf is a view starting at the
	// block, graphOps' node is the whole matrix.
	ld, col int
}

// ops are the operations of a decoder layer.
type ops interface {
	// setLayer marks the start of layer l (eagerOps recycles scratch), and
	// with l = the layer count the end of the last layer.
	setLayer(l int)
	// embed gathers table [V, C] rows for the pass's token ids: [n, C].
	embed(table *Param) act
	// rmsNorm normalizes x over consecutive groups of len(w) columns (the
	// hidden size, or the head dim for per-head q/k norms) and scales by w.
	rmsNorm(x act, w *Param) act
	// preNorm is rmsNorm over the hidden size for an output that only
	// linear and fused read (a layer's two pre-norms): eagerOps writes it
	// in bf16 where every product rounds its A to bf16 anyway (see
	// eagerOps.preNorm).
	preNorm(x act, w *Param) act
	// linear is x·Wᵀ plus (α/r)·B A x when LoRA targets l and is on.
	linear(x act, l *Linear) act
	// fused is f's members' linear(x) computed by one GEMM over their
	// concatenated weights, one act per member; nil when f is nil or not
	// in use (adapters merged): the caller then runs linear per member.
	fused(x act, f *fusedLinear) []act
	// addBias adds b [w] to every row.
	addBias(x act, b *Param) act
	// rope rotates every head (D columns) of every row by its position.
	rope(x act) act
	// attention is causal grouped-query attention of q [n, Hq·D] over
	// layer's keys and values [n, Hkv·D]; eagerOps first appends k and v to
	// the layer's cache.
	attention(q, k, v act, layer int) act
	// add is a + b.
	add(a, b act) act
	// swiGLU is silu(gate)·up.
	swiGLU(gate, up act) act
}

// decoderLayer is one layer of an architecture's weight struct: the tagged
// struct is the runtime module and forward its pass over ops.
type decoderLayer interface {
	forward(o ops, x act, layer int) act
}

// forward runs the decoder over o: embedding, every layer, final norm. It
// returns the normed hidden states [n, C] the heads read.
func forward(o ops, w Weights) act {
	h := w.head()
	x := o.embed(h.Embed)
	for l := range w.numLayers() {
		o.setLayer(l)
		x = w.layer(l).forward(o, x, l)
	}
	o.setLayer(w.numLayers())
	return o.rmsNorm(x, h.Norm)
}
