package kernels

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/argrl/argrl/kernels/internal/vec"
)

// Fused causal GQA attention on the CPU.
//
//	q, out, dq, dout  [B, Tq, Hq, D]
//	k, v, dk, dv      [S, Tmax, Hkv, D]
//	lse               [B, Tq, Hq]
//
// Work is split into tiles: up to attnTile query rows of one head (or, when
// decoding with Tq = 1, the g = Hq/Hkv query heads that share one KV head).
// A tile computes its scores S = scale·Q·Kᵀ [rows, L] with one sgemm, the
// exact softmax of each row (the whole row of keys is in the tile, so no
// online rescaling is needed), and out = P·V with a second sgemm. The
// backward recomputes P from lse per tile. Only one tile of scores per
// goroutine exists at a time; nothing T×T is stored.
const attnTile = 64

// attnGeom locates one tile: row r of q/out/dout/dq starts at qoff+r*ldq,
// its lse at loff+r*ldl, its position is pos0+r*posStep; key j of
// k/v/dk/dv starts at koff+j*(Hkv*D); keys j < kl exist. With KStart,
// positions and keys count from the tile's first visible key (koff is
// that key's offset).
type attnGeom struct {
	qoff, ldq, loff, ldl int
	nr, pos0, posStep    int
	koff, kl             int
	b, kvh               int // batch row and KV head (paged caches: the page table)
}

// keys returns how many keys row r sees.
func (g *attnGeom) keys(r int) int { return max(0, min(g.pos0+r*g.posStep+1, g.kl)) }

// attnBufs are the checked slices of one Attention or AttentionBackward call.
type attnBufs struct {
	q, k, v, out, lse, dout, dq, dk, dv []float32
}

// attnTiles enumerates the tiles of batch row b for KV head kvh.
func attnTiles(p AttnParams, b, kvh int, fn func(g attnGeom)) {
	s, qp, kl := attnRow(p, b)
	grp := p.Hq / p.Hkv
	koff := (s*p.Tmax*p.Hkv + kvh) * p.D
	ldk := p.Hkv * p.D
	if p.Tq == 1 {
		h0, ks := kvh*grp, attnKStart(p, b, 0)
		fn(attnGeom{qoff: (b*p.Hq + h0) * p.D, ldq: p.D, loff: b*p.Hq + h0, ldl: 1,
			nr: grp, pos0: qp - ks, koff: koff + ks*ldk, kl: kl - ks, b: b, kvh: kvh})
		return
	}
	for h := kvh * grp; h < (kvh+1)*grp; h++ {
		for i0 := 0; i0 < p.Tq; {
			// A tile's rows share one KStart ks (tiles start afresh where it
			// changes: at each packed sequence's start), and see keys from
			// ks on as a row of their own would: a packed sequence's tiles,
			// and its P·V key blocks, sit where they would if it were alone
			// in its row, so its results are the same bits.
			ks, n := attnKStart(p, b, i0), 1
			for n < attnTile && i0+n < p.Tq && attnKStart(p, b, i0+n) == ks {
				n++
			}
			fn(attnGeom{qoff: ((b*p.Tq+i0)*p.Hq + h) * p.D, ldq: p.Hq * p.D,
				loff: (b*p.Tq+i0)*p.Hq + h, ldl: p.Hq,
				nr: n, pos0: qp + i0 - ks, posStep: 1, koff: koff + ks*ldk, kl: kl - ks, b: b, kvh: kvh})
			i0 += n
		}
	}
}

func attnScale32(p AttnParams) float32 {
	if p.Scale != 0 {
		return p.Scale
	}
	return float32(1 / math.Sqrt(float64(p.D)))
}

// Attention writes out and lse; see AttnParams.
func (c *cpuBackend) Attention(out, lse, q, k, v Buffer, p AttnParams) {
	ck := c.check("Attention")
	ck.Attn(p)
	nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
	var a attnBufs
	a.out = ck.f32("out", out, nq)
	a.lse = ck.f32("lse", lse, p.B*p.Tq*p.Hq)
	a.q = ck.in("q", q, nq)
	a.k = ck.in("k", k, nkv)
	a.v = ck.in("v", v, nkv)
	if ck.Skip(nq) {
		return
	}
	var tiles []attnGeom
	for b := 0; b < p.B; b++ {
		for kvh := 0; kvh < p.Hkv; kvh++ {
			attnTiles(p, b, kvh, func(g attnGeom) { tiles = append(tiles, g) })
		}
	}
	scale := attnScale32(p)
	c.parallelDo(len(tiles), func(i int) { c.attnFwdTile(&tiles[i], &a, p, scale) })
}

