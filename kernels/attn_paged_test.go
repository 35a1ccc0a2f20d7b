package kernels_test

import (
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestAttentionPagedBitIdentical: on the CPU a paged cache gives the same
// bits as the same keys in one contiguous slot per row, decoding (Tq = 1)
// and prefilling a chunk, past one P·V block of 256 keys: the paged decode
// keeps the rollout's log-probs equal to the training forward's.
func TestAttentionPagedBitIdentical(t *testing.T) {
	be := kernels.NewCPU()
	r := rand.New(rand.NewPCG(3, 5))
	const Hq, Hkv, D, P = 4, 2, 16, 16
	for _, c := range []struct{ Tq, qpos int }{{1, 0}, {1, 15}, {1, 16}, {1, 300}, {1, 301}, {5, 0}, {7, 30}, {7, 31}, {70, 260}, {70, 261}} {
		klen := c.qpos + c.Tq
		np := (klen + P - 1) / P
		S := np + 3
		perm := r.Perm(S)[:np] // the row's pages, scattered over the cache
		if c.qpos%2 == 0 {
			for i := range perm { // or consecutive (read in place)
				perm[i] = 2 + i
			}
		}
		cont := make([]float32, np*P*Hkv*D)
		pk, pv := make([]float32, S*P*Hkv*D), make([]float32, S*P*Hkv*D)
		cv := make([]float32, len(cont))
		for i := range cont {
			cont[i], cv[i] = r.Float32()*2-1, r.Float32()*2-1
		}
		row := P * Hkv * D
		pages := make([]int32, np)
		for i, pg := range perm {
			pages[i] = int32(pg)
			copy(pk[pg*row:(pg+1)*row], cont[i*row:])
			copy(pv[pg*row:(pg+1)*row], cv[i*row:])
		}
		q := make([]float32, c.Tq*Hq*D)
		for i := range q {
			q[i] = r.Float32()*2 - 1
		}
		run := func(k, v []float32, p kernels.AttnParams) ([]float32, []float32) {
			qb, kb, vb := be.Alloc(kernels.F32, len(q)), be.Alloc(kernels.F32, len(k)), be.Alloc(kernels.F32, len(v))
			ob, lb := be.Alloc(kernels.F32, len(q)), be.Alloc(kernels.F32, c.Tq*Hq)
			be.CopyIn(qb, q)
			be.CopyIn(kb, k)
			be.CopyIn(vb, v)
			be.Attention(ob, lb, qb, kb, vb, p)
			o, l := make([]float32, len(q)), make([]float32, c.Tq*Hq)
			be.CopyOut(o, ob)
			be.CopyOut(l, lb)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			return o, l
		}
		base := kernels.AttnParams{B: 1, Tq: c.Tq, Hq: Hq, Hkv: Hkv, D: D, QPos: []int32{int32(c.qpos)}, KLen: []int32{int32(klen)}}
		pc := base
		pc.S, pc.Tmax = 1, np*P
		pp := base
		pp.S, pp.Tmax, pp.Pages, pp.MaxPages = S, P, pages, np
		o1, l1 := run(cont, cv, pc)
		o2, l2 := run(pk, pv, pp)
		for i := range o1 {
			if o1[i] != o2[i] {
				t.Fatalf("Tq %d, qpos %d: out[%d] paged %v, contiguous %v", c.Tq, c.qpos, i, o2[i], o1[i])
			}
		}
		for i := range l1 {
			if l1[i] != l2[i] {
				t.Fatalf("Tq %d, qpos %d: lse[%d] paged %v, contiguous %v", c.Tq, c.qpos, i, l2[i], l1[i])
			}
		}
	}
}
