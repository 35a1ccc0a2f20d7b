package model

// The graph-free KV-cache path for rollouts: the decoder of graph.go run
// directly as Backend calls over preallocated buffers, on the same weight
// buffers and the same kernels, so its log-probs equal the training
// forward's up to float32 summation order.
//
//	cache k, v   [L] × [S, Tmax, Hkv, D]   S slots of Tmax positions, allocated once
//	scratch      rows × {C, Hq·D, Hkv·D, F, r}, rows = max(MaxBatch, prefill chunk)
//	logits       [MaxBatch, V]
//
// Prefill appends a prompt to one slot in one pass (chunks of rows tokens);
// Fork copies a slot's cached prefix into other slots (G samples share one
// prefill); Decode appends one token to each of B slots (a ragged batch:
// each slot at its own position) and returns their next-token logits.
// LoRA is applied unmerged, (x·Wᵀ) + (α/r)·(x·Aᵀ)·Bᵀ, following
// SetAdapters; after Merge the merged weights are used instead.

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// prefillChunk is the most prompt tokens one prefill pass takes.
const prefillChunk = 128

// KVCache is a decoding session over a Model. It reads the model's current
// weights and adapter state at every call. Not safe for concurrent use.
type KVCache struct {
	m                    *Model
	S, Tmax              int
	maxBatch, rows       int
	k, v                 []kernels.Buffer // [L] [S, Tmax, Hkv, D]
	lens                 []int32          // [S] tokens cached per slot
	x, h, q, kk, vv, att kernels.Buffer
	o, gate, up, t       kernels.Buffer
	rstd, lse, logits    kernels.Buffer
	owned                []kernels.Buffer
	views                map[int]*rowViews
	rstdViews            map[int]kernels.Buffer
	logitViews           []kernels.Buffer // [B] → logits [B, V]
	slot, qpos, klen     []int32          // per batch row
	pos                  []int32          // per token row
	mark                 []uint64         // per slot: distinctness check
	gen                  uint64
}

// rowViews are the scratch buffers cut to n rows.
type rowViews struct {
	x, h, q, k, v, att, o, gate, up, t, lse kernels.Buffer
}

// NewKVCache allocates a cache of slots sequences of up to maxLen tokens,
// decoding at most maxBatch slots per Decode call.
func (m *Model) NewKVCache(slots, maxLen, maxBatch int) (*KVCache, error) {
	c := m.Config
	if slots <= 0 || maxLen <= 0 || maxBatch <= 0 || maxBatch > slots {
		return nil, fmt.Errorf("model: NewKVCache: want slots > 0, maxLen > 0, 0 < maxBatch ≤ slots; got %d, %d, %d", slots, maxLen, maxBatch)
	}
	if maxLen > m.maxLen {
		return nil, fmt.Errorf("model: NewKVCache: maxLen %d exceeds the model's MaxLen %d", maxLen, m.maxLen)
	}
	be := m.be
	d := &KVCache{m: m, S: slots, Tmax: maxLen, maxBatch: maxBatch, rows: max(maxBatch, prefillChunk),
		lens: make([]int32, slots), views: map[int]*rowViews{}, rstdViews: map[int]kernels.Buffer{}, logitViews: make([]kernels.Buffer, maxBatch+1),
		slot: make([]int32, maxBatch), qpos: make([]int32, maxBatch), klen: make([]int32, maxBatch),
		mark: make([]uint64, slots)}
	d.pos = make([]int32, d.rows)
	alloc := func(n int) kernels.Buffer {
		b := be.Alloc(kernels.F32, n)
		d.owned = append(d.owned, b)
		return b
	}
	kv := slots * maxLen * c.NumKVHeads * c.HeadDim
	for range c.NumLayers {
		d.k = append(d.k, alloc(kv))
		d.v = append(d.v, alloc(kv))
	}
	R, C, qd, kd := d.rows, c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	r := 1
	if m.lora != nil {
		r = m.lora.r
	}
	d.x, d.h, d.o = alloc(R*C), alloc(R*C), alloc(R*C)
	d.q, d.att, d.kk, d.vv = alloc(R*qd), alloc(R*qd), alloc(R*kd), alloc(R*kd)
	d.gate, d.up, d.t = alloc(R*c.IntermediateSize), alloc(R*c.IntermediateSize), alloc(R*r)
	d.rstd, d.lse = alloc(R*c.NumHeads), alloc(R*c.NumHeads)
	d.logits = alloc(maxBatch * c.VocabSize)
	if err := be.Sync(); err != nil {
		d.Close()
		return nil, fmt.Errorf("model: NewKVCache: %w", err)
	}
	return d, nil
}

