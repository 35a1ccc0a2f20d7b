package model

// The runtime model: a checkpoint uploaded to a kernels.Backend once, with
// its LoRA adapters (lora.go), training and scoring graphs (graph.go) and a
// graph-free KV-cache decode path (decode.go) over the same kernels and the
// same weight buffers.
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

	"gorgonia.org/gorgonia"

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

// DefaultLoRA is REFERENCE §6: r = 32, α = 64, dropout 0.05, every linear layer.
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
	// included); it excludes LoRA and Adapter.
	FullFT bool
	// ValueHead adds a PPO value head: value[b,t] = h[b,t]·wᵀ + bias on the
	// final (normed) hidden state, w [1, C] ~ U(±1/√C), bias 0; trainable.
	ValueHead bool
	// MaxLen is the longest sequence (RoPE table rows); 0 means
	// min(max_position_embeddings, 8192).
	MaxLen int
	// WeightDType stores frozen matrices (linear weights, embeddings) as
	// BF16 when the checkpoint is BF16 (half the memory; bit-identical
	// values). Default F32, which is faster on the CPU backend. Merge needs F32.
	WeightDType kernels.DType
	// TBucket rounds each batch's sequence length up to a multiple of
	// TBucket (0: 16), so at most MaxLen/TBucket graphs per batch size are
	// ever built. MaxGraphs bounds the compiled shapes kept (0: 8), least
	// recently used evicted.
	TBucket, MaxGraphs int
	// GraphBytes bounds the device memory the cached executors plan
	// (activations, logits, gradients; 0: 4 GiB): least recently used
	// graphs are evicted beyond it, the one in use is always kept.
	GraphBytes int64
}

// linear is one linear layer of a decoder layer: y = x·Wᵀ (+ LoRA).
type linear struct {
	path    string // module path, e.g. "model.layers.0.self_attn.q_proj"
	w       *Param // [out, in]
	in, out int
	lora    *loraPair // nil when not targeted
}

// layer holds the device tensors of one decoder layer.
type layer struct {
	attnNorm, mlpNorm          *Param // [C]
	q, k, v, o, gate, up, down *linear
	extra                      []*Param // the architecture's own tensors (archForward.layerTensors)
}

// archForward is the architecture-specific part of the forward pass,
// implemented next to each Arch (qwen2.go, qwen3.go, llama.go).
type archForward interface {
	// layerTensors names layer l's architecture-specific tensors, resolved
	// once at Open into layer.extra (in this order) for the hooks below.
	layerTensors(l int) []string
	// qkvGraph finishes layer l's projections q [N, Hq·D], k and v [N, Hkv·D]
	// (LoRA included) in the training graph, before RoPE.
	qkvGraph(c *gctx, l int, q, k, v *gorgonia.Node) (q2, k2, v2 *gorgonia.Node, err error)
	// qkvDecode does the same in place on n rows of decode buffers.
	qkvDecode(d *KVCache, l int, q, k, v kernels.Buffer, n int)
}

// Model is a checkpoint on a Backend. It is not safe for concurrent use.
type Model struct {
	Config *Config
	Dir    string

	be                  kernels.Backend
	arch                archForward
	opt                 Options
	params              []*Param          // every device tensor, checkpoint order, then LoRA, then value head
	byName              map[string]*Param // checkpoint tensors by name
	layers              []layer
	embed, norm, lmHead *Param         // lmHead == embed when tied
	vw, vb              *Param         // value head [1, C], [1]; nil without
	cos, sin            kernels.Buffer // RoPE tables [maxLen, D/2]
	maxLen              int
	eps                 float32

	lora      *loraState // nil without adapters
	scale     float32    // the run-time LoRA scale the graphs read: α/r, or 0 (off / merged)
	adapters  bool       // SetAdapters state
	merged    bool
	trainable []*Param
	steps     uint64 // Step calls: the dropout seed counter

	graphs *graphCache
}

