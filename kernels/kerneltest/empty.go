package kerneltest

import (
	"fmt"

	"github.com/argrl/argrl/kernels"
)

// testEmpty checks the zero-size convention of kernels.Backend: a call with
// a zero size writes nothing (outputs keep a sentinel) and needs no valid
// index side inputs, except the ops whose result is defined on empty input
// (Dot and SumRows write 0, RMSNormBackward dw = 0 for N = 0,
// EmbeddingBackward zeroes dtable, AttentionBackward zeroes dq, dk, dv);
// buffer arguments are checked even then; rows over an empty vocabulary
// are an error.
func testEmpty(h *harness) {
	b := h.b
	const sentinel = 7
	keep := func(n int) kernels.Buffer { x := h.zeros(n); b.Fill(x, sentinel); return x }
	expect := func(what string, buf kernels.Buffer, v float64) {
		h.t.Helper()
		want := make([]float64, buf.Len())
		for i := range want {
			want[i] = v
		}
		approx(h.t, what, h.down(buf), want, 0, 0)
	}
	x := h.f32(h.vec(40, 1))

	c := keep(6)
	b.MatMul(c, x, x, kernels.MatMulParams{Batch: 0, M: 2, N: 3, K: 4, Alpha: 1})
	b.MatMul(c, x, x, kernels.MatMulParams{Batch: 1, M: 0, N: 3, K: 4, Alpha: 1})
	expect("MatMul with Batch 0 or M 0", c, sentinel)

	o := keep(12)
	b.Embedding(o, x, nil, 3)
	b.Embedding(o, x, []int32{99}, 0) // C = 0: the id is not checked
	expect("Embedding with N 0 or C 0", o, sentinel)
	dt := keep(12)
	b.EmbeddingBackward(dt, x, nil, 4)
	expect("EmbeddingBackward with N 0 (dtable = 0)", dt, 0)

	r := keep(4)
	b.RMSNorm(o, r, x, x, 0, 3, 1e-6)
	b.RMSNorm(o, r, x, x, 4, 0, 1e-6)
	expect("RMSNorm out with N 0 or C 0", o, sentinel)
	expect("RMSNorm rstd with N 0 or C 0", r, sentinel)
	dx, dw := keep(12), keep(3)
	b.RMSNormBackward(dx, dw, x, x, x, x, 0, 3)
	expect("RMSNormBackward dx with N 0", dx, sentinel)
	expect("RMSNormBackward dw with N 0", dw, 0)

	b.RoPE(o, x, x, x, []int32{999, -5}, 2, 0, 4, false) // H = 0: positions are not checked
	expect("RoPE with H 0", o, sentinel)

	p := kernels.AttnParams{B: 1, Tq: 0, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 3}
	lse := keep(2)
	b.Attention(o, lse, x, x, x, p)
	expect("Attention out with Tq 0", o, sentinel)
	expect("Attention lse with Tq 0", lse, sentinel)
	dq, dk, dv := keep(8), keep(12), keep(12)
	b.AttentionBackward(dq, dk, dv, x, x, x, x, x, x, p)
	expect("AttentionBackward dq with Tq 0 (its 0 elements)", dq, sentinel)
	expect("AttentionBackward dk with Tq 0", dk, 0)
	expect("AttentionBackward dv with Tq 0", dv, 0)

	cache := keep(16)
	b.KVWrite(cache, x, []int32{5}, []int32{9}, 1, 0, 2, 4, 0) // T = 0: slot and position are not checked
	expect("KVWrite with T 0", cache, sentinel)

	b.SwiGLU(o, x, x, 0, 3, 3)
	b.SwiGLUBackward(o, o, x, x, x, 0, 3, 6)
	b.AXPBY(o, x, x, 1, 1, 0)
	b.Mul(o, x, x, 0)
	b.AddBias(o, x, x, 0, 3)
	b.Dropout(o, x, 0, 0.5, 1)
	b.AdamW(o, x, o, o, 0, kernels.AdamWParams{LR: 1, Beta1: 0.9, Beta2: 0.99, Step: 1})
	expect("elementwise ops with n 0", o, sentinel)
	sr, d := keep(3), keep(1)
	b.SumRows(sr, x, 0, 3)
	b.Dot(d, x, x, 0)
	expect("SumRows with N 0", sr, 0)
	expect("Dot with n 0", d, 0)

	lp := keep(2)
	b.LogProbs(lp, lse, nil, x, nil, 0, 5)
	b.LogProbsBackward(o, lp, x, lse, nil, 0, 5)
	expect("LogProbs with N 0", lp, sentinel)
	expect("LogProbsBackward with N 0", o, sentinel)
	ids := []int32{-3}
	b.Sample(ids, x, nil, 0, 5, kernels.SampleParams{})
	if ids[0] != -3 {
		h.t.Errorf("Sample with N 0 wrote ids")
	}
	h.sync()

	// Rows over an empty vocabulary are an error.
	b.LogProbs(lp, lse, nil, x, []int32{-1}, 1, 0)
	h.wantErr("LogProbs with V 0", "vocabulary")
	b.LogProbsBackward(o, lp, x, lse, []int32{-1}, 1, 0)
	h.wantErr("LogProbsBackward with V 0", "vocabulary")
	b.Sample(ids, x, []float32{0.5}, 1, 0, kernels.SampleParams{})
	h.wantErr("Sample with V 0", "vocabulary")

	// Buffers are checked even for empty calls.
	for i, call := range []func(){
		func() { b.MatMul(nil, x, x, kernels.MatMulParams{Batch: 0, M: 2, N: 2, K: 2, Alpha: 1}) },
		func() { b.SwiGLU(nil, x, x, 0, 1, 1) },
		func() { b.Embedding(o, nil, nil, 3) },
		func() { b.KVWrite(cache, nil, nil, nil, 0, 1, 1, 1, 1) },
		func() { b.LogProbs(lp, nil, nil, x, nil, 0, 5) },
	} {
		call()
		h.wantErr(fmt.Sprintf("empty call %d with a nil buffer", i), "nil")
	}
}