// Close frees the cache.
func (d *KVCache) Close() {
	for _, b := range d.owned {
		d.m.be.Free(b)
	}
	d.owned, d.k, d.v, d.views = nil, nil, nil, nil
}

// Len is the number of tokens cached in slot.
func (d *KVCache) Len(slot int) int { return int(d.lens[slot]) }

// Reset empties a slot.
func (d *KVCache) Reset(slot int) error {
	if slot < 0 || slot >= d.S {
		return fmt.Errorf("model: KVCache.Reset: slot %d outside [0, %d)", slot, d.S)
	}
	d.lens[slot] = 0
	return nil
}

// Fork copies the cached tokens of slot src into each slot of dst, which
// then continue independently (prefill once, sample G times).
func (d *KVCache) Fork(src int, dst []int) error {
	if src < 0 || src >= d.S {
		return fmt.Errorf("model: KVCache.Fork: source slot %d outside [0, %d)", src, d.S)
	}
	c := d.m.Config
	row := d.Tmax * c.NumKVHeads * c.HeadDim
	n := int(d.lens[src]) * c.NumKVHeads * c.HeadDim
	for _, s := range dst {
		if s < 0 || s >= d.S {
			return fmt.Errorf("model: KVCache.Fork: slot %d outside [0, %d)", s, d.S)
		}
		if s == src {
			continue
		}
		if n > 0 {
			for l := range d.k {
				be := d.m.be
				be.Copy(be.View(d.k[l], s*row, n), be.View(d.k[l], src*row, n))
				be.Copy(be.View(d.v[l], s*row, n), be.View(d.v[l], src*row, n))
			}
		}
		d.lens[s] = d.lens[src]
	}
	if err := d.m.be.Sync(); err != nil {
		return fmt.Errorf("model: KVCache.Fork: %w", err)
	}
	return nil
}

// Prefill appends ids to slot's cache and returns the logits [1, V] that
// follow the last of them (valid until the next call).
func (d *KVCache) Prefill(slot int, ids []int32) (kernels.Buffer, error) {
	m := d.m
	if slot < 0 || slot >= d.S {
		return nil, fmt.Errorf("model: Prefill: slot %d outside [0, %d)", slot, d.S)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("model: Prefill: no tokens")
	}
	if n := int(d.lens[slot]) + len(ids); n > d.Tmax {
		return nil, fmt.Errorf("model: Prefill: slot %d would hold %d tokens, the cache holds %d", slot, n, d.Tmax)
	}
	if err := d.checkIDs(ids); err != nil {
		return nil, fmt.Errorf("model: Prefill: %w", err)
	}
	for off := 0; off < len(ids); off += d.rows {
		chunk := ids[off:min(off+d.rows, len(ids))]
		n := len(chunk)
		d.slot[0], d.qpos[0], d.klen[0] = int32(slot), d.lens[slot], d.lens[slot]+int32(n)
		for i := range n {
			d.pos[i] = d.lens[slot] + int32(i)
		}
		d.forward(chunk, 1, n)
		d.lens[slot] += int32(n)
	}
	C := m.Config.HiddenSize
	n := (len(ids)-1)%d.rows + 1 // rows of the last chunk
	d.head(m.be.View(d.x, (n-1)*C, C), 1)
	if err := m.be.Sync(); err != nil {
		return nil, fmt.Errorf("model: Prefill: %w", err)
	}
	return d.logitsView(1), nil
}

