package model

// The graph-free KV-cache path for rollouts: the architecture's forward
// pass (ops.go) run over eagerOps, each op a Backend call at once, on the
// same weight buffers and the same kernels as the training graph, so its
// log-probs equal the training forward's up to float32 summation order
// (on the CPU, exactly: see docs/design.md, "ρ ≡ 1").
//
//	cache k, v   [L] × [P, PageSize, Hkv, D]   P pages, allocated once
//	             (kvpages.go: a page table per sequence, shared pages)
//	scratch      two arenas of activation rows (layer l uses arena l mod 2,
//	             so a layer's input survives while its outputs are written),
//	             tokens = the most one pass takes
//	logits       [MaxRows, V]
//
// A sequence is a handle in [0, S) ("slot"). Step appends tokens to
// several sequences in one pass (a mixed batch: decode rows of one token
// and prefill chunks side by side, each token its own attention row over
// its sequence's pages) and returns the logits after each sequence's last
// new token; Prefill and Decode are its two plain cases. Fork gives other
// sequences a sequence's pages by reference (G samples share one
// prefill). LoRA is applied unmerged, (x·Wᵀ) + (α/r)·(x·Aᵀ)·Bᵀ, following
// SetAdapters; after Merge the merged weights are used instead.

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// prefillChunk is the most prompt tokens one Prefill pass takes (at least).
const prefillChunk = 128

// KVCache is a decoding session over a Model. It reads the model's current
// weights and adapter state at every call. Not safe for concurrent use.
type KVCache struct {
	m            *Model
	S, Tmax      int              // sequences, most tokens per sequence
	Pages        int              // pages of PageSize tokens
	maxBatch     int              // most sequences per pass
	rows, tokens int              // Prefill's chunk; most tokens per pass
	k, v         []kernels.Buffer // [L] [Pages, PageSize, Hkv, D]
	pt           pageTable
	arenas       [2]arena
	rstd, lse    kernels.Buffer // [tokens·Hq]
	logits       kernels.Buffer // [maxBatch, V]
	last         kernels.Buffer // [maxBatch, C] hidden state of each row's last token
	owned        []kernels.Buffer
	rstdViews    map[int]kernels.Buffer
	// normBF16 [tokens·C] is the pre-norms' bf16 output (eagerOps.preNorm)
	// when the model computes in bf16 on a backend with bf16 products; nil
	// otherwise. One buffer serves every layer's two pre-norms: each is
	// read only by the projections that follow it.
	normBF16   kernels.Buffer
	normViews  map[int]kernels.Buffer
	lseViews   map[int]kernels.Buffer
	logitViews []kernels.Buffer // [B] → logits [B, V]
	// per token row of a pass
	pos, klen, page, off []int32
	table                []int32  // [rows·maxPages] each token's page table
	adapt                []int32  // [rows] each token's KVRow.Adapter
	mark                 []uint64 // per sequence: distinctness check
	gen                  uint64
	one                  [1]KVRow
	trash                int // 1: page Pages is the padding rows' (step graphs)
	noSync               bool
	fusedPrologues       int // BiasRoPEKV calls (prologue.go), for tests
}

// KVOptions size a paged cache (NewPagedKVCache).
type KVOptions struct {
	Seqs      int // sequence handles
	MaxLen    int // most tokens per sequence (≤ the model's MaxLen)
	Pages     int // pages of PageSize tokens; 0: Seqs·ceil(MaxLen/PageSize), room for every sequence at full length
	MaxRows   int // most sequences per Step; 0: Seqs
	MaxTokens int // most tokens per Step; 0: max(MaxRows, 128)
	// NoSync makes Step leave waiting for the device, and the errors of
	// its ops, to the caller's next Sync (or kernels.DeviceDraws'
	// FetchDraws): a rollout step then waits once, when its draws come
	// back. Step's own checks still fail at once.
	NoSync bool
}

// KVRow is one sequence's tokens in a Step.
type KVRow struct {
	Seq int
	IDs []int32
	// Adapter is the LoRA the row runs with: OwnAdapter (0, the model's
	// own slots as SetAdapters and Merge left them), NoAdapter (the base
	// model) or a number from LoadAdapter (adapters.go). Rows of one Step
	// may differ.
	Adapter int
}