func (c *cpuBackend) attnFwdTile(g *attnGeom, a *attnBufs, p AttnParams, scale float32) {
	D, ldk := p.D, p.Hkv*p.D
	Lm := g.keys(g.nr - 1)
	if g.posStep == 0 {
		Lm = g.keys(0)
	}
	if Lm == 0 {
		for r := 0; r < g.nr; r++ {
			clear(a.out[g.qoff+r*g.ldq:][:D])
			a.lse[g.loff+r*g.ldl] = float32(math.Inf(-1))
		}
		return
	}
	kk, vv, koff := a.k, a.v, g.koff
	if p.Pages != nil && attnRun(p, g.b, Lm) {
		// The row's pages follow each other: its keys are contiguous rows.
		koff = (int(p.Pages[g.b*p.MaxPages])*p.Tmax*p.Hkv + g.kvh) * D
	} else if p.Pages != nil {
		kp, vp := attnGather(a, p, g, Lm)
		defer putScratch(kp)
		defer putScratch(vp)
		kk, vv, koff, ldk = *kp, *vp, 0, D
	}
	sp := getScratch(g.nr * Lm)
	S := *sp
	c.sgemm(blas.NoTrans, blas.Trans, g.nr, Lm, D, scale, a.q[g.qoff:], g.ldq, kk[koff:], ldk, 0, S, Lm)
	for r := 0; r < g.nr; r++ {
		row, L := S[r*Lm:(r+1)*Lm], g.keys(r)
		if L == 0 {
			clear(row)
			a.lse[g.loff+r*g.ldl] = float32(math.Inf(-1))
			continue
		}
		m := row[0]
		for _, x := range row[1:L] {
			m = max(m, x)
		}
		vec.ExpShift(row[:L], row[:L], m, 1)
		var sum float32
		for _, e := range row[:L] {
			sum += e
		}
		clear(row[L:])
		vec.AXPBY(row[:L], row[:L], nil, 1/sum, 0)
		a.lse[g.loff+r*g.ldl] = m + float32(math.Log(float64(sum)))
	}
	// out = P·V in blocks of attnKeyBlock keys at fixed positions, so that a
	// row's sums do not depend on the tile's extent Lm (the SGEMM splits K
	// by its own length): decoding one row and a training tile of 64 rows
	// then give the same bits (docs/design.md, "ρ ≡ 1").
	for k0 := 0; k0 < Lm; k0 += attnKeyBlock {
		var beta float32
		if k0 > 0 {
			beta = 1
		}
		c.sgemm(blas.NoTrans, blas.NoTrans, g.nr, D, min(attnKeyBlock, Lm-k0), 1, S[k0:], Lm, vv[koff+k0*ldk:], ldk, beta, a.out[g.qoff:], g.ldq)
	}
	putScratch(sp)
}

// attnRun reports whether the pages holding row b's first L keys are
// consecutive pages of the cache.
func attnRun(p AttnParams, b, L int) bool {
	pg := p.Pages[b*p.MaxPages : b*p.MaxPages+(L+p.Tmax-1)/p.Tmax]
	for i := 1; i < len(pg); i++ {
		if pg[i] != pg[i-1]+1 {
			return false
		}
	}
	return true
}

// attnGather copies the first L keys and values of tile g's batch row and
// KV head out of a paged cache into two scratch slices [L, D] (the tile
// then runs the same products as over a contiguous cache, so a paged and
// a contiguous decode give the same bits): L·D floats each, beside the
// tile's 4·nr·L·D flops.
func attnGather(a *attnBufs, p AttnParams, g *attnGeom, L int) (kp, vp *[]float32) {
	D, ld := p.D, p.Hkv*p.D
	kp, vp = getScratch(L*D), getScratch(L*D)
	K, V := *kp, *vp
	for j0 := 0; j0 < L; j0 += p.Tmax {
		pg := int(p.Pages[g.b*p.MaxPages+j0/p.Tmax])
		base := (pg*p.Tmax*p.Hkv + g.kvh) * D
		for j := j0; j < min(L, j0+p.Tmax); j++ {
			src := base + (j-j0)*ld
			copy(K[j*D:(j+1)*D], a.k[src:src+D])
			copy(V[j*D:(j+1)*D], a.v[src:src+D])
		}
	}
	return kp, vp
}

