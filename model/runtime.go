package model

// The runtime model: a checkpoint placed on a kernels.Backend once
// (load.go), with its LoRA adapters (lora.go), and one forward pass per
// architecture (ops.go) run two ways over the same weight buffers: as
// training and scoring graphs (graph.go) and as the KV-cache decode path
// (decode.go).
//
//	m, _ := model.Open(dir, be, model.Options{LoRA: model.DefaultLoRA()})
//	m.ZeroGrad()
//	m.Step(seqs, func(o *model.Outputs) (*model.Grads, error) { ... dLoss/dlp ... })
//	optimizer over m.Trainable()          (Param.W and Param.G buffers)
//	ref, _ := m.Forward(seqs, false)      (adapters off: the frozen reference)
//
// Shapes: see config.go's legend (B, T, C, F, Hq, Hkv, D, V, L, r).

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model/safetensors"
)

// Param is one device tensor of the model. Trainable parameters carry G
// (F32, the shape of W), into which Step accumulates ∂loss/∂W across
// micro-batches until ZeroGrad; frozen weights have G == nil.
type Param struct {
	Name  string // checkpoint name, PEFT name (LoRA) or "value_head.weight"/"value_head.bias"
	Shape []int
	W, G  kernels.Buffer
}

// Len is the number of elements.
func (p *Param) Len() int { return p.W.Len() }

// LoRAOptions configures new LoRA adapters: every targeted linear layer
// computes W x + (α/r)·B A x (α/√r with RSLoRA), with A [r, in]
// Kaiming-uniform as PEFT initializes it (kaiming_uniform_(a=√5), i.e.
// U(±1/√in)), B [out, r] zero, and dropout with probability Dropout on the
// adapter's input x while training.
type LoRAOptions struct {
	R       int      // rank r
	Alpha   float64  // α
	Dropout float64  // dropout on the LoRA input (training steps only)
	Targets []string // short module names (AllTargets order); nil: all
	RSLoRA  bool     // scale α/√r
	Seed    uint64   // seeds A's initialization and the dropout masks
}

// DefaultLoRA is docs/contracts.md §6: r = 32, α = 64, dropout 0.05, every linear layer.
func DefaultLoRA() *LoRAOptions {
	return &LoRAOptions{R: 32, Alpha: 64, Dropout: 0.05, Targets: append([]string(nil), AllTargets...), Seed: 1}
}

// Options says what Open builds.
type Options struct {
	// LoRA creates fresh adapters (nil: none, unless Adapter is set).
	LoRA *LoRAOptions
	// Adapter loads a PEFT adapter directory; its adapter_config.json gives
	// r, α, targets and dropout. With LoRA also set, LoRA's R and Targets
	// must agree with the file and its Dropout and Seed are used instead.
	Adapter string
	// FullFT makes every checkpoint tensor trainable (embeddings and norms
	// included, as f32); it excludes LoRA and Adapter.
	FullFT bool
	// ValueHead adds a PPO value head: value[b,t] = h[b,t]·wᵀ + bias on the
	// final (normed) hidden state, w [1, C] ~ U(±1/√C), bias 0; trainable.
	ValueHead bool
	// MaxLen is the longest sequence (RoPE table rows); 0 means
	// min(max_position_embeddings, 8192).
	MaxLen int
	// F32Weights widens frozen bf16 matrices into f32 buffers (twice their
	// memory). By default they stay in their storage dtype: matmuls read
	// bf16 and widen exactly, so the results are the same either way.
	F32Weights bool
	// TBucket rounds each batch's sequence length up to a multiple of
	// TBucket (0: 16), so at most MaxLen/TBucket graphs per batch size are
	// ever built. MaxGraphs bounds the compiled shapes kept (0: 8), least
	// recently used evicted.
	TBucket, MaxGraphs int
	// Pack lays the sequences of a Step or Forward end to end in one row
	// (RoPE positions restart at each sequence; attention never crosses a
	// boundary: kernels.AttnParams.KStart) instead of one right-padded row
	// each. The row is rounded up to packRound's bucket (≤ 1/64 padding).
	// Per-token results are those of the unpacked layout: log-probs, values
	// and entropies bit for bit on the CPU, gradients within float32
	// rounding (they sum in another order).
	Pack bool
	// GraphBytes bounds the device memory the cached executors plan
	// (activations, logits, gradients; 0: DefaultGraphBytes): least
	// recently used graphs are evicted beyond it, the one in use is always
	// kept.
	GraphBytes int64
	// Compute is the arithmetic of the linear layers' and the LM head's
	// matmuls, forward and backward, in training, scoring and decoding:
	// "f32" (or "") float32, "bf16" bf16 products with float32 sums
	// (kernels.MatMulParams.BF16: activations and weights rounded to
	// bfloat16, as PyTorch's bf16 autocast), which computes as f32 on a
	// backend without bf16 products (kernels.BF16Products); "auto" is
	// bf16 where the backend has bf16 products (a CPU with AVX512-BF16, the
	// CUDA tensor-core modes) and f32 elsewhere (Model.Compute says which).
	Compute string
	// Recompute is "none" (or "") or "layer": training keeps only each
	// decoder layer's input (and the final norm's) between Forward and
	// Backward, runs the layer's forward again right before its backward,
	// and evaluates the LM head and log-softmax in chunks of rows (so the
	// logits never exist for the whole batch). Gradients are bit-identical
	// to "none"; it costs about one more forward pass.
	Recompute string
}

