package kernels

import "fmt"

// The argument-check contract every backend applies before an op does any
// work (the CPU backend's chk and the CUDA backend's opCtx both embed
// ArgCheck), so that one bad call fails the same way everywhere. The rules
// are listed with the Backend conventions in backend.go.

// Access is how an op uses one buffer argument.
type Access uint8

const (
	Read     Access = iota // read-only input: F32 or BF16
	Write                  // output or in-place state: F32, not read-only
	WriteAny               // destination of a memory op (CopyIn, Upload, Fill, Copy): not read-only
)

// CheckedBuffer is what the checks need to know of a backend's buffer type.
type CheckedBuffer interface {
	Buffer
	// Live is false for a nil or freed buffer (it must accept a nil receiver).
	Live() bool
	// ReadOnly is true for buffers that no op may write (see Mapper).
	ReadOnly() bool
}

// ArgCheck collects the checks of one op call. The first failure is
// recorded (through Record) as "<Backend>: <Op>: <what>" and sets Bad;
// later failures of the same call are dropped, and once Bad is set the op
// must not touch any buffer.
type ArgCheck struct {
	Backend string      // the backend's name, prefixed to errors
	Op      string      // the op's name
	Record  func(error) // records an error on the backend (first one wins)
	Bad     bool        // some check failed
}

// Failf records a failure of this call.
func (k *ArgCheck) Failf(format string, a ...any) {
	if !k.Bad {
		k.Record(fmt.Errorf("%s: %s: %s", k.Backend, k.Op, fmt.Sprintf(format, a...)))
	}
	k.Bad = true
}

// Dims fails unless every value is ≥ 0; names lists them for the message.
func (k *ArgCheck) Dims(names string, v ...int) {
	for _, x := range v {
		if x < 0 {
			k.Failf("negative dimension in %s = %v", names, v)
			return
		}
	}
}

// Stride fails unless a row stride ld can hold rows of F columns (ld ≥ F).
func (k *ArgCheck) Stride(name string, ld, F int) {
	if ld < F {
		k.Failf("row stride %s = %d is less than the row width %d", name, ld, F)
	}
}

// Side fails unless a host side input of have entries has at least need.
func (k *ArgCheck) Side(name string, have, need int) {
	if have < need {
		k.Failf("%s has %d entries, needs %d", name, have, need)
	}
}

// Skip reports whether the op must return now: a check failed, or one of
// the sizes is 0 (an empty call writes nothing unless its doc says so).
func (k *ArgCheck) Skip(sizes ...int) bool {
	if k.Bad {
		return true
	}
	for _, s := range sizes {
		if s == 0 {
			return true
		}
	}
	return false
}

// IDs fails unless 0 ≤ ids[i] < n for every i (token ids, positions).
func (k *ArgCheck) IDs(name string, ids []int32, n int) bool {
	for i, id := range ids {
		if id < 0 || int(id) >= n {
			k.Failf("%s[%d] = %d outside [0, %d)", name, i, id, n)
			return false
		}
	}
	return !k.Bad
}

// Targets fails unless targets[i] < V for every i (negative: no target).
func (k *ArgCheck) Targets(targets []int32, V int) bool {
	for i, t := range targets {
		if int(t) >= V {
			k.Failf("targets[%d] = %d outside [0, %d)", i, t, V)
			return false
		}
	}
	return !k.Bad
}

// Vocab checks the shape of a vocabulary op (LogProbs, LogProbsBackward,
// Sample): N, V ≥ 0 and a non-empty vocabulary when there are rows.
func (k *ArgCheck) Vocab(N, V int) {
	k.Dims("N,V", N, V)
	if !k.Bad && N > 0 && V == 0 {
		k.Failf("empty vocabulary (V = 0) for %d rows", N)
	}
}

// Sample checks Sample's arguments other than the logits buffer: the
// shape, ids (nIDs entries) and u at least N long, every u[n] in [0, 1),
// Temperature ≥ 0 and TopK ≥ 0.
func (k *ArgCheck) Sample(nIDs int, u []float32, N, V int, p SampleParams) {
	k.Vocab(N, V)
	k.Dims("TopK", p.TopK)
	k.Side("ids", nIDs, N)
	k.Side("u", len(u), N)
	if !(p.Temperature >= 0) {
		k.Failf("Temperature = %v, must be ≥ 0", p.Temperature)
	}
	for i := 0; i < N && !k.Bad; i++ {
		if !(u[i] >= 0 && u[i] < 1) {
			k.Failf("u[%d] = %v outside [0, 1)", i, u[i])
		}
	}
}