// Decode appends tokens[b] to slots[b] for each row b (distinct slots) and
// returns the next-token logits [B, V] (valid until the next call).
func (d *KVCache) Decode(slots []int, tokens []int32) (kernels.Buffer, error) {
	B := len(slots)
	if B == 0 || B > d.maxBatch || len(tokens) != B {
		return nil, fmt.Errorf("model: Decode: %d slots and %d tokens; want 1..%d of each", B, len(tokens), d.maxBatch)
	}
	if err := d.checkIDs(tokens); err != nil {
		return nil, fmt.Errorf("model: Decode: %w", err)
	}
	d.gen++
	for b, s := range slots {
		if s < 0 || s >= d.S {
			return nil, fmt.Errorf("model: Decode: slot %d outside [0, %d)", s, d.S)
		}
		if d.mark[s] == d.gen {
			return nil, fmt.Errorf("model: Decode: slot %d appears twice", s)
		}
		d.mark[s] = d.gen
		if int(d.lens[s]) >= d.Tmax {
			return nil, fmt.Errorf("model: Decode: slot %d is full (%d tokens)", s, d.Tmax)
		}
		d.slot[b], d.qpos[b], d.klen[b], d.pos[b] = int32(s), d.lens[s], d.lens[s]+1, d.lens[s]
	}
	d.forward(tokens, B, 1)
	for _, s := range slots {
		d.lens[s]++
	}
	d.head(d.rowView(B).x, B)
	if err := d.m.be.Sync(); err != nil {
		return nil, fmt.Errorf("model: Decode: %w", err)
	}
	return d.logitsView(B), nil
}

func (d *KVCache) checkIDs(ids []int32) error {
	V := int32(d.m.Config.VocabSize)
	for i, id := range ids {
		if id < 0 || id >= V {
			return fmt.Errorf("token %d: id %d outside the vocabulary [0, %d)", i, id, V)
		}
	}
	return nil
}

// forward runs B rows of T new tokens (d.slot, d.qpos, d.klen per row,
// d.pos per token) through the decoder, writing their keys and values into
// the cache and leaving the last hidden states in x.
func (d *KVCache) forward(ids []int32, B, T int) {
	m, be, c := d.m, d.m.be, d.m.Config
	n, C, F := B*T, c.HiddenSize, c.IntermediateSize
	D, Hq, Hkv := c.HeadDim, c.NumHeads, c.NumKVHeads
	rv := d.rowView(n)
	rstd := d.scratchRstd(n)
	lse := rv.lse
	pos := d.pos[:n]
	ap := kernels.AttnParams{B: B, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: d.S, Tmax: d.Tmax,
		Slot: d.slot[:B], QPos: d.qpos[:B], KLen: d.klen[:B]}
	be.Embedding(rv.x, m.embed.W, ids, C)
	for l := range m.layers {
		L := &m.layers[l]
		be.RMSNorm(rv.h, rstd, rv.x, L.attnNorm.W, n, C, m.eps)
		d.linear(rv.q, rv.h, n, L.q)
		d.linear(rv.k, rv.h, n, L.k)
		d.linear(rv.v, rv.h, n, L.v)
		m.arch.qkvDecode(d, l, rv.q, rv.k, rv.v, n)
		be.RoPE(rv.q, rv.q, m.cos, m.sin, pos, n, Hq, D, false)
		be.RoPE(rv.k, rv.k, m.cos, m.sin, pos, n, Hkv, D, false)
		be.KVWrite(d.k[l], rv.k, ap.Slot, ap.QPos, B, T, Hkv, D, d.Tmax)
		be.KVWrite(d.v[l], rv.v, ap.Slot, ap.QPos, B, T, Hkv, D, d.Tmax)
		be.Attention(rv.att, lse, rv.q, d.k[l], d.v[l], ap)
		d.linear(rv.o, rv.att, n, L.o)
		be.AXPBY(rv.x, rv.x, rv.o, 1, 1, n*C)
		be.RMSNorm(rv.h, rstd, rv.x, L.mlpNorm.W, n, C, m.eps)
		d.linear(rv.gate, rv.h, n, L.gate)
		d.linear(rv.up, rv.h, n, L.up)
		be.SwiGLU(rv.gate, rv.gate, rv.up, n*F)
		d.linear(rv.o, rv.gate, n, L.down)
		be.AXPBY(rv.x, rv.x, rv.o, 1, 1, n*C)
	}
}