// Model is a checkpoint on a Backend. It is not safe for concurrent use.
type Model struct {
	Config *Config
	Dir    string

	be      kernels.Backend
	opt     Options
	w       Weights           // the architecture's weight struct: the runtime module
	src     *safetensors.Set  // open while backend buffers map its files
	params  []*Param          // every device tensor, checkpoint order, then LoRA, then value head
	byName  map[string]*Param // checkpoint tensors by name
	linears []*Linear         // every linear layer, declaration order
	vw, vb  *Param            // value head [1, C], [1]; nil without
	cos     kernels.Buffer    // RoPE tables [maxLen, D/2]
	sin     kernels.Buffer
	maxLen  int
	eps     float32

	bf16      bool           // Options.Compute is bf16: matmuls with bf16 products
	recompute bool           // Options.Recompute is layer
	lora      *loraState     // nil without adapters
	banks     []*adapterBank // LoadAdapter's adapters (adapters.go)
	scale     float32        // the run-time LoRA scale the graphs read: α/r, or 0 (off / merged)
	adapters  bool           // SetAdapters state
	merged    []merged       // the f32 merged weights while merged (lora.go)
	trainable []*Param
	steps     uint64 // Step calls: the dropout seed counter

	graphs *graphCache

	fusedW []kernels.Buffer // concatenated projection weights and biases (fused.go)
}

// Open places the Hugging Face model directory dir on be. See Options.
//
// The checkpoint (single or sharded) is memory-mapped and checked against
// config.json before anything is allocated: the layer count, then every
// tensor's presence, shape and dtype. Each tensor then goes to a backend
// buffer in its storage dtype (bf16 stays bf16), mapped in place when the
// backend lives in host memory (kernels.Mapper), else uploaded tensor by
// tensor; vectors (norm weights, biases) and trainable tensors are f32.
func Open(dir string, be kernels.Backend, o Options) (*Model, error) {
	if be == nil {
		return nil, fmt.Errorf("model: Open %s: nil backend", dir)
	}
	if o.FullFT && (o.LoRA != nil || o.Adapter != "") {
		return nil, fmt.Errorf("model: Open %s: FullFT excludes LoRA and Adapter", dir)
	}
	if o.TBucket < 0 || o.MaxGraphs < 0 || o.MaxLen < 0 {
		return nil, fmt.Errorf("model: Open %s: negative TBucket, MaxGraphs or MaxLen", dir)
	}
	if o.Compute != "" && o.Compute != "f32" && o.Compute != "bf16" && o.Compute != "auto" {
		return nil, fmt.Errorf("model: Open %s: Compute %q: want f32, bf16 or auto", dir, o.Compute)
	}
	if o.Recompute != "" && o.Recompute != "none" && o.Recompute != "layer" {
		return nil, fmt.Errorf("model: Open %s: Recompute %q: want none or layer", dir, o.Recompute)
	}
	if err := verifyDir(dir); err != nil {
		return nil, err
	}
	c, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var file *Adapter // checked against c before any weight is read
	if o.Adapter != "" {
		if file, err = ImportPEFT(o.Adapter, c); err != nil {
			return nil, err
		}
		if err := checkAdapterOptions(o.Adapter, file, o.LoRA); err != nil {
			return nil, err
		}
	}
	ck, err := openChecked(c, dir)
	if err != nil {
		return nil, err
	}
	m := &Model{Config: c, Dir: dir, be: be, opt: o, w: ck.w, byName: map[string]*Param{},
		eps: float32(c.RMSNormEps), adapters: true, bf16: ResolveCompute(o.Compute, be) == "bf16", recompute: o.Recompute == "layer"}
	if o.TBucket == 0 {
		m.opt.TBucket = 16
	}
	if o.MaxGraphs == 0 {
		m.opt.MaxGraphs = 8
	}
	m.maxLen = o.MaxLen
	if m.maxLen == 0 {
		m.maxLen = min(c.MaxPositions, 8192)
	}
	m.graphs = newGraphCache(m.opt.MaxGraphs)
	if err := m.place(ck.fs, ck.shapes, ck.set); err != nil {
		m.Close()
		return nil, fmt.Errorf("model: Open %s: %w", dir, err)
	}
	m.fuse()
	if err := m.setupLoRA(file); err != nil {
		m.Close()
		return nil, fmt.Errorf("model: Open %s: %w", dir, err)
	}
	if o.ValueHead {
		m.addValueHead()
	}
	if err := be.Sync(); err != nil {
		m.Close()
		return nil, fmt.Errorf("model: Open %s: upload: %w", dir, err)
	}
	return m, nil
}

