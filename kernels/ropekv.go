package kernels

// The fused attention prologue of a decode step: q/k/v bias, rotary
// embedding of q and k, and the write of k and v into the paged KV cache,
// in one call. Optional (RoPEKVWriter): a decoder without it runs the
// sequence RefBiasRoPEKV spells out, op by op.

// RoPEKVParams are the shapes and side inputs of BiasRoPEKV.
//
//	q, qOut      [N, Hq·D]     qOut = RoPE(q + qBias)
//	k, v         [N, Hkv·D]    one new token per row
//	kCache, vCache [S, Tmax, Hkv, D]  paged (F32 or BF16, rounded to
//	             nearest even as KVScatter does)
//	cos, sin     [P, D/2]      RopeTables; Pos[n] < P
//	qBias        [Hq·D], kBias and vBias [Hkv·D], each may be nil (no bias)
type RoPEKVParams struct {
	N, Hq, Hkv, D, Tmax int
	Pos                 []int32 // [N] rotary position of row n
	Page, Off           []int32 // [N] row n goes to row Off[n] of page Page[n]
}

// RoPEKVWriter is implemented by backends that fuse the decode step's
// attention prologue into one launch (the CUDA backend). BiasRoPEKV must
// give the same bits as RefBiasRoPEKV's sequence of ops on that backend:
// it is the same arithmetic, so decoding with or without it agrees exactly
// (and with the training graph, which runs the ops one by one).
type RoPEKVWriter interface {
	BiasRoPEKV(qOut, kCache, vCache, q, k, v, qBias, kBias, vBias, cos, sin Buffer, p RoPEKVParams)
}

// RefBiasRoPEKV is the reference for RoPEKVWriter.BiasRoPEKV, the unfused
// sequence (a nil bias is no AddBias):
//
//	AddBias(q, q, qBias, N, Hq·D); RoPE(qOut, q, cos, sin, Pos, N, Hq, D, false)
//	AddBias(k, k, kBias, N, Hkv·D); RoPE(k, k, cos, sin, Pos, N, Hkv, D, false)
//	AddBias(v, v, vBias, N, Hkv·D)
//	KVScatter(kCache, k, Page, Off, N, Hkv, D, Tmax)
//	KVScatter(vCache, v, Page, Off, N, Hkv, D, Tmax)
//
// (on copies: q, k and v are inputs and stay unchanged).
func RefBiasRoPEKV(qOut, kCache, vCache, q, k, v, qBias, kBias, vBias, cos, sin []float64, p RoPEKVParams) {
	N, D := p.N, p.D
	bias := func(x, b []float64, C int) []float64 {
		y := append([]float64(nil), x[:N*C]...)
		if b != nil {
			RefAddBias(y, y, b, N, C)
		}
		return y
	}
	qb := bias(q, qBias, p.Hq*D)
	RefRoPE(qOut, qb, cos, sin, p.Pos, N, p.Hq, D, false)
	kb := bias(k, kBias, p.Hkv*D)
	RefRoPE(kb, append([]float64(nil), kb...), cos, sin, p.Pos, N, p.Hkv, D, false)
	RefKVScatter(kCache, kb, p.Page, p.Off, N, p.Hkv, D, p.Tmax)
	RefKVScatter(vCache, bias(v, vBias, p.Hkv*D), p.Page, p.Off, N, p.Hkv, D, p.Tmax)
}