// Exact fails unless buffer buf has as many elements, n, as host slice
// host has, want (CopyIn and CopyOut move whole buffers; View selects a
// part).
func (k *ArgCheck) Exact(buf, host string, n, want int) {
	if !k.Bad && n != want {
		k.Failf("%s has %d elements, %s %d", buf, n, host, want)
	}
}

// KVRows fails unless every row b writes T positions from pos[b] inside
// slot slot[b] of a cache of S slots × Tmax positions (KVWrite).
func (k *ArgCheck) KVRows(slot, pos []int32, T, S, Tmax int) bool {
	for b := range slot {
		if slot[b] < 0 || int(slot[b]) >= S || pos[b] < 0 || int(pos[b])+T > Tmax {
			k.Failf("row %d: slot %d, positions [%d, %d) outside a cache of %d slots × %d positions", b, slot[b], pos[b], int(pos[b])+T, S, Tmax)
			return false
		}
	}
	return !k.Bad
}

// MatMul checks p and returns the element spans op(A), op(B) and C cover
// over the batch ((Batch−1)·stride + item size; 0 for an empty batch).
func (k *ArgCheck) MatMul(p MatMulParams) (nA, nB, nC int) {
	k.Dims("Batch,M,N,K,StrideA,StrideB,StrideC,LdC", p.Batch, p.M, p.N, p.K, p.StrideA, p.StrideB, p.StrideC, p.LdC)
	if k.Bad {
		return 0, 0, 0
	}
	ldc := p.Ldc()
	if ldc < p.N {
		k.Failf("LdC %d < N = %d (rows would overlap)", p.LdC, p.N)
		return 0, 0, 0
	}
	if p.Batch == 0 {
		return 0, 0, 0
	}
	if p.Batch > 1 && p.StrideC < p.M*ldc {
		k.Failf("StrideC %d < M·LdC = %d with Batch %d (outputs would overlap)", p.StrideC, p.M*ldc, p.Batch)
		return 0, 0, 0
	}
	itemC := 0
	if p.M > 0 && p.N > 0 {
		itemC = (p.M-1)*ldc + p.N
	}
	span := func(stride, size int) int { return (p.Batch-1)*stride + size }
	return span(p.StrideA, p.M*p.K), span(p.StrideB, p.K*p.N), span(p.StrideC, itemC)
}

// Attn checks p: dimensions, Hq a multiple of Hkv, the per-row slices at
// least B long, and every row's slot, query position and key length inside
// the cache (see AttnParams.Row).
func (k *ArgCheck) Attn(p AttnParams) {
	k.Dims("B,Tq,Hq,Hkv,D,S,Tmax", p.B, p.Tq, p.Hq, p.Hkv, p.D, p.S, p.Tmax)
	if k.Bad {
		return
	}
	if p.Hkv == 0 || p.Hq%p.Hkv != 0 {
		k.Failf("Hq = %d is not a multiple of Hkv = %d", p.Hq, p.Hkv)
		return
	}
	for i, s := range [3][]int32{p.Slot, p.QPos, p.KLen} {
		if s != nil {
			k.Side([3]string{"Slot", "QPos", "KLen"}[i], len(s), p.B)
		}
	}
	if p.KStart != nil {
		k.Side("KStart", len(p.KStart), p.B*p.Tq)
		for i, ks := range p.KStart[:min(len(p.KStart), p.B*p.Tq)] {
			if !k.Bad && (ks < 0 || int(ks) > p.Tmax) {
				k.Failf("KStart[%d] = %d outside [0, Tmax = %d]", i, ks, p.Tmax)
			}
		}
	}
	if p.Pages != nil {
		if p.KStart != nil && !k.Bad {
			k.Failf("KStart (packed training rows) and Pages (a paged decoding cache) cannot be used together")
		}
		k.attnPages(p)
		return
	}
	for b := 0; b < p.B && !k.Bad; b++ {
		s, qp, kl := p.Row(b)
		if s < 0 || s >= p.S {
			k.Failf("row %d reads slot %d of S = %d", b, s, p.S)
		} else if qp < 0 || kl < 0 || kl > p.Tmax {
			k.Failf("row %d: QPos %d, KLen %d outside cache length Tmax = %d", b, qp, kl, p.Tmax)
		}
	}
}