// addValueHead appends the PPO value head to the trainable parameters.
func (m *Model) addValueHead() {
	C := m.Config.HiddenSize
	r := rand.New(rand.NewPCG(0x76616c7565, 1))
	bound := 1 / math.Sqrt(float64(C))
	w := make([]float32, C)
	for i := range w {
		w[i] = float32((2*r.Float64() - 1) * bound)
	}
	m.vw = m.newParam("value_head.weight", w, 1, C)
	m.vb = m.newParam("value_head.bias", []float32{0}, 1)
}

// newParam uploads a trainable parameter.
func (m *Model) newParam(name string, data []float32, shape ...int) *Param {
	p := &Param{Name: name, Shape: shape, W: m.be.Alloc(kernels.F32, len(data)), G: m.be.Alloc(kernels.F32, len(data))}
	m.be.CopyIn(p.W, data)
	m.params = append(m.params, p)
	m.trainable = append(m.trainable, p)
	return p
}

// Backend is the backend the model lives on.
func (m *Model) Backend() kernels.Backend { return m.be }

// Compute is the matmul arithmetic the model runs: "bf16" or "f32"
// (Options.Compute with "auto" resolved; bf16 on a backend without bf16
// products computes as f32).
func (m *Model) Compute() string {
	if m.bf16 {
		return "bf16"
	}
	return "f32"
}

// ResolveCompute turns a compute setting into "bf16" or "f32": "auto" is
// bf16 where be has bf16 products (kernels.BF16Products: a CPU with
// AVX512-BF16), f32 elsewhere; "" is f32.
func ResolveCompute(compute string, be kernels.Backend) string {
	switch compute {
	case "bf16":
		return "bf16"
	case "auto":
		if kernels.BF16Products(be) {
			return "bf16"
		}
	}
	return "f32"
}

// MaxLen is the longest sequence the model accepts.
func (m *Model) MaxLen() int { return m.maxLen }

// Trainable lists the trainable parameters in a fixed order: LoRA A, B per
// targeted module (layer order, AllTargets order), or every checkpoint
// tensor with FullFT; then the value head. Optimizers keep state per entry.
func (m *Model) Trainable() []*Param { return m.trainable }

// Params lists every device tensor, frozen and trainable.
func (m *Model) Params() []*Param { return m.params }

// ZeroGrad zeroes every trainable parameter's G.
func (m *Model) ZeroGrad() {
	for _, p := range m.trainable {
		m.be.Fill(p.G, 0)
	}
}

// DropoutCounter is the number of Step calls so far, which (with the LoRA
// seed) determines the next dropout masks; SetDropoutCounter restores it
// on resume so the continuation draws the same masks.
func (m *Model) DropoutCounter() uint64     { return m.steps }
func (m *Model) SetDropoutCounter(n uint64) { m.steps = n }

// Close frees the model's device memory and compiled graphs and unmaps
// its checkpoint.
func (m *Model) Close() {
	if m.graphs != nil {
		m.graphs.clear()
	}
	m.freeMerged()
	for _, b := range m.banks {
		b.free(m.be)
	}
	m.banks = nil
	for _, p := range m.params {
		m.be.Free(p.W)
		if p.G != nil {
			m.be.Free(p.G)
		}
	}
	for _, b := range m.fusedW {
		m.be.Free(b)
	}
	m.fusedW = nil
	for _, b := range []kernels.Buffer{m.cos, m.sin} {
		if b != nil {
			m.be.Free(b)
		}
	}
	if m.src != nil {
		m.src.Close()
	}
	m.params, m.trainable, m.cos, m.sin, m.src = nil, nil, nil, nil, nil
}

// Weights is the model's weight struct (*Qwen2Weights, *Qwen3Weights or
// *LlamaWeights), whose tagged fields are the device tensors.
func (m *Model) Weights() Weights { return m.w }

// checkSeqs validates a batch of token sequences and returns the longest length.
func (m *Model) checkSeqs(seqs [][]int32) (int, error) {
	if len(seqs) == 0 {
		return 0, fmt.Errorf("empty batch")
	}
	maxT := 0
	V := int32(m.Config.VocabSize)
	for b, s := range seqs {
		if len(s) == 0 {
			return 0, fmt.Errorf("sequence %d is empty", b)
		}
		if len(s) > m.maxLen {
			return 0, fmt.Errorf("sequence %d has %d tokens, more than MaxLen %d", b, len(s), m.maxLen)
		}
		for t, id := range s {
			if id < 0 || id >= V {
				return 0, fmt.Errorf("sequence %d, token %d: id %d outside the vocabulary [0, %d)", b, t, id, V)
			}
		}
		maxT = max(maxT, len(s))
	}
	return maxT, nil
}