// attnKeyBlock is the number of keys one P·V product sums: at most the
// SGEMM's K block (kernels/internal/sgemm), so each block is one unbroken
// chain of fused multiply-adds whatever the tile's length.
const attnKeyBlock = 256

// AttentionBackward writes dq, dk and dv, recomputing P per tile from lse.
// Tiles that share a cache slot and KV head (and so accumulate into the
// same rows of dk, dv) run on the same goroutine.
func (c *cpuBackend) AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse Buffer, p AttnParams) {
	ck := c.check("AttentionBackward")
	ck.Attn(p)
	ck.NoPages(p)
	nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
	var a attnBufs
	a.dq = ck.f32("dq", dq, nq)
	a.dk = ck.f32("dk", dk, nkv)
	a.dv = ck.f32("dv", dv, nkv)
	a.dout = ck.in("dout", dout, nq)
	a.q = ck.in("q", q, nq)
	a.k = ck.in("k", k, nkv)
	a.v = ck.in("v", v, nkv)
	a.out = ck.in("out", out, nq)
	a.lse = ck.in("lse", lse, p.B*p.Tq*p.Hq)
	if ck.Bad {
		return
	}
	clear(a.dq)
	clear(a.dk)
	clear(a.dv)
	if ck.Skip(nq, nkv) {
		return
	}
	// Group batch rows by slot so each (slot, kvh) item owns its dk/dv rows.
	bySlot := make([][]int, p.S)
	for b := 0; b < p.B; b++ {
		s, _, _ := attnRow(p, b)
		bySlot[s] = append(bySlot[s], b)
	}
	type item struct{ s, kvh int }
	var items []item
	for s, bs := range bySlot {
		if len(bs) > 0 {
			for kvh := 0; kvh < p.Hkv; kvh++ {
				items = append(items, item{s, kvh})
			}
		}
	}
	scale := attnScale32(p)
	c.parallelDo(len(items), func(i int) {
		it := items[i]
		for _, b := range bySlot[it.s] {
			attnTiles(p, b, it.kvh, func(g attnGeom) { c.attnBwdTile(&g, &a, p, scale) })
		}
	})
}

func (c *cpuBackend) attnBwdTile(g *attnGeom, a *attnBufs, p AttnParams, scale float32) {
	D, ldk := p.D, p.Hkv*p.D
	Lm := g.keys(g.nr - 1)
	if g.posStep == 0 {
		Lm = g.keys(0)
	}
	if Lm == 0 {
		return // dq rows stay 0
	}
	pp, dpp := getScratch(g.nr*Lm), getScratch(g.nr*Lm)
	P, dS := *pp, *dpp
	c.sgemm(blas.NoTrans, blas.Trans, g.nr, Lm, D, scale, a.q[g.qoff:], g.ldq, a.k[g.koff:], ldk, 0, P, Lm)
	c.sgemm(blas.NoTrans, blas.Trans, g.nr, Lm, D, 1, a.dout[g.qoff:], g.ldq, a.v[g.koff:], ldk, 0, dS, Lm)
	for r := 0; r < g.nr; r++ {
		prow, drow, L := P[r*Lm:(r+1)*Lm], dS[r*Lm:(r+1)*Lm], g.keys(r)
		l := a.lse[g.loff+r*g.ldl]
		if L == 0 || math.IsInf(float64(l), -1) {
			clear(prow)
			clear(drow)
			continue
		}
		o, do := a.out[g.qoff+r*g.ldq:][:D], a.dout[g.qoff+r*g.ldq:][:D]
		var dsum float32
		for d, x := range do {
			dsum += x * o[d]
		}
		vec.ExpShift(prow[:L], prow[:L], l, 1)
		for j, pj := range prow[:L] {
			drow[j] = pj * (drow[j] - dsum) * scale
		}
		clear(prow[L:])
		clear(drow[L:])
	}
	c.sgemm(blas.NoTrans, blas.NoTrans, g.nr, D, Lm, 1, dS, Lm, a.k[g.koff:], ldk, 0, a.dq[g.qoff:], g.ldq)
	c.sgemm(blas.Trans, blas.NoTrans, Lm, D, g.nr, 1, dS, Lm, a.q[g.qoff:], g.ldq, 1, a.dk[g.koff:], ldk)
	c.sgemm(blas.Trans, blas.NoTrans, Lm, D, g.nr, 1, P, Lm, a.dout[g.qoff:], g.ldq, 1, a.dv[g.koff:], ldk)
	putScratch(pp)
	putScratch(dpp)
}
