package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestEmulatedPackedAttention: the f32 attention kernels restart their key
// tiles at each sequence's KStart, so a packed row gives every sequence the
// bits it gets alone: out, lse, dq, dk and dv are compared bit for bit with
// the sequence run by itself (one row from key 0, no KStart). The rows pack
// lengths that are not multiples of the key tiles (32 forward and dq, 16
// dk/dv), sequences shorter than a tile, boundaries inside a block's query
// positions (so a block makes one pass per sequence), GQA with a group
// split over blocks, a padded tail (KStart = KLen: it sees no key) and, in
// the last case, Qwen2.5-0.5B's heads (G = 7, D = 64). Run with the threads
// of each block forward, in reverse and shuffled.
func TestEmulatedPackedAttention(t *testing.T) {
	cases := []struct {
		Hq, Hkv, D int
		rows       [][]int // sequence lengths of each packed row
		pad        int     // tokens past the last sequence of every row
	}{
		{Hq: 6, Hkv: 2, D: 24, rows: [][]int{{37, 5, 70}, {1, 33, 64, 2}}, pad: 3},
		{Hq: 12, Hkv: 1, D: 40, rows: [][]int{{17, 45}}, pad: 0},
		{Hq: 14, Hkv: 2, D: 64, rows: [][]int{{3, 50, 29}}, pad: 1},
	}
	for i, order := range []string{"forward", "reverse", "shuffled"} {
		t.Run(order, func(t *testing.T) {
			be := newEmu(t, EmuOptions{Order: i, Seed: 7})
			h := &tb{t: t, be: be, r: rand.New(rand.NewPCG(34, uint64(i)))}
			for ci, c := range cases {
				testPackedAttention(h, fmt.Sprintf("case %d", ci), c.Hq, c.Hkv, c.D, c.rows, c.pad)
			}
		})
	}
}

// TestEmulatedPackedAttentionTC is TestEmulatedPackedAttention on the
// tensor-core kernels (attn_tc.cu, attn_tc_bwd.cu; the bf16 backend at
// D = 64 and 128): out, lse, dq, dk and dv of every packed sequence are
// bit-identical to the sequence alone (the emulator's mma rounds each
// 16-product k-tile before adding it, so a sum cut into different tiles
// shows in the bits, as on a GPU). Shapes: GQA 7, 2, 3, 4, 14 and 1 (the
// dq kernel's block shapes 7×9, 2×32, 3×21, 4×16, 14×4 and 1×64), one head,
// lengths that are not multiples of a 16-query, 32-key or 64-key tile,
// sequences shorter than a tile, several in one block, two packed rows, a
// padded tail, and (forward order only: minutes on the emulator) the 7B
// shape packed as 700 + 836. Threads forward, in reverse and shuffled.
func TestEmulatedPackedAttentionTC(t *testing.T) {
	cases := []struct {
		Hq, Hkv, D int
		rows       [][]int
		pad        int
		heavy      bool
	}{
		{Hq: 7, Hkv: 1, D: 128, rows: [][]int{{45, 300, 20}}},
		{Hq: 4, Hkv: 2, D: 64, rows: [][]int{{37, 5, 70}, {1, 33, 64, 2}}, pad: 3},
		{Hq: 1, Hkv: 1, D: 64, rows: [][]int{{30, 47, 16, 79}}},
		{Hq: 6, Hkv: 2, D: 128, rows: [][]int{{17, 90, 1}}, pad: 5},
		{Hq: 8, Hkv: 2, D: 64, rows: [][]int{{66, 3, 20}}},
		{Hq: 14, Hkv: 1, D: 64, rows: [][]int{{20, 13, 4}}, pad: 2},
		{Hq: 7, Hkv: 1, D: 128, rows: [][]int{{700, 836}}, heavy: true},
	}
	for i, order := range []string{"forward", "reverse", "shuffled"} {
		t.Run(order, func(t *testing.T) {
			be := newEmu(t, EmuOptions{Options: bf16Options, Order: i, Seed: 9})
			h := &tb{t: t, be: be, r: rand.New(rand.NewPCG(35, uint64(i)))}
			for ci, c := range cases {
				if c.heavy && i > 0 {
					continue
				}
				testPackedAttention(h, fmt.Sprintf("case %d", ci), c.Hq, c.Hkv, c.D, c.rows, c.pad)
			}
			for _, k := range []string{"attn_tc_fwd64", "attn_tc_fwd128", "attn_tc_bwd_dq64", "attn_tc_bwd_dq128",
				"attn_tc_bwd_dkdv64", "attn_tc_bwd_dkdv128"} {
				if be.dev.(*emuDevice).counts[k] == 0 {
					t.Errorf("kernel %s was not launched: the cases did not reach the tensor-core attention", k)
				}
			}
		})
	}
}

