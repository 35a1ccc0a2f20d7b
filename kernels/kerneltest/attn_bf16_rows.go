package kerneltest

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// attnPackedPagedMatchTraining: the rows of one sequence of 300 tokens
// (GQA 7, D = 128; two 256-key chunks, the second partial) computed by a
// causal training call of its own must come out with the same bits
//   - packed in one row after a 45-token sequence and before a 20-token
//     one (KStart; the sequence starts mid-tile, and blocks of rows hold
//     two sequences at each boundary), the neighbours equal to theirs
//     alone as well;
//   - its last token decoded from the packed row's keys in a bf16 slot
//     (Tq = 1, KStart);
//   - decoded from a paged bf16 cache (16-token pages in shuffled order):
//     one token at a time at tile, page and chunk edges, three rows of
//     different lengths in one batch, and a 9-token prefill chunk across
//     the chunk boundary.
func attnPackedPagedMatchTraining(h *harness, variant string) {
	t := h.t
	const Hq, Hkv, D, page = 7, 1, 128, 16
	lens := []int{45, 300, 20}
	const seq = 1 // the sequence under test
	T := 0
	for _, n := range lens {
		T += n
	}
	row, krow := Hq*D, Hkv*D
	q, k, v := h.vec(T*row, 1.5), h.vec(T*krow, 1.5), h.vec(T*krow, 1)
	type rows struct{ out, lse []float64 }
	attend := func(p kernels.AttnParams, q []float64, kb, vb kernels.Buffer) rows {
		o, l := h.zeros(p.B*p.Tq*row), h.zeros(p.B*p.Tq*Hq)
		h.b.Attention(o, l, h.f32(q), kb, vb, p)
		return rows{h.down(o), h.down(l)}
	}
	same := func(what string, got rows, gi int, want rows, wi, n int) bool {
		t.Helper()
		if d := firstDiff(got.out[gi*row:(gi+n)*row], want.out[wi*row:(wi+n)*row]); d >= 0 {
			t.Errorf("%s (%s): row %d out[%d] = %v, alone %v", what, variant, wi+d/row, d%row,
				got.out[gi*row+d], want.out[wi*row+d])
			return false
		}
		if d := firstDiff(got.lse[gi*Hq:(gi+n)*Hq], want.lse[wi*Hq:(wi+n)*Hq]); d >= 0 {
			t.Errorf("%s (%s): row %d lse[%d] = %v, alone %v", what, variant, wi+d/Hq, d%Hq,
				got.lse[gi*Hq+d], want.lse[wi*Hq+d])
			return false
		}
		return true
	}
	packed := attend(kernels.AttnParams{B: 1, Tq: T, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T, KStart: packedStarts(lens...)},
		q, h.f32(k), h.f32(v))
	var alone rows
	start, off := 0, 0
	for s, n := range lens {
		kb, vb := h.f32(k[off*krow:(off+n)*krow]), h.f32(v[off*krow:(off+n)*krow])
		a := attend(kernels.AttnParams{B: 1, Tq: n, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: n}, q[off*row:(off+n)*row], kb, vb)
		same(fmt.Sprintf("packed sequence %d (%d tokens at %d)", s, n, off), packed, off, a, 0, n)
		if s == seq {
			alone, start = a, off
		}
		off += n
	}
	n := lens[seq]
	qs := q[start*row : (start+n)*row]

	// its last token from the packed row's cache (KStart, Tq = 1)
	ck, _ := h.up(k, kernels.BF16)
	cv, _ := h.up(v, kernels.BF16)
	same("decode from the packed row's cache", attend(kernels.AttnParams{B: 1, Tq: 1, Hq: Hq, Hkv: Hkv, D: D, S: 1, Tmax: T,
		QPos: []int32{int32(start + n - 1)}, KLen: []int32{int32(start + n)}, KStart: []int32{int32(start)}},
		qs[(n-1)*row:], ck, cv), 0, alone, n-1, 1)

	// a paged bf16 cache: the sequence's page i is pages[i]
	np := (n + page - 1) / page
	S := np + 6
	pages := shuffledPages(1, np, S, 5)
	pk, pv := make([]float64, S*page*krow), make([]float64, S*page*krow)
	for j := 0; j < n; j++ {
		dst := (int(pages[j/page])*page + j%page) * krow
		copy(pk[dst:dst+krow], k[(start+j)*krow:])
		copy(pv[dst:dst+krow], v[(start+j)*krow:])
	}
	kb, _ := h.up(pk, kernels.BF16)
	vb, _ := h.up(pv, kernels.BF16)
	paged := func(pos []int, tq int) kernels.AttnParams {
		p := kernels.AttnParams{B: len(pos), Tq: tq, Hq: Hq, Hkv: Hkv, D: D, S: S, Tmax: page, MaxPages: np}
		for _, i := range pos {
			p.QPos, p.KLen = append(p.QPos, int32(i)), append(p.KLen, int32(i+tq))
			p.Pages = append(p.Pages, pages...)
		}
		return p
	}
	for _, i := range []int{0, 15, 16, 31, 32, 255, 256, n - 1} {
		same(fmt.Sprintf("paged decode at %d", i), attend(paged([]int{i}, 1), qs[i*row:(i+1)*row], kb, vb), 0, alone, i, 1)
	}
	batch := []int{n - 1, 3, 100}
	var qb []float64
	for _, i := range batch {
		qb = append(qb, qs[i*row:(i+1)*row]...)
	}
	got := attend(paged(batch, 1), qb, kb, vb)
	for r, i := range batch {
		same(fmt.Sprintf("paged decode batch row %d at %d", r, i), got, r, alone, i, 1)
	}
	same("paged prefill chunk 250..258", attend(paged([]int{250}, 9), qs[250*row:259*row], kb, vb), 0, alone, 250, 9)
}
