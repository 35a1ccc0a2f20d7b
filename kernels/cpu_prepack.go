package kernels

import (
	"sync"

	"github.com/argrl/argrl/kernels/internal/sgemm"
)

// Packed weights. A MatMul with bf16 products (p.BF16, a CPU with
// AVX512-BF16) whose B is a read-only BF16 buffer (a mapped checkpoint
// tensor: it cannot change while mapped) and used as x·Wᵀ packs W's
// micro-panels once, keeps them with the buffer's storage, and reads them
// in place on every later call (sgemm.GemmDotPacked): the same bits as
// packing each time, without re-reading and re-packing every weight panel
// for every decode step. The packed copy takes the weight's own size in
// memory, for as long as the buffer lives; products of M ≥ packMinRows
// rows (training micro-batches, prefill), where packing is a small share,
// never create one but use one that exists.

// packMinRows: products with at least this many rows do not create packs.
const packMinRows = 512

// packKey identifies one packed operand: a view of the store (offset,
// N rows of K) as B of x·Wᵀ.
type packKey struct{ off, N, K int }

type packCache struct {
	mu sync.Mutex
	m  map[packKey]*sgemm.PackedDot
}

// packedB returns the packed W for B (a read-only BF16 view from element
// off, N×K, used transposed), creating it when M is small; nil otherwise.
func (c *cpuBackend) packedB(st *cpuStore, off, N, K, M int) *sgemm.PackedDot {
	if !st.ro || st.h == nil || c.dot == nil {
		return nil
	}
	c.packMu.Lock()
	if st.packs == nil {
		st.packs = &packCache{m: map[packKey]*sgemm.PackedDot{}}
	}
	pc := st.packs
	c.packMu.Unlock()
	key := packKey{off, N, K}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if p := pc.m[key]; p != nil || M >= packMinRows {
		return p
	}
	p := sgemm.PackDotBF16(c.dot, true, st.h[off:off+N*K], K, K, N)
	pc.m[key] = p
	return p
}
