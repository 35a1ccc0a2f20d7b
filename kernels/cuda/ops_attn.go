package cuda

import (
	"math"

	"github.com/argrl/argrl/kernels"
)

// Shape legend: q, out, dq [B,Tq,Hq,D]; k, v, dk, dv [S,Tmax,Hkv,D];
// lse [B,Tq,Hq]. See kernels.AttnParams and attention.cu.

// attnMaxD is ATT_DMAX in attention.cu.
const attnMaxD = 128

// attnCheck validates p and returns the per-row meta table (slot, qpos, klen
// for each batch row, resolved as kernels.RefAttention does, then KStart
// when given, at kso; kso = -1 without it) and the scale.
func (o *opCtx) attnCheck(p kernels.AttnParams) (meta []int32, kso int, scale float32) {
	o.Attn(p)
	if !o.Bad && p.D > attnMaxD {
		o.Failf("head dim D = %d > %d is not supported by the CUDA kernels", p.D, attnMaxD)
	}
	if o.Bad {
		return nil, 0, 0
	}
	meta = make([]int32, 3*p.B, 3*p.B+len(p.KStart))
	for b := 0; b < p.B; b++ {
		slot, qpos, klen := p.Row(b)
		meta[b], meta[p.B+b], meta[2*p.B+b] = int32(slot), int32(qpos), int32(klen)
	}
	kso = -1
	if p.KStart != nil {
		kso = len(meta)
		meta = append(meta, p.KStart[:p.B*p.Tq]...)
	}
	scale = p.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(p.D)))
	}
	return meta, kso, scale
}

// attnTiles picks the rows of a forward-style block: gb heads of a group
// times bq query positions, at most rows in all.
func attnTiles(p kernels.AttnParams, rows int) (grid dim3, gb, bq int) {
	G := p.Hq / p.Hkv
	gb = min(G, rows)
	bq = max(1, min(rows/gb, p.Tq))
	return dim3{(p.Tq + bq - 1) / bq, p.Hkv * ((G + gb - 1) / gb), p.B}, gb, bq
}

var attnBlock = dim3{128, 1, 1}

func (be *Backend) Attention(out, lse, q, k, v kernels.Buffer, p kernels.AttnParams) {
	o := be.begin("Attention")
	defer o.end()
	meta, kso, scale := o.attnCheck(p)
	nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
	op, lp := o.out("out", out, nq), o.out("lse", lse, p.B*p.Tq*p.Hq)
	if be.attnTC(p) { // bf16 tensor cores (ops_attn_tc.go): packed rows, paged caches
		if !o.Skip(nq) {
			o.attentionTC(op, lp, q, k, v, p, meta, kso, scale)
		}
		return
	}
	qp := o.in("q", q, nq)
	var kp, vp devPtr
	if p.Pages != nil {
		kp, vp, meta = o.attnGather(k, v, p, nkv, nq)
		if meta == nil {
			return
		}
		p.Tmax = int(meta[3*p.B]) // the gathered rows' length
	} else {
		kp, vp = o.in("k", k, nkv), o.in("v", v, nkv)
	}
	if o.Skip(nq) {
		return
	}
	grid, gb, bq := attnTiles(p, 16)
	o.launch("attn_fwd", grid, attnBlock, pArg(op), pArg(lp), pArg(qp), pArg(kp), pArg(vp), pArg(o.ints(meta)),
		iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.D), iArg(p.Tmax), fArg(scale), iArg(gb), iArg(bq), iArg(kso))
}

func (be *Backend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse kernels.Buffer, p kernels.AttnParams) {
	o := be.begin("AttentionBackward")
	defer o.end()
	meta, kso, scale := o.attnCheck(p)
	o.NoPages(p)
	nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
	dqp, dkp, dvp := o.out("dq", dq, nq), o.out("dk", dk, nkv), o.out("dv", dv, nkv)
	if be.attnTC(p) && nq > 0 && nkv > 0 { // bf16 tensor cores (ops_attn_tc.go)
		o.attentionBackwardTC(dqp, dkp, dvp, dout, q, k, v, out, lse, p, meta, kso, scale)
		return
	}
	dop, qp, kp, vp := o.in("dout", dout, nq), o.in("q", q, nq), o.in("k", k, nkv), o.in("v", v, nkv)
	outp, lp := o.in("out", out, nq), o.in("lse", lse, nr)
	if o.Bad {
		return
	}
	if nq == 0 || nkv == 0 { // nothing attends: every gradient is 0
		for _, z := range []struct {
			p devPtr
			n int
		}{{dqp, nq}, {dkp, nkv}, {dvp, nkv}} {
			if z.n > 0 {
				o.check(be.dev.memset32(z.p, 0, int64(z.n)))
			}
		}
		return
	}
	mp := o.ints(meta)
	dsum := o.scratch(int64(nr) * 4)
	grid, gb, bq := attnTiles(p, 8)
	o.launch("attn_bwd_dq", grid, attnBlock, pArg(dqp), pArg(dsum), pArg(dop), pArg(qp), pArg(kp), pArg(vp), pArg(outp), pArg(lp),
		pArg(mp), iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.D), iArg(p.Tmax), fArg(scale), iArg(gb), iArg(bq), iArg(kso))
	o.launch("attn_bwd_dkdv", dim3{(p.Tmax + 15) / 16, p.Hkv, p.S}, attnBlock, pArg(dkp), pArg(dvp), pArg(dop), pArg(qp), pArg(kp), pArg(vp),
		pArg(lp), pArg(dsum), pArg(mp), iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.D), iArg(p.Tmax), fArg(scale), iArg(kso))
}