// attnPages checks a paged p: no Slot, MaxPages ≥ 1, Pages at least
// B·MaxPages long, every row's keys within its MaxPages pages, and the
// pages that hold a key some query of the row sees inside [0, S).
func (k *ArgCheck) attnPages(p AttnParams) {
	if p.Slot != nil {
		k.Failf("Slot and Pages are both set (a paged cache has no slots)")
		return
	}
	if p.MaxPages <= 0 {
		k.Failf("Pages set with MaxPages = %d", p.MaxPages)
		return
	}
	k.Side("Pages", len(p.Pages), p.B*p.MaxPages)
	for b := 0; b < p.B && !k.Bad; b++ {
		_, qp, kl := p.Row(b)
		if qp < 0 || kl < 0 || kl > p.MaxPages*p.Tmax {
			k.Failf("row %d: QPos %d, KLen %d outside MaxPages·Tmax = %d·%d", b, qp, kl, p.MaxPages, p.Tmax)
			return
		}
		seen := min(kl, qp+p.Tq) // keys some query of the row sees
		if p.Tmax == 0 {
			continue
		}
		for i := 0; i < (seen+p.Tmax-1)/p.Tmax; i++ {
			if pg := p.Pages[b*p.MaxPages+i]; pg < 0 || int(pg) >= p.S {
				k.Failf("row %d: Pages[%d] = %d outside the cache's %d pages", b, b*p.MaxPages+i, pg, p.S)
				return
			}
		}
	}
}

// NoPages fails when p is paged (AttentionBackward: training attends
// over contiguous keys).
func (k *ArgCheck) NoPages(p AttnParams) {
	if !k.Bad && p.Pages != nil {
		k.Failf("a paged cache (Pages) has no backward: training attends over contiguous keys")
	}
}

// KVPages fails unless every row n writes row off[n] of page page[n]
// inside a cache of S pages × Tmax rows (KVScatter).
func (k *ArgCheck) KVPages(page, off []int32, S, Tmax int) bool {
	for n := range page {
		if page[n] < 0 || int(page[n]) >= S || off[n] < 0 || int(off[n]) >= Tmax {
			k.Failf("row %d: page %d, offset %d outside a cache of %d pages × %d rows", n, page[n], off[n], S, Tmax)
			return false
		}
	}
	return !k.Bad
}

// Row resolves batch row b's optional inputs: the cache slot (Slot[b], or
// b), the absolute position of its first query (QPos[b], or 0) and its key
// count (KLen[b], or QPos[b]+Tq).
func (p AttnParams) Row(b int) (slot, qpos, klen int) { return attnRow(p, b) }

// Arg checks buffer argument name of an op: b must be a live buffer of type
// B with at least n elements; for Write it must be F32 and not read-only,
// for WriteAny not read-only. It returns the buffer, or the zero B after recording a
// failure (and without checking anything once k.Bad is set).
func Arg[B CheckedBuffer](k *ArgCheck, name string, b Buffer, n int, acc Access) B {
	var zero B
	if k.Bad {
		return zero
	}
	cb, ok := b.(B)
	if !ok {
		k.Failf("%s is not a %s buffer (%T)", name, k.Backend, b)
		return zero
	}
	if !cb.Live() {
		k.Failf("%s is nil or was freed", name)
		return zero
	}
	if cb.Len() < n {
		k.Failf("%s has %d elements, needs %d", name, cb.Len(), n)
		return zero
	}
	if acc == Write && cb.DType() != F32 {
		k.Failf("%s must be f32, is %v", name, cb.DType())
		return zero
	}
	if (acc == Write || acc == WriteAny) && cb.ReadOnly() {
		k.Failf("%s is read-only (a mapped buffer) and cannot be written", name)
		return zero
	}
	return cb
}