// NewKVCache allocates a cache of slots sequences of up to maxLen tokens,
// with pages for all of them at full length, decoding at most maxBatch
// sequences per Decode call.
func (m *Model) NewKVCache(slots, maxLen, maxBatch int) (*KVCache, error) {
	if slots <= 0 || maxLen <= 0 || maxBatch <= 0 || maxBatch > slots {
		return nil, fmt.Errorf("model: NewKVCache: want slots > 0, maxLen > 0, 0 < maxBatch ≤ slots; got %d, %d, %d", slots, maxLen, maxBatch)
	}
	return m.NewPagedKVCache(KVOptions{Seqs: slots, MaxLen: maxLen, MaxRows: maxBatch})
}

// NewPagedKVCache allocates a paged cache (see KVOptions).
func (m *Model) NewPagedKVCache(o KVOptions) (*KVCache, error) {
	c := m.Config
	if o.Seqs <= 0 || o.MaxLen <= 0 || o.Pages < 0 || o.MaxRows < 0 || o.MaxTokens < 0 || o.MaxRows > o.Seqs {
		return nil, fmt.Errorf("model: NewPagedKVCache: want Seqs > 0, MaxLen > 0, Pages ≥ 0, 0 ≤ MaxRows ≤ Seqs, MaxTokens ≥ 0; got %+v", o)
	}
	if o.MaxLen > m.maxLen {
		return nil, fmt.Errorf("model: NewKVCache: maxLen %d exceeds the model's MaxLen %d", o.MaxLen, m.maxLen)
	}
	if o.Pages == 0 {
		o.Pages = o.Seqs * pagesFor(o.MaxLen)
	}
	if o.MaxRows == 0 {
		o.MaxRows = o.Seqs
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = max(o.MaxRows, prefillChunk)
	}
	kv := o.Pages * PageSize * c.NumKVHeads * c.HeadDim
	if int64(kv)*int64(c.NumLayers)*8 > 1<<46 {
		return nil, fmt.Errorf("model: NewPagedKVCache: %d pages of %d tokens take %d GiB", o.Pages, PageSize, int64(kv)*int64(c.NumLayers)*8>>30)
	}
	be := m.be
	d := &KVCache{m: m, S: o.Seqs, Tmax: o.MaxLen, Pages: o.Pages, maxBatch: o.MaxRows, rows: max(o.MaxRows, o.MaxTokens), tokens: max(o.MaxRows, o.MaxTokens),
		pt: newPageTable(o.Seqs, o.Pages), rstdViews: map[int]kernels.Buffer{}, lseViews: map[int]kernels.Buffer{},
		logitViews: make([]kernels.Buffer, o.MaxRows+1), mark: make([]uint64, o.Seqs), noSync: o.NoSync}
	allocAs := func(dt kernels.DType, n int) kernels.Buffer {
		b := be.Alloc(dt, n)
		d.owned = append(d.owned, b)
		return b
	}
	alloc := func(n int) kernels.Buffer { return allocAs(kernels.F32, n) }
	// The pages hold what the training attention reads: bf16 where the
	// backend's attention reads bf16 keys and values (kernels.BF16KVCache:
	// training rounds k and v as KVScatter rounds them), else f32.
	pageType := kernels.F32
	if bc, ok := be.(kernels.BF16KVCache); ok && bc.BF16KVCache(c.HeadDim) {
		pageType = kernels.BF16
	}
	// A backend with step graphs gets one more page: padding rows of a
	// decode step write and read it (graphStep).
	if _, ok := be.(kernels.StepGraphs); ok {
		d.trash = 1
		kv += PageSize * c.NumKVHeads * c.HeadDim
	}
	for range c.NumLayers {
		d.k = append(d.k, allocAs(pageType, kv))
		d.v = append(d.v, allocAs(pageType, kv))
	}
	R, C, F := d.tokens, c.HiddenSize, c.IntermediateSize
	qd, kd := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	// One layer's activations: norm, q, k, v (and their biases or norms),
	// RoPE, attention, projections, residuals, gate, up, SwiGLU, LoRA.
	chunk := R * (5*C + 3*F + 4*qd + 6*kd + 8*32)
	for i := range d.arenas {
		d.arenas[i] = arena{be: be, size: chunk, views: map[[3]int]kernels.Buffer{}}
	}
	d.rstd, d.lse = alloc(R*c.NumHeads), alloc(R*c.NumHeads)
	if bf16PreNorm(m) {
		d.normBF16, d.normViews = allocAs(kernels.BF16, R*C), map[int]kernels.Buffer{}
	}
	d.logits = alloc(o.MaxRows * c.VocabSize)
	d.last = alloc(o.MaxRows * C)
	if err := be.Sync(); err != nil {
		d.Close()
		return nil, fmt.Errorf("model: NewKVCache: %w", err)
	}
	return d, nil
}