// testPackedAttention runs the packed rows forward and backward, then each
// sequence alone, and compares the two bit for bit.
func testPackedAttention(h *tb, what string, Hq, Hkv, D int, rows [][]int, pad int) {
	t := h.t
	B, T := len(rows), 0
	for _, lens := range rows {
		n := pad
		for _, l := range lens {
			n += l
		}
		T = max(T, n)
	}
	p := kernels.AttnParams{B: B, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: B, Tmax: T,
		KLen: make([]int32, B), KStart: make([]int32, B*T)}
	for b, lens := range rows {
		o := 0
		for _, l := range lens {
			for t := range l {
				p.KStart[b*T+o+t] = int32(o)
			}
			o += l
		}
		p.KLen[b] = int32(o)
		for t := o; t < T; t++ {
			p.KStart[b*T+t] = int32(o) // padding sees no key
		}
	}
	nq, nkv, nr := B*T*Hq*D, B*T*Hkv*D, B*T*Hq
	q, k, v, dout := h.vec(nq, 1.5), h.vec(nkv, 1.5), h.vec(nkv, 1), h.vec(nq, 1)
	qb, kb, vb := h.f32(q), h.f32(k), h.f32(v)
	out, lse := h.f32(h.vec(nq, 9)), h.f32(h.vec(nr, 9))
	h.be.Attention(out, lse, qb, kb, vb, p)
	dq, dk, dv := h.f32(h.vec(nq, 9)), h.f32(h.vec(nkv, 9)), h.f32(h.vec(nkv, 9))
	h.be.AttentionBackward(dq, dk, dv, h.f32(dout), qb, kb, vb, out, lse, p)
	got := map[string][]float64{"out": h.down(out), "lse": h.down(lse), "dq": h.down(dq), "dk": h.down(dk), "dv": h.down(dv)}

	qw, kw := Hq*D, Hkv*D // floats per token
	for b, lens := range rows {
		o := 0
		for si, L := range lens {
			// sequence si alone: rows b·T+o … b·T+o+L−1 of q, of slot b of k, v
			a := kernels.AttnParams{B: 1, Tq: L, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: L}
			qs, ks := (b*T+o)*qw, (b*T+o)*kw
			aqb, akb, avb := h.f32(q[qs:qs+L*qw]), h.f32(k[ks:ks+L*kw]), h.f32(v[ks:ks+L*kw])
			aout, alse := h.zeros(L*qw), h.zeros(L*Hq)
			h.be.Attention(aout, alse, aqb, akb, avb, a)
			adq, adk, adv := h.zeros(L*qw), h.zeros(L*kw), h.zeros(L*kw)
			h.be.AttentionBackward(adq, adk, adv, h.f32(dout[qs:qs+L*qw]), aqb, akb, avb, aout, alse, a)
			at := fmt.Sprintf("%s: row %d sequence %d (%d tokens at %d)", what, b, si, L, o)
			for _, c := range []struct {
				name string
				buf  kernels.Buffer
				from int
			}{{"out", aout, qs}, {"lse", alse, (b*T + o) * Hq}, {"dq", adq, qs}, {"dk", adk, ks}, {"dv", adv, ks}} {
				sameBits(t, at+" "+c.name, got[c.name][c.from:], h.down(c.buf))
			}
			o += L
		}
		// the padded tail: out 0, lse −Inf, dq 0; its keys get no gradient
		zeros := func(name string, from, n int, want float64) {
			for x := from; x < from+n; x++ {
				if g := got[name][x]; g != want {
					t.Errorf("%s: row %d padding %s[%d] = %v, want %v", what, b, name, x, g, want)
					return
				}
			}
		}
		n := (T - o)
		zeros("out", (b*T+o)*qw, n*qw, 0)
		zeros("lse", (b*T+o)*Hq, n*Hq, math.Inf(-1))
		zeros("dq", (b*T+o)*qw, n*qw, 0)
		zeros("dk", (b*T+o)*kw, n*kw, 0)
		zeros("dv", (b*T+o)*kw, n*kw, 0)
	}
}

// sameBits fails unless got[:len(want)] has want's bits (as float32).
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	for x, w := range want {
		if g := got[x]; math.Float32bits(float32(g)) != math.Float32bits(float32(w)) {
			t.Errorf("%s[%d] = %.9g, alone %.9g: not bit-identical", what, x, g, w)
			return
		}
	}
}
