package kerneltest

import (
	"encoding/binary"
	"math"

	"github.com/argrl/argrl/kernels"
)

// The op catalogue: every buffer-taking op of kernels.Backend with small
// shapes, its buffer arguments by role, and its host side inputs. The
// inputs-unchanged and read-only suites run every entry.

// role is how an op uses a buffer argument.
type role uint8

const (
	in     role = iota // read-only input; may be BF16
	inF32              // read-only input kept F32 (Convert's source)
	out                // output or in-place state: F32
	outAny             // destination of a memory op: the variant's dtype
)

type argSpec struct {
	name string
	n    int
	role role
}

// opSpec is one op call. call gets the buffers by argument name; ints and
// floats are the host inputs the call reads, which must be left unchanged.
type opSpec struct {
	name   string
	args   []argSpec
	call   func(b kernels.Backend, a map[string]kernels.Buffer)
	ints   [][]int32
	floats [][]float32
}

func arg(name string, n int, r role) argSpec { return argSpec{name, n, r} }

// catalogue returns the ops; u are the sampling uniforms (in [0, 1)).
func catalogue() []opSpec {
	const (
		M, N, K = 3, 5, 7 // matmul
		R, C, V = 4, 6, 9 // rows, channels, vocabulary
		H, D, P = 2, 4, 7 // heads, head dim, rope positions
	)
	ids := []int32{2, 0, 8, 2}
	pos := []int32{0, 6, 3, 1}
	targets := []int32{1, -1, 8, 0}
	u := []float32{0.1, 0.5, 0.99, 0}
	att := kernels.AttnParams{B: 2, Tq: 3, Hq: 4, Hkv: 2, D: D, S: 2, Tmax: 3, KLen: []int32{3, 2}}
	nq, nkv, nl := 2*3*4*D, 2*3*2*D, 2*3*4
	kvSlot, kvPos := []int32{1, 0}, []int32{0, 3}
	// att's cache paged: its 6 rows as 3 pages of 2; row 0 reads pages 2
	// then 0, row 1 page 1.
	paged := kernels.AttnParams{B: 2, Tq: 3, Hq: 4, Hkv: 2, D: D, S: 3, Tmax: 2, KLen: []int32{3, 2},
		Pages: []int32{2, 0, 1, -1}, MaxPages: 2}
	host, raw := make([]float32, R*C), make([]float32, R*C) // raw: Upload's bytes
	for i := range host {
		host[i], raw[i] = float32(i)/4-1, float32(i%5)-2.5
	}
	sampled := make([]int32, R)
	mm := func(p kernels.MatMulParams) func(b kernels.Backend, a map[string]kernels.Buffer) {
		return func(b kernels.Backend, a map[string]kernels.Buffer) { b.MatMul(a["c"], a["a"], a["b"], p) }
	}
	return []opSpec{
		{name: "MatMul NT", args: []argSpec{arg("c", M*N, out), arg("a", M*K, in), arg("b", N*K, in)},
			call: mm(kernels.MatMulParams{Batch: 1, M: M, N: N, K: K, TransB: true, Alpha: 1, Beta: 0.5})},
		{name: "MatMul NN batched, broadcast B", args: []argSpec{arg("c", 2*M*N, out), arg("a", 2*M*K, in), arg("b", K*N, in)},
			call: mm(kernels.MatMulParams{Batch: 2, M: M, N: N, K: K, Alpha: 1, StrideA: M * K, StrideC: M * N})},
		{name: "MatMul TN", args: []argSpec{arg("c", M*N, out), arg("a", K*M, in), arg("b", K*N, in)},
			call: mm(kernels.MatMulParams{Batch: 1, M: M, N: N, K: K, TransA: true, Alpha: 2})},
		{name: "Embedding", args: []argSpec{arg("out", R*C, out), arg("table", V*C, in)}, ints: [][]int32{ids},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Embedding(a["out"], a["table"], ids, C) }},
		{name: "EmbeddingBackward", args: []argSpec{arg("dtable", V*C, out), arg("dout", R*C, in)}, ints: [][]int32{ids},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.EmbeddingBackward(a["dtable"], a["dout"], ids, C)
			}},
		{name: "RMSNorm", args: []argSpec{arg("out", R*C, out), arg("rstd", R, out), arg("x", R*C, in), arg("w", C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.RMSNorm(a["out"], a["rstd"], a["x"], a["w"], R, C, 1e-6)
			}},
		{name: "RMSNormBackward", args: []argSpec{arg("dx", R*C, out), arg("dw", C, out), arg("dout", R*C, in), arg("x", R*C, in), arg("w", C, in), arg("rstd", R, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.RMSNormBackward(a["dx"], a["dw"], a["dout"], a["x"], a["w"], a["rstd"], R, C)
			}},
		{name: "RoPE", args: []argSpec{arg("out", R*H*D, out), arg("x", R*H*D, in), arg("cos", P*D/2, in), arg("sin", P*D/2, in)}, ints: [][]int32{pos},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.RoPE(a["out"], a["x"], a["cos"], a["sin"], pos, R, H, D, false)
			}},
		{name: "RoPE inverse", args: []argSpec{arg("out", R*H*D, out), arg("x", R*H*D, in), arg("cos", P*D/2, in), arg("sin", P*D/2, in)}, ints: [][]int32{pos},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.RoPE(a["out"], a["x"], a["cos"], a["sin"], pos, R, H, D, true)
			}},
		{name: "Attention", args: []argSpec{arg("out", nq, out), arg("lse", nl, out), arg("q", nq, in), arg("k", nkv, in), arg("v", nkv, in)},
			ints: [][]int32{att.KLen},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.Attention(a["out"], a["lse"], a["q"], a["k"], a["v"], att)
			}},
		{name: "AttentionBackward", args: []argSpec{arg("dq", nq, out), arg("dk", nkv, out), arg("dv", nkv, out), arg("dout", nq, in),
			arg("q", nq, in), arg("k", nkv, in), arg("v", nkv, in), arg("o", nq, in), arg("lse", nl, in)}, ints: [][]int32{att.KLen},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.AttentionBackward(a["dq"], a["dk"], a["dv"], a["dout"], a["q"], a["k"], a["v"], a["o"], a["lse"], att)
			}},
		{name: "KVWrite", args: []argSpec{arg("cache", 2*5*2*D, out), arg("x", 2*2*2*D, in)}, ints: [][]int32{kvSlot, kvPos},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.KVWrite(a["cache"], a["x"], kvSlot, kvPos, 2, 2, 2, D, 5)
			}},
		{name: "KVScatter", args: []argSpec{arg("cache", 3*4*2*D, out), arg("x", 2*2*D, in)}, ints: [][]int32{kvSlot, kvPos},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.KVScatter(a["cache"], a["x"], kvSlot, kvPos, 2, 2, D, 4)
			}},
		{name: "Attention paged", args: []argSpec{arg("out", nq, out), arg("lse", nl, out), arg("q", nq, in), arg("k", nkv, in), arg("v", nkv, in)},
			ints: [][]int32{paged.KLen, paged.Pages},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.Attention(a["out"], a["lse"], a["q"], a["k"], a["v"], paged)
			}},
		{name: "SwiGLU", args: []argSpec{arg("out", R*C, out), arg("gate", R*C, in), arg("up", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.SwiGLU(a["out"], a["gate"], a["up"], R, C, C) }},
		{name: "SwiGLU fused layout", args: []argSpec{arg("out", R*C, out), arg("gu", 2*R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.SwiGLU(a["out"], a["gu"], b.View(a["gu"], C, 2*R*C-C), R, C, 2*C)
			}},
		{name: "SwiGLUBackward", args: []argSpec{arg("dgate", R*C, out), arg("dup", R*C, out), arg("dout", R*C, in), arg("gate", R*C, in), arg("up", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.SwiGLUBackward(a["dgate"], a["dup"], a["dout"], a["gate"], a["up"], R, C, C)
			}},
		{name: "LogProbs", args: []argSpec{arg("lp", R, out), arg("lse", R, out), arg("ent", R, out), arg("logits", R*V, in)}, ints: [][]int32{targets},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.LogProbs(a["lp"], a["lse"], a["ent"], a["logits"], targets, R, V)
			}},
		{name: "LogProbsBackward", args: []argSpec{arg("dlogits", R*V, out), arg("dlp", R, in), arg("logits", R*V, in), arg("lse", R, in)}, ints: [][]int32{targets},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.LogProbsBackward(a["dlogits"], a["dlp"], a["logits"], a["lse"], targets, R, V)
			}},
		{name: "AXPBY", args: []argSpec{arg("out", R*C, out), arg("a", R*C, in), arg("b", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.AXPBY(a["out"], a["a"], a["b"], 0.5, -2, R*C) }},
		{name: "Mul", args: []argSpec{arg("out", R*C, out), arg("a", R*C, in), arg("b", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Mul(a["out"], a["a"], a["b"], R*C) }},
		{name: "AddBias", args: []argSpec{arg("out", R*C, out), arg("x", R*C, in), arg("bias", C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.AddBias(a["out"], a["x"], a["bias"], R, C) }},
		{name: "SumRows", args: []argSpec{arg("out", C, out), arg("x", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.SumRows(a["out"], a["x"], R, C) }},
		{name: "Dot", args: []argSpec{arg("out", 1, out), arg("a", R*C, in), arg("b", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Dot(a["out"], a["a"], a["b"], R*C) }},
		{name: "Dropout", args: []argSpec{arg("out", R*C, out), arg("x", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Dropout(a["out"], a["x"], R*C, 0.3, 17) }},
		{name: "AdamW", args: []argSpec{arg("param", R*C, out), arg("m", R*C, out), arg("v", R*C, out), arg("grad", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.AdamW(a["param"], a["grad"], a["m"], a["v"], R*C, kernels.AdamWParams{LR: 0.1, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.01, Step: 2})
			}},
		{name: "Sample", args: []argSpec{arg("logits", R*V, in)}, floats: [][]float32{u},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				b.Sample(sampled, a["logits"], u, R, V, kernels.SampleParams{Temperature: 0.7, TopK: 5, TopP: 0.9})
			}},
		{name: "Copy", args: []argSpec{arg("dst", R*C, outAny), arg("src", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Copy(a["dst"], a["src"]) }},
		{name: "Convert", args: []argSpec{arg("dst", R*C, out), arg("src", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Convert(a["dst"], a["src"]) }},
		{name: "Convert to the variant's dtype", args: []argSpec{arg("dst", R*C, outAny), arg("src", R*C, inF32)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Convert(a["dst"], a["src"]) }},
		{name: "CopyIn", args: []argSpec{arg("dst", R*C, outAny)}, floats: [][]float32{host},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.CopyIn(a["dst"], host) }},
		{name: "Upload", args: []argSpec{arg("dst", R*C, outAny)}, floats: [][]float32{raw},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) {
				d := a["dst"]
				b.Upload(d, f32Bytes(raw)[:d.Len()*d.DType().Size()])
			}},
		{name: "Fill", args: []argSpec{arg("dst", R*C, outAny)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.Fill(a["dst"], 1.5) }},
		{name: "CopyOut", args: []argSpec{arg("src", R*C, in)},
			call: func(b kernels.Backend, a map[string]kernels.Buffer) { b.CopyOut(make([]float32, R*C), a["src"]) }},
	}
}

// f32Bytes is x as little-endian bytes.
func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