// Open loads the Hugging Face model directory dir onto be. See Options.
func Open(dir string, be kernels.Backend, o Options) (*Model, error) {
	if be == nil {
		return nil, fmt.Errorf("model: Open %s: nil backend", dir)
	}
	if o.FullFT && (o.LoRA != nil || o.Adapter != "") {
		return nil, fmt.Errorf("model: Open %s: FullFT excludes LoRA and Adapter", dir)
	}
	if o.WeightDType != kernels.F32 && o.WeightDType != kernels.BF16 {
		return nil, fmt.Errorf("model: Open %s: WeightDType %v is not F32 or BF16", dir, o.WeightDType)
	}
	if o.TBucket < 0 || o.MaxGraphs < 0 || o.MaxLen < 0 {
		return nil, fmt.Errorf("model: Open %s: negative TBucket, MaxGraphs or MaxLen", dir)
	}
	ck, err := Load(dir)
	if err != nil {
		return nil, err
	}
	c := ck.Config
	arch, err := lookupArch(c.ModelType)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", dir, err)
	}
	af, ok := arch.(archForward)
	if !ok {
		return nil, fmt.Errorf("model: %s: model_type %q has no forward pass", dir, c.ModelType)
	}
	m := &Model{Config: c, Dir: dir, be: be, arch: af, opt: o, byName: map[string]*Param{},
		eps: float32(c.RMSNormEps), adapters: true}
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
	if err := m.upload(ck); err != nil {
		m.Close()
		return nil, fmt.Errorf("model: Open %s: %w", dir, err)
	}
	if err := m.setupLoRA(); err != nil {
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

// upload copies every checkpoint tensor to the backend and wires the layers.
func (m *Model) upload(ck *Checkpoint) error {
	c, be := m.Config, m.be
	for _, t := range ck.Weights.Params() {
		dt := kernels.F32
		if m.opt.WeightDType == kernels.BF16 && !m.opt.FullFT && len(t.Shape) == 2 && t.DType == safetensors.BF16 {
			dt = kernels.BF16
		}
		p := &Param{Name: t.Name, Shape: append([]int(nil), t.Shape...), W: be.Alloc(dt, len(t.Data))}
		be.CopyIn(p.W, t.Data)
		if m.opt.FullFT {
			p.G = be.Alloc(kernels.F32, len(t.Data))
			m.trainable = append(m.trainable, p)
		}
		m.params = append(m.params, p)
		m.byName[t.Name] = p
	}
	get := func(name string) (*Param, error) {
		if p := m.byName[name]; p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("tensor %s is not in the checkpoint", name)
	}
	var err error
	if m.embed, err = get("model.embed_tokens.weight"); err != nil {
		return err
	}
	if m.norm, err = get("model.norm.weight"); err != nil {
		return err
	}
	m.lmHead = m.embed
	if !c.TieWordEmbeddings {
		if m.lmHead, err = get("lm_head.weight"); err != nil {
			return err
		}
	}
	mods := LinearModules(c)
	m.layers = make([]layer, c.NumLayers)
	for _, mod := range mods {
		w, err := get(mod.Path + ".weight")
		if err != nil {
			return err
		}
		lin := &linear{path: mod.Path, w: w, in: mod.In, out: mod.Out}
		L := &m.layers[mod.Layer]
		switch mod.Short {
		case "q_proj":
			L.q = lin
		case "k_proj":
			L.k = lin
		case "v_proj":
			L.v = lin
		case "o_proj":
			L.o = lin
		case "gate_proj":
			L.gate = lin
		case "up_proj":
			L.up = lin
		case "down_proj":
			L.down = lin
		}
	}
	for l := range m.layers {
		if m.layers[l].attnNorm, err = get(fmt.Sprintf("model.layers.%d.input_layernorm.weight", l)); err != nil {
			return err
		}
		if m.layers[l].mlpNorm, err = get(fmt.Sprintf("model.layers.%d.post_attention_layernorm.weight", l)); err != nil {
			return err
		}
		for _, name := range m.arch.layerTensors(l) {
			p, err := get(name)
			if err != nil {
				return err
			}
			m.layers[l].extra = append(m.layers[l].extra, p)
		}
	}
	if m.maxLen > 1<<20 {
		return fmt.Errorf("MaxLen %d is too large", m.maxLen)
	}
	cos, sin := kernels.RopeTables(c.HeadDim, m.maxLen, c.RopeTheta, &c.RopeScaling)
	if cos == nil {
		return fmt.Errorf("cannot build RoPE tables for head_dim %d", c.HeadDim)
	}
	m.cos, m.sin = be.Alloc(kernels.F32, len(cos)), be.Alloc(kernels.F32, len(sin))
	be.CopyIn(m.cos, cos)
	be.CopyIn(m.sin, sin)
	return nil
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

// Close frees the model's device memory and compiled graphs.
func (m *Model) Close() {
	if m.graphs != nil {
		m.graphs.clear()
	}
	for _, p := range m.params {
		m.be.Free(p.W)
		if p.G != nil {
			m.be.Free(p.G)
		}
	}
	for _, b := range []kernels.Buffer{m.cos, m.sin} {
		if b != nil {
			m.be.Free(b)
		}
	}
	m.params, m.trainable, m.cos, m.sin = nil, nil, nil, nil
}

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
