package cuda

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// The tensor-core attention forward (attn_tc.cu) of the bf16 backends.

// attnTCChunk is ATC_KC in attn_tc.cu: keys per fixed-position chunk, the
// unit decoding splits along and training merges in order.
const attnTCChunk = 256

// attnSplitBlocks: the forward splits keys across blocks (flash-decoding)
// when one block per (query tile, head group, batch row) would give fewer
// blocks than this, two per SM of an H100/H200 (132 SMs). Training's and
// decoding's results are bit-identical either way (attn_tc.cu).
const attnSplitBlocks = 264

// attnSplitMode forces the split (1: never, 2: always) for tests; 0 picks
// by attnSplitBlocks.
var attnSplitMode = 0

// attnTC reports whether attention at head dim D runs on the tensor-core
// kernels: the bf16 tensor-core modes, head dims 16, 32, 64 and 128
// (others take the f32 kernels of attention.cu on f32 keys and values).
func (be *Backend) attnTC(p kernels.AttnParams) bool { return be.attnTCDim(p.D) }

func (be *Backend) attnTCDim(D int) bool {
	if !be.opt.BF16TensorCores {
		return false
	}
	switch D {
	case 16, 32, 64, 128:
		return true
	}
	return false
}

// BF16KVCache reports whether a decoder of head dim D keeps its KV cache
// in bf16 (kernels.BF16KVCache): exactly when attention at D runs on the
// tensor-core kernels, which read bf16 keys and values: training rounds
// its f32 k and v as KVScatter rounds them into the pages, so both read
// the same values (ρ ≡ 1, docs/design.md).
func (be *Backend) BF16KVCache(D int) bool { return be.attnTCDim(D) }

// bf16In returns a 16-byte aligned bf16 copy of an input of n elements:
// the buffer itself when it is BF16 and aligned (the KV cache), else a
// rounded copy in scratch.
func (o *opCtx) bf16In(name string, b kernels.Buffer, n int) devPtr {
	cb := o.buf(name, b, n, kernels.Read)
	if cb == nil || o.Bad {
		return 0
	}
	if cb.dt == kernels.BF16 && cb.ptr()%16 == 0 {
		return cb.ptr()
	}
	p := o.scratch(int64(n) * 2)
	if cb.dt == kernels.BF16 {
		o.check(o.be.dev.dtod(p, cb.ptr(), int64(n)*2))
	} else {
		o.launch("f32_to_bf16_kernel", grid1(int64(n)), block1, pArg(p), pArg(cb.ptr()), lArg(int64(n)))
	}
	return p
}

// attnTCChunks is the most 256-key chunks a row of p sees (keys from
// its KStart, 0 without, to min(KLen, QPos+i+1)): the split's chunk count.
func attnTCChunks(p kernels.AttnParams, meta []int32) int {
	nc := 1
	for b := 0; b < p.B; b++ {
		qpos, klen := int(meta[p.B+b]), int(meta[2*p.B+b])
		for i := 0; i < p.Tq; i++ {
			if p.KStart == nil && i < p.Tq-1 {
				continue // the last position sees the most keys
			}
			lo, hi := 0, min(klen, qpos+i+1)
			if p.KStart != nil {
				lo = int(p.KStart[b*p.Tq+i])
			}
			nc = max(nc, (hi-lo+attnTCChunk-1)/attnTCChunk)
		}
	}
	return nc
}

// attnTCSide uploads the kernels' optional tables: the rows' first keys
// (meta from kso on; 0 without KStart) and the page tables (0 without
// Pages).
func (o *opCtx) attnTCSide(p kernels.AttnParams, mp devPtr, kso int) (kstart, pages devPtr) {
	if kso >= 0 {
		kstart = mp + devPtr(4*kso)
	}
	if p.Pages != nil {
		pages = o.ints(p.Pages[:p.B*p.MaxPages])
	}
	return kstart, pages
}