// bf16PreNorm says whether a KVCache writes the pre-norms in bf16
// (eagerOps.preNorm): the model computes in bf16 on a backend with bf16
// products (a variable so tests can switch it off and compare).
var bf16PreNorm = func(m *Model) bool { return m.bf16 && kernels.BF16Products(m.be) }

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
func (d *KVCache) Len(slot int) int { return d.pt.seqs[slot].n }

// FreePages is the number of pages no sequence holds.
func (d *KVCache) FreePages() int { return len(d.pt.free) }

// PagesNeeded is the free pages a Step with these rows would take.
func (d *KVCache) PagesNeeded(rows []KVRow) int {
	seqs, add := make([]int, len(rows)), make([]int, len(rows))
	for i, r := range rows {
		seqs[i], add[i] = r.Seq, len(r.IDs)
	}
	return d.pt.need(seqs, add)
}

// CheckPages verifies the page accounting (kvpages.go); nil when sound.
func (d *KVCache) CheckPages() error { return d.pt.check() }

// Reset empties a slot and frees the pages only it held.
func (d *KVCache) Reset(slot int) error {
	if slot < 0 || slot >= d.S {
		return fmt.Errorf("model: KVCache.Reset: slot %d outside [0, %d)", slot, d.S)
	}
	d.pt.release(slot)
	return nil
}

// Fork gives each slot of dst the cached tokens of slot src, by reference
// (no copy); they then continue independently, copying a shared partial
// last page when they first write to it (prefill once, sample G times).
func (d *KVCache) Fork(src int, dst []int) error {
	if src < 0 || src >= d.S {
		return fmt.Errorf("model: KVCache.Fork: source slot %d outside [0, %d)", src, d.S)
	}
	for _, s := range dst {
		if s < 0 || s >= d.S {
			return fmt.Errorf("model: KVCache.Fork: slot %d outside [0, %d)", s, d.S)
		}
	}
	for _, s := range dst {
		d.pt.share(src, s)
	}
	return nil
}

// Prefill appends ids to slot's cache and returns the logits [1, V] that
// follow the last of them (valid until the next call).
func (d *KVCache) Prefill(slot int, ids []int32) (kernels.Buffer, error) {
	if slot < 0 || slot >= d.S {
		return nil, fmt.Errorf("model: Prefill: slot %d outside [0, %d)", slot, d.S)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("model: Prefill: no tokens")
	}
	if n := d.Len(slot) + len(ids); n > d.Tmax {
		return nil, fmt.Errorf("model: Prefill: slot %d would hold %d tokens, the cache holds %d", slot, n, d.Tmax)
	}
	if err := d.checkIDs(ids); err != nil {
		return nil, fmt.Errorf("model: Prefill: %w", err)
	}
	if need := d.pt.need([]int{slot}, []int{len(ids)}); need > d.FreePages() {
		return nil, fmt.Errorf("model: Prefill: %d tokens need %d pages, %d are free: %w", len(ids), need, d.FreePages(), ErrOutOfPages)
	}
	var out kernels.Buffer
	chunk := min(d.rows, d.tokens)
	for off := 0; off < len(ids); off += chunk {
		d.one[0] = KVRow{Seq: slot, IDs: ids[off:min(off+chunk, len(ids))]}
		var err error
		if out, err = d.Step(d.one[:]); err != nil {
			return nil, fmt.Errorf("model: Prefill: %w", err)
		}
	}
	return out, nil
}

// Decode appends tokens[b] to slots[b] for each row b (distinct slots) and
// returns the next-token logits [B, V] (valid until the next call).
func (d *KVCache) Decode(slots []int, tokens []int32) (kernels.Buffer, error) {
	B := len(slots)
	if B == 0 || B > d.maxBatch || len(tokens) != B {
		return nil, fmt.Errorf("model: Decode: %d slots and %d tokens; want 1..%d of each", B, len(tokens), d.maxBatch)
	}
	rows := make([]KVRow, B)
	for b, s := range slots {
		rows[b] = KVRow{Seq: s, IDs: tokens[b : b+1]}
	}
	out, err := d.Step(rows)
	if err != nil {
		return nil, fmt.Errorf("model: Decode: %w", err)
	}
	return out, nil
}