// head writes logits [B, V] for hidden states x [B, C].
func (d *KVCache) head(x kernels.Buffer, B int) {
	m, be, c := d.m, d.m.be, d.m.Config
	C, V := c.HiddenSize, c.VocabSize
	h := d.rowView(B).h
	be.RMSNorm(h, d.scratchRstd(B), x, m.norm.W, B, C, m.eps)
	be.MatMul(d.logitsView(B), h, m.lmHead.W, kernels.MatMulParams{Batch: 1, M: B, N: V, K: C, TransB: true, Alpha: 1})
}

// linear is out[n, out] = x·Wᵀ (+ (α/r)·(x·Aᵀ)·Bᵀ while adapters are on
// and unmerged).
func (d *KVCache) linear(out, x kernels.Buffer, n int, l *linear) {
	be := d.m.be
	be.MatMul(out, x, l.w.W, kernels.MatMulParams{Batch: 1, M: n, N: l.out, K: l.in, TransB: true, Alpha: 1})
	if l.lora == nil || d.m.scale == 0 {
		return
	}
	r := d.m.lora.r
	t := d.rowView(n).t
	be.MatMul(t, x, l.lora.A.W, kernels.MatMulParams{Batch: 1, M: n, N: r, K: l.in, TransB: true, Alpha: 1})
	be.MatMul(out, t, l.lora.B.W, kernels.MatMulParams{Batch: 1, M: n, N: l.out, K: r, TransB: true, Alpha: d.m.scale, Beta: 1})
}

// rowView returns the scratch buffers cut to n rows (cached per n).
func (d *KVCache) rowView(n int) *rowViews {
	if v := d.views[n]; v != nil {
		return v
	}
	be, c := d.m.be, d.m.Config
	r := 1
	if d.m.lora != nil {
		r = d.m.lora.r
	}
	qd, kd := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	v := &rowViews{x: be.View(d.x, 0, n*c.HiddenSize), h: be.View(d.h, 0, n*c.HiddenSize), o: be.View(d.o, 0, n*c.HiddenSize),
		q: be.View(d.q, 0, n*qd), att: be.View(d.att, 0, n*qd), k: be.View(d.kk, 0, n*kd), v: be.View(d.vv, 0, n*kd),
		gate: be.View(d.gate, 0, n*c.IntermediateSize), up: be.View(d.up, 0, n*c.IntermediateSize), t: be.View(d.t, 0, n*r),
		lse: be.View(d.lse, 0, n*c.NumHeads)}
	d.views[n] = v
	return v
}

// scratchRstd is the rstd scratch cut to n elements (n ≤ rows·Hq).
func (d *KVCache) scratchRstd(n int) kernels.Buffer {
	if b := d.rstdViews[n]; b != nil {
		return b
	}
	b := d.m.be.View(d.rstd, 0, n)
	d.rstdViews[n] = b
	return b
}

// logitsView is logits [B, V].
func (d *KVCache) logitsView(B int) kernels.Buffer {
	if d.logitViews[B] == nil {
		d.logitViews[B] = d.m.be.View(d.logits, 0, B*d.m.Config.VocabSize)
	}
	return d.logitViews[B]
}
