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
// for each batch row, resolved as kernels.RefAttention does) and the scale.
func (o *opCtx) attnCheck(p kernels.AttnParams) (meta []int32, scale float32) {
	o.Attn(p)
	if !o.Bad && p.D > attnMaxD {
		o.Failf("head dim D = %d > %d is not supported by the CUDA kernels", p.D, attnMaxD)
	}
	if o.Bad {
		return nil, 0
	}
	meta = make([]int32, 3*p.B)
	for b := 0; b < p.B; b++ {
		slot, qpos, klen := p.Row(b)
		meta[b], meta[p.B+b], meta[2*p.B+b] = int32(slot), int32(qpos), int32(klen)
	}
	scale = p.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(p.D)))
	}
	return meta, scale
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
	meta, scale := o.attnCheck(p)
	nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
	op, lp := o.out("out", out, nq), o.out("lse", lse, p.B*p.Tq*p.Hq)
	if be.attnTC(p) { // bf16 tensor cores (ops_attn_tc.go)
		if !o.Skip(nq) {
			o.attentionTC(op, lp, q, k, v, p, meta, scale)
		}
		return
	}
	qp, kp, vp := o.in("q", q, nq), o.in("k", k, nkv), o.in("v", v, nkv)
	if o.Skip(nq) {
		return
	}
	grid, gb, bq := attnTiles(p, 16)
	o.launch("attn_fwd", grid, attnBlock, pArg(op), pArg(lp), pArg(qp), pArg(kp), pArg(vp), pArg(o.ints(meta)),
		iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.D), iArg(p.Tmax), fArg(scale), iArg(gb), iArg(bq))
}

func (be *Backend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse kernels.Buffer, p kernels.AttnParams) {
	o := be.begin("AttentionBackward")
	defer o.end()
	meta, scale := o.attnCheck(p)
	nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
	dqp, dkp, dvp := o.out("dq", dq, nq), o.out("dk", dk, nkv), o.out("dv", dv, nkv)
	if be.attnTC(p) && nq > 0 && nkv > 0 { // bf16 tensor cores (ops_attn_tc.go)
		o.attentionBackwardTC(dqp, dkp, dvp, dout, q, k, v, out, lse, p, meta, scale)
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
		pArg(mp), iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.D), iArg(p.Tmax), fArg(scale), iArg(gb), iArg(bq))
	o.launch("attn_bwd_dkdv", dim3{(p.Tmax + 15) / 16, p.Hkv, p.S}, attnBlock, pArg(dkp), pArg(dvp), pArg(dop), pArg(qp), pArg(kp), pArg(vp),
		pArg(lp), pArg(dsum), pArg(mp), iArg(p.B), iArg(p.Tq), iArg(p.Hq), iArg(p.Hkv), iArg(p.D), iArg(p.Tmax), fArg(scale))
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