// Step appends each row's ids to its sequence (distinct sequences) in one
// pass and returns the logits [len(rows), V] after each row's last id
// (valid until the next call). Every check runs first: on an error
// (ErrOutOfPages among them) nothing changed.
func (d *KVCache) Step(rows []KVRow) (kernels.Buffer, error) {
	R := len(rows)
	if R == 0 || R > d.maxBatch {
		return nil, fmt.Errorf("model: Step: %d rows; want 1..%d", R, d.maxBatch)
	}
	d.gen++
	N, mp, mixed := 0, 0, false
	for r, row := range rows {
		s := row.Seq
		if s < 0 || s >= d.S {
			return nil, fmt.Errorf("model: Step: row %d: slot %d outside [0, %d)", r, s, d.S)
		}
		if d.mark[s] == d.gen {
			return nil, fmt.Errorf("model: Step: slot %d appears twice", s)
		}
		d.mark[s] = d.gen
		if len(row.IDs) == 0 {
			return nil, fmt.Errorf("model: Step: row %d (slot %d) has no tokens", r, s)
		}
		if n := d.Len(s) + len(row.IDs); n > d.Tmax {
			return nil, fmt.Errorf("model: Step: slot %d would hold %d tokens, more than %d: slot %d is full", s, n, d.Tmax, s)
		}
		if err := d.checkIDs(row.IDs); err != nil {
			return nil, fmt.Errorf("model: Step: row %d: %w", r, err)
		}
		if row.Adapter != OwnAdapter {
			if err := d.m.checkAdapter(row.Adapter); err != nil {
				return nil, fmt.Errorf("model: Step: row %d: %w", r, err)
			}
			mixed = true
		}
		N += len(row.IDs)
		mp = max(mp, pagesFor(d.Len(s)+len(row.IDs)))
	}
	if N > d.tokens {
		return nil, fmt.Errorf("model: Step: %d tokens, more than the %d one pass takes", N, d.tokens)
	}
	if need := d.PagesNeeded(rows); need > d.FreePages() {
		return nil, fmt.Errorf("model: Step: %d pages needed, %d free: %w", need, d.FreePages(), ErrOutOfPages)
	}
	be, c := d.m.be, d.m.Config
	prow := PageSize * c.NumKVHeads * c.HeadDim
	cow := func(src, dst int32, rows int) {
		n := rows * c.NumKVHeads * c.HeadDim
		for l := range d.k {
			be.Copy(be.View(d.k[l], int(dst)*prow, n), be.View(d.k[l], int(src)*prow, n))
			be.Copy(be.View(d.v[l], int(dst)*prow, n), be.View(d.v[l], int(src)*prow, n))
		}
	}
	if cap(d.table) < N*mp {
		d.table = make([]int32, N*mp)
	}
	if cap(d.pos) < N {
		d.pos, d.klen, d.page, d.off = make([]int32, N), make([]int32, N), make([]int32, N), make([]int32, N)
		d.adapt = make([]int32, N)
	}
	var adapt []int32 // nil: every row follows the model's own slots
	if mixed {
		adapt = d.adapt[:0]
		for _, row := range rows {
			for range row.IDs {
				adapt = append(adapt, int32(row.Adapter))
			}
		}
	}
	ids := make([]int32, 0, N)
	t := 0
	for _, row := range rows {
		d.pt.grow(row.Seq, len(row.IDs), cow)
		sp := &d.pt.seqs[row.Seq]
		for i := range row.IDs {
			p := sp.n + i
			d.pos[t], d.klen[t] = int32(p), int32(p+1)
			d.page[t], d.off[t] = sp.pages[p/PageSize], int32(p%PageSize)
			copy(d.table[t*mp:(t+1)*mp], sp.pages[:pagesFor(p+1)])
			t++
		}
		ids = append(ids, row.IDs...)
	}
	if sg, ok := be.(kernels.StepGraphs); ok && adapt == nil && N == R && d.trash == 1 && sg.StepGraphsOn() {
		if err := d.graphStep(sg, ids, R, mp); err != nil {
			return nil, fmt.Errorf("model: Step: %w", err)
		}
		for _, row := range rows {
			d.pt.seqs[row.Seq].n++
		}
		return d.done(R)
	}
	hf, err := d.run(ids, adapt, N, mp)
	if err != nil {
		return nil, fmt.Errorf("model: Step: %w", err)
	}
	C := c.HiddenSize
	last, t := hf.buf, 0
	if N > R {
		last = be.View(d.last, 0, R*C)
		for r, row := range rows {
			t += len(row.IDs)
			be.Copy(be.View(last, r*C, C), be.View(hf.buf, (t-1)*C, C))
		}
	}
	for _, row := range rows {
		d.pt.seqs[row.Seq].n += len(row.IDs)
	}
	d.head(last, R)
	return d.done(R)
}