func (be *Backend) KVWrite(cache, x kernels.Buffer, slot, pos []int32, B, T, Hkv, D, Tmax int) {
	o := be.begin("KVWrite")
	defer o.end()
	o.Dims("B, T, Hkv, D, Tmax", B, T, Hkv, D, Tmax)
	o.Side("slot", len(slot), B)
	o.Side("pos", len(pos), B)
	xp := o.in("x", x, B*T*Hkv*D)
	c := o.buf("cache", cache, 0, kernels.WriteAny) // F32, or BF16 (rounded, kv_write_bf16)
	if o.Skip(B, T, Hkv, D) {
		return
	}
	S := 0
	if Tmax > 0 {
		S = c.n / (Tmax * Hkv * D)
	}
	if !o.KVRows(slot[:B], pos[:B], T, S, Tmax) {
		return
	}
	cp := c.ptr()
	meta := make([]int32, 2*B)
	for b := 0; b < B; b++ {
		meta[b], meta[B+b] = slot[b], pos[b]
	}
	kernel := "kv_write"
	if c.dt == kernels.BF16 {
		kernel = "kv_write_bf16"
	}
	o.launch(kernel, grid1(int64(B*T*Hkv*D)), block1, pArg(cp), pArg(xp), pArg(o.ints(meta)),
		iArg(B), iArg(T), iArg(Hkv), iArg(D), iArg(Tmax))
}

// attnGather copies each batch row's keys and values out of the paged cache
// k, v (f32 or bf16 pages) into two scratch blocks [B, L, Hkv, D], L the
// longest KLen, so attn_fwd reads them as B slots of L tokens (kvcache.cu).
// It returns their addresses and meta with slot b for row b and L appended.
// Today's decode path: it moves each row's visible keys once more through
// memory; paged attention kernels read the pages in place.
func (o *opCtx) attnGather(k, v kernels.Buffer, p kernels.AttnParams, nkv, nq int) (kp, vp devPtr, meta []int32) {
	kb, vb := o.buf("k", k, nkv, kernels.Read), o.buf("v", v, nkv, kernels.Read)
	if o.Bad {
		return 0, 0, nil
	}
	if kb.dt != vb.dt {
		o.Failf("k is %v and v %v: a paged cache stores both alike", kb.dt, vb.dt)
		return 0, 0, nil
	}
	L := 1
	gm := make([]int32, p.B*p.MaxPages+p.B)
	copy(gm, p.Pages[:p.B*p.MaxPages])
	meta = make([]int32, 3*p.B+1)
	for b := 0; b < p.B; b++ {
		_, qpos, klen := p.Row(b)
		L = max(L, klen)
		gm[p.B*p.MaxPages+b] = int32(max(0, min(klen, qpos+p.Tq))) // keys some query sees
		meta[b], meta[p.B+b], meta[2*p.B+b] = int32(b), int32(qpos), int32(klen)
	}
	meta[3*p.B] = int32(L)
	if nq == 0 {
		return 0, 0, meta
	}
	HD := p.Hkv * p.D
	n := int64(p.B) * int64(L) * int64(HD)
	kp, vp = o.scratch(n*4), o.scratch(n*4)
	gp := o.ints(gm)
	kernel := "kv_gather"
	if kb.dt == kernels.BF16 {
		kernel = "kv_gather_bf16"
	}
	for _, c := range [2]struct{ dst, src devPtr }{{kp, kb.ptr()}, {vp, vb.ptr()}} {
		o.launch(kernel, grid1(n), block1, pArg(c.dst), pArg(c.src), pArg(gp),
			iArg(p.B), iArg(L), iArg(HD), iArg(p.Tmax), iArg(p.MaxPages))
	}
	return kp, vp, meta
}

// KVScatter writes row n of x [N,Hkv,D] into the paged cache at (page[n],
// off[n]); the cache may store bf16 (rounded to nearest even).
func (be *Backend) KVScatter(cache, x kernels.Buffer, page, off []int32, N, Hkv, D, Tmax int) {
	o := be.begin("KVScatter")
	defer o.end()
	o.Dims("N, Hkv, D, Tmax", N, Hkv, D, Tmax)
	o.Side("page", len(page), N)
	o.Side("off", len(off), N)
	xp := o.in("x", x, N*Hkv*D)
	c := o.buf("cache", cache, 0, kernels.WriteAny)
	if o.Skip(N, Hkv, D) {
		return
	}
	S := 0
	if Tmax > 0 {
		S = c.n / (Tmax * Hkv * D)
	}
	if !o.KVPages(page[:N], off[:N], S, Tmax) {
		return
	}
	meta := make([]int32, 2*N)
	copy(meta, page[:N])
	copy(meta[N:], off[:N])
	kernel := "kv_scatter"
	if c.dt == kernels.BF16 {
		kernel = "kv_scatter_bf16"
	}
	o.launch(kernel, grid1(int64(N*Hkv*D)), block1, pArg(c.ptr()), pArg(xp), pArg(o.ints(meta)),
		iArg(N), iArg(Hkv*D), iArg(Tmax))
}
