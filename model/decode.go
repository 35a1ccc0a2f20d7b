package model

// The graph-free KV-cache path for rollouts: the architecture's forward
// pass (ops.go) run over eagerOps, each op a Backend call at once, on the
// same weight buffers and the same kernels as the training graph, so its
// log-probs equal the training forward's up to float32 summation order.
//
//	cache k, v   [L] × [S, Tmax, Hkv, D]   S slots of Tmax positions, allocated once
//	scratch      two arenas of activation rows (layer l uses arena l mod 2,
//	             so a layer's input survives while its outputs are written),
//	             rows = max(MaxBatch, prefill chunk)
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
	m                *Model
	S, Tmax          int
	maxBatch, rows   int
	k, v             []kernels.Buffer // [L] [S, Tmax, Hkv, D]
	lens             []int32          // [S] tokens cached per slot
	arenas           [2]arena
	rstd, lse        kernels.Buffer // [rows·Hq]
	logits           kernels.Buffer // [maxBatch, V]
	owned            []kernels.Buffer
	rstdViews        map[int]kernels.Buffer
	lseViews         map[int]kernels.Buffer
	logitViews       []kernels.Buffer // [B] → logits [B, V]
	slot, qpos, klen []int32          // per batch row
	pos              []int32          // per token row
	mark             []uint64         // per slot: distinctness check
	gen              uint64
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
		lens: make([]int32, slots), rstdViews: map[int]kernels.Buffer{}, lseViews: map[int]kernels.Buffer{},
		logitViews: make([]kernels.Buffer, maxBatch+1),
		slot:       make([]int32, maxBatch), qpos: make([]int32, maxBatch), klen: make([]int32, maxBatch),
		mark: make([]uint64, slots)}
	d.pos = make([]int32, d.rows)
	alloc := func(n int) kernels.Buffer {
		b := be.Alloc(kernels.F32, n)
		d.owned = append(d.owned, b)
		return b
	}
	kv := slots * maxLen * c.NumKVHeads * c.HeadDim
	kvType := kernels.F32 // bf16 where the backend's attention reads bf16 (kernels.BF16KVCache)
	if b, ok := be.(kernels.BF16KVCache); ok && b.BF16KVCache() {
		kvType = kernels.BF16
	}
	for range c.NumLayers {
		for _, dst := range []*[]kernels.Buffer{&d.k, &d.v} {
			b := be.Alloc(kvType, kv)
			d.owned = append(d.owned, b)
			*dst = append(*dst, b)
		}
	}
	R, C, F := d.rows, c.HiddenSize, c.IntermediateSize
	qd, kd := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	// One layer's activations: norm, q, k, v (and their biases or norms),
	// RoPE, attention, projections, residuals, gate, up, SwiGLU, LoRA.
	chunk := R * (5*C + 3*F + 4*qd + 6*kd + 8*32)
	for i := range d.arenas {
		d.arenas[i] = arena{be: be, size: chunk, views: map[[3]int]kernels.Buffer{}}
	}
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
	for i := range d.arenas {
		d.arenas[i].free()
	}
	d.owned, d.k, d.v = nil, nil, nil
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
	var hf act
	for off := 0; off < len(ids); off += d.rows {
		chunk := ids[off:min(off+d.rows, len(ids))]
		n := len(chunk)
		d.slot[0], d.qpos[0], d.klen[0] = int32(slot), d.lens[slot], d.lens[slot]+int32(n)
		for i := range n {
			d.pos[i] = d.lens[slot] + int32(i)
		}
		hf = d.run(chunk, 1, n)
		d.lens[slot] += int32(n)
	}
	C := m.Config.HiddenSize
	n := (len(ids)-1)%d.rows + 1 // rows of the last chunk
	d.head(m.be.View(hf.buf, (n-1)*C, C), 1)
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
	hf := d.run(tokens, B, 1)
	for _, s := range slots {
		d.lens[s]++
	}
	d.head(hf.buf, B)
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

// run passes B rows of T new tokens (d.slot, d.qpos, d.klen per row, d.pos
// per token) through the decoder, writing their keys and values into the
// cache, and returns the final normed hidden states [B·T, C].
func (d *KVCache) run(ids []int32, B, T int) act {
	c := d.m.Config
	e := &eagerOps{d: d, ids: ids, B: B, T: T, n: B * T, a: &d.arenas[1],
		ap: kernels.AttnParams{B: B, Tq: T, Hq: c.NumHeads, Hkv: c.NumKVHeads, D: c.HeadDim, S: d.S, Tmax: d.Tmax,
			Slot: d.slot[:B], QPos: d.qpos[:B], KLen: d.klen[:B]}}
	e.a.reset()
	return forward(e, d.m.w)
}

// head writes logits [B, V] for the normed hidden states hf [B, C].
func (d *KVCache) head(hf kernels.Buffer, B int) {
	m, c := d.m, d.m.Config
	m.be.MatMul(d.logitsView(B), hf, m.w.head().LMHead.W, kernels.MatMulParams{Batch: 1, M: B, N: c.VocabSize, K: c.HiddenSize, TransB: true, Alpha: 1, BF16: m.bf16})
}

// scratchRstd is the rstd scratch cut to n elements (n ≤ rows·Hq).
func (d *KVCache) scratchRstd(n int) kernels.Buffer { return d.cut(d.rstdViews, d.rstd, n) }

// scratchLse is the attention lse scratch cut to n elements.
func (d *KVCache) scratchLse(n int) kernels.Buffer { return d.cut(d.lseViews, d.lse, n) }

// cut returns the view of b's first n elements, cached in views.
func (d *KVCache) cut(views map[int]kernels.Buffer, b kernels.Buffer, n int) kernels.Buffer {
	if v := views[n]; v != nil {
		return v
	}
	v := d.m.be.View(b, 0, n)
	views[n] = v
	return v
}

// logitsView is logits [B, V].
func (d *KVCache) logitsView(B int) kernels.Buffer {
	if d.logitViews[B] == nil {
		d.logitViews[B] = d.m.be.View(d.logits, 0, B*d.m.Config.VocabSize)
	}
	return d.logitViews[B]
}
