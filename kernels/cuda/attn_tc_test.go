package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/kerneltest"
)

// testAttentionTC runs the tensor-core attention (attn_tc.cu) on the
// emulator through the bf16 backend (TestEmulatedKernels, threads
// shuffled): kerneltest.AttentionBF16's shapes (the 7B shape, odd T, one
// head, GQA 1/2/7, D 16-128, decoding, prefill, packed rows, paged
// caches, the 7B decode shape) against the references, with keys in one
// pass per block and split across blocks (flash-decoding) giving the same
// bits, and decoding from a bf16 slot or shuffled bf16 pages, and packed
// training, bit-identical to training the sequence alone. The paged
// caches are read in place (no kv_gather launch). Then KVWrite into a
// bf16 cache rounds each row to bf16 and writes nothing else.
func testAttentionTC(t *testing.T, be *Backend) {
	defer func() { attnSplitMode = 0 }()
	kerneltest.AttentionBF16(t, be, map[string]func(){
		"one pass": func() { attnSplitMode = 1 },
		"split":    func() { attnSplitMode = 2 },
	})
	attnSplitMode = 0 // automatic: one of the two, by the block count
	for _, k := range []string{"attn_tc_fwd16", "attn_tc_fwd32", "attn_tc_fwd64", "attn_tc_fwd128", "attn_tc_combine",
		"attn_tc_bwd_dq16", "attn_tc_bwd_dq64", "attn_tc_bwd_dq128", "attn_tc_bwd_dkdv32", "attn_tc_bwd_dkdv64"} {
		if be.dev.(*emuDevice).counts[k] == 0 {
			t.Errorf("kernel %s was not launched", k)
		}
	}
	for _, k := range []string{"kv_gather", "kv_gather_bf16", "attn_fwd", "attn_bwd_dq", "attn_bwd_dkdv"} {
		if n := be.dev.(*emuDevice).counts[k]; n != 0 {
			t.Errorf("kernel %s was launched %d times: every case has a tensor-core head dim", k, n)
		}
	}

	h := &tb{t: t, be: be, r: rand.New(rand.NewPCG(3, 2))}
	const B, T, Hkv, D, Tmax, S = 2, 3, 2, 8, 7, 3
	x := h.vec(B*T*Hkv*D, 2)
	old := h.vec(S*Tmax*Hkv*D, 1)
	cache := h.up(old, kernels.BF16)
	slot, pos := []int32{2, 0}, []int32{4, 1}
	be.KVWrite(cache, h.f32(x), slot, pos, B, T, Hkv, D, Tmax)
	want := make([]float64, len(old))
	for i, v := range old {
		want[i] = float64(kernels.Float32FromBF16(kernels.BF16FromFloat32(float32(v))))
	}
	row := Hkv * D
	for b := 0; b < B; b++ {
		for tt := 0; tt < T; tt++ {
			for e := 0; e < row; e++ {
				v := x[(b*T+tt)*row+e]
				want[(int(slot[b])*Tmax+int(pos[b])+tt)*row+e] = float64(kernels.Float32FromBF16(kernels.BF16FromFloat32(float32(v))))
			}
		}
	}
	h.near("KVWrite into a bf16 cache", h.down(cache), want, 0, 0)
}