// attentionTC launches the tensor-core forward: one pass per block, or
// (split) one block per 256-key chunk and attn_tc_combine. Packed rows
// (KStart) and paged caches (Pages, read in place) go to the same kernel.
func (o *opCtx) attentionTC(op, lp devPtr, q, k, v kernels.Buffer, p kernels.AttnParams, meta []int32, kso int, scale float32) {
	nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
	qp, kp, vp := o.bf16In("q", q, nq), o.bf16In("k", k, nkv), o.bf16In("v", v, nkv)
	if o.Bad {
		return
	}
	mp := o.ints(meta)
	ksp, pgp := o.attnTCSide(p, mp, kso)
	nc := attnTCChunks(p, meta)
	grid, gb, bq := attnTiles(p, 64)
	split := nc > 1 && grid.x*grid.y*grid.z < attnSplitBlocks
	switch attnSplitMode {
	case 1:
		split = false
	case 2:
		split = true
	}
	kernel := fmt.Sprintf("attn_tc_fwd%d", p.D)
	args := func(out, lse, pm, pl, po devPtr, sp int) []arg {
		return []arg{pArg(out), pArg(lse), pArg(pm), pArg(pl), pArg(po), pArg(qp), pArg(kp), pArg(vp), pArg(mp), pArg(ksp), pArg(pgp),
			iArg(p.MaxPages), iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.Tmax), fArg(scale), iArg(gb), iArg(bq), iArg(sp), iArg(nc)}
	}
	if !split {
		o.launch(kernel, grid, attnBlock, args(op, lp, 0, 0, 0, 0)...)
		return
	}
	rows := int64(p.B * p.Tq * p.Hq)
	pm, pl := o.scratch(rows*int64(nc)*4), o.scratch(rows*int64(nc)*4)
	po := o.scratch(rows * int64(nc) * int64(p.D) * 4)
	o.launch(kernel, dim3{grid.x * nc, grid.y, grid.z}, attnBlock, args(0, 0, pm, pl, po, 1)...)
	o.launch("attn_tc_combine", grid1(rows*int64(p.D)), attnBlock, pArg(op), pArg(lp), pArg(pm), pArg(pl), pArg(po),
		lArg(rows), iArg(p.D), iArg(nc))
}

// attentionBackwardTC launches attn_tc_bwd_dq (dq and dsum) then
// attn_tc_bwd_dkdv on bf16 copies of q, k, v and dout.
func (o *opCtx) attentionBackwardTC(dqp, dkp, dvp devPtr, dout, q, k, v, out, lse kernels.Buffer, p kernels.AttnParams,
	meta []int32, kso int, scale float32) {
	nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
	q16, k16, v16, do16 := o.bf16In("q", q, nq), o.bf16In("k", k, nkv), o.bf16In("v", v, nkv), o.bf16In("dout", dout, nq)
	dop, outp, lp := o.in("dout", dout, nq), o.in("out", out, nq), o.in("lse", lse, nr)
	if o.Bad {
		return
	}
	mp := o.ints(meta)
	ksp, _ := o.attnTCSide(p, mp, kso)
	dsum := o.scratch(int64(nr) * 4)
	grid, gb, bq := attnTiles(p, 64)
	o.launch(fmt.Sprintf("attn_tc_bwd_dq%d", p.D), grid, attnBlock, pArg(dqp), pArg(dsum), pArg(q16), pArg(k16), pArg(v16),
		pArg(do16), pArg(dop), pArg(outp), pArg(lp), pArg(mp), pArg(ksp), iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv),
		iArg(p.Tmax), fArg(scale), iArg(gb), iArg(bq))
	o.launch(fmt.Sprintf("attn_tc_bwd_dkdv%d", p.D), dim3{(p.Tmax + 63) / 64, p.Hkv, p.S}, attnBlock, pArg(dkp), pArg(dvp),
		pArg(q16), pArg(k16), pArg(v16), pArg(do16), pArg(lp), pArg(dsum), pArg(mp), pArg(ksp), iArg(p.B), iArg(p.Tq),
		iArg(p.Hq), iArg(p.Hkv), iArg(p.Tmax), fArg(scale))
}