// done ends a Step of R rows: the backend's Sync (unless NoSync), then
// the logits [R, V].
func (d *KVCache) done(R int) (kernels.Buffer, error) {
	if !d.noSync {
		if err := d.m.be.Sync(); err != nil {
			return nil, fmt.Errorf("model: Step: %w", err)
		}
	}
	return d.logitsView(R), nil
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

// run passes N new tokens (d.pos, d.klen, d.page, d.off and d.table,
// maxPages entries per token) through the decoder, writing their keys and
// values into their pages, and returns the final normed hidden states
// [N, C]. Each token is its own attention row (Tq = 1) over its
// sequence's pages.
func (d *KVCache) run(ids, adapt []int32, N, maxPages int) (act, error) {
	c := d.m.Config
	e := &eagerOps{d: d, ids: ids, adapt: adapt, n: N, a: &d.arenas[1],
		ap: kernels.AttnParams{B: N, Tq: 1, Hq: c.NumHeads, Hkv: c.NumKVHeads, D: c.HeadDim, S: d.Pages + d.trash, Tmax: PageSize,
			QPos: d.pos[:N], KLen: d.klen[:N], Pages: d.table[:N*maxPages], MaxPages: maxPages}}
	e.a.reset()
	hf := forward(e, d.m.w)
	return hf, e.err
}

// graphStep runs a decode step (R rows of one token each, their metadata
// in d.pos ... d.table with mp pages per row) as the backend's graph of a
// bucket: R padded to a power of two (at most the rows of a pass) and mp
// to a power of two (at most the pages of a full sequence), so that the
// steps of a bucket have the same shapes and buffers. Padding rows decode
// token 0 at position 0 on the spare page Pages; their logits are never
// read. Each row's results are those of the same row in an eager step
// (every row is computed alone: see the package doc).
func (d *KVCache) graphStep(sg kernels.StepGraphs, ids []int32, R, mp int) error {
	B := min(1<<bitsFor(R), d.maxBatch)
	P := min(1<<bitsFor(mp), pagesFor(d.Tmax))
	grow := func(s []int32, n, keep int) []int32 {
		if cap(s) < n {
			t := make([]int32, n)
			copy(t, s[:keep])
			return t
		}
		return s[:cap(s)] // len = cap, as Step expects
	}
	d.table = grow(d.table, B*P, R*mp)
	d.pos, d.klen, d.page, d.off = grow(d.pos, B, R), grow(d.klen, B, R), grow(d.page, B, R), grow(d.off, B, R)
	// re-lay the rows' tables from mp to P entries (last row first: in place)
	for t := R - 1; t >= 0; t-- {
		copy(d.table[t*P:t*P+mp], d.table[t*mp:(t+1)*mp])
	}
	spare := int32(d.Pages)
	for t := range B {
		lo := 0
		if t < R {
			lo = pagesFor(int(d.klen[t]))
		} else {
			d.pos[t], d.klen[t], d.page[t], d.off[t] = 0, 1, spare, 0
			ids = append(ids, 0)
		}
		for j := lo; j < P; j++ {
			d.table[t*P+j] = spare
		}
	}
	var err error
	sg.GraphStep(B<<16|P, func() {
		var hf act
		if hf, err = d.run(ids, nil, B, P); err == nil {
			d.head(hf.buf, B)
		}
	})
	return err
}

// bitsFor is the least b with 1<<b ≥ n (n ≥ 1).
func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
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
