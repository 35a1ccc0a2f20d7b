//go:build argrl_cuda

package cuda

import (
	"testing"

	"github.com/argrl/argrl/kernels"
)

// Benchmarks at Qwen2.5-7B shapes (C 3584, F 18944, Hq 28, Hkv 4, D 128,
// V 152064), for make gpu-check. Each reports the op's own throughput.

func benchBackend(b *testing.B, opt Options) *Backend {
	be := gpu(b, opt)
	b.Cleanup(func() { be.Close() })
	return be
}

func syncOrFail(b *testing.B, be *Backend) {
	if err := be.Sync(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMatMulMLP is the up projection of 4096 tokens: [4096,3584]·Wᵀ,
// W [18944,3584] bf16 (exact f32 path and bf16 tensor cores).
func BenchmarkMatMulMLP(b *testing.B) {
	for _, tc := range []bool{false, true} {
		name := "f32"
		if tc {
			name = "bf16tc"
		}
		b.Run(name, func(b *testing.B) {
			be := benchBackend(b, Options{BF16TensorCores: tc})
			M, N, K := 4096, 18944, 3584
			x, w, y := be.Alloc(kernels.F32, M*K), be.Alloc(kernels.BF16, N*K), be.Alloc(kernels.F32, M*N)
			p := kernels.MatMulParams{Batch: 1, M: M, N: N, K: K, TransB: true, Alpha: 1}
			be.MatMul(y, x, w, p)
			syncOrFail(b, be)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				be.MatMul(y, x, w, p)
			}
			syncOrFail(b, be)
			b.ReportMetric(2*float64(M)*float64(N)*float64(K)*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}

// BenchmarkAttention is one layer's attention over 8 sequences of 1024
// tokens, forward and backward.
func BenchmarkAttention(b *testing.B) {
	be := benchBackend(b, Options{})
	p := kernels.AttnParams{B: 8, Tq: 1024, Hq: 28, Hkv: 4, D: 128, S: 8, Tmax: 1024}
	nq, nkv, nr := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D, p.B*p.Tq*p.Hq
	a := func(n int) kernels.Buffer { return be.Alloc(kernels.F32, n) }
	q, k, v, out, lse, dout := a(nq), a(nkv), a(nkv), a(nq), a(nr), a(nq)
	dq, dk, dv := a(nq), a(nkv), a(nkv)
	b.Run("fwd", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			be.Attention(out, lse, q, k, v, p)
		}
		syncOrFail(b, be)
		b.ReportMetric(float64(p.B*p.Tq*b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
	b.Run("bwd", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			be.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, p)
		}
		syncOrFail(b, be)
		b.ReportMetric(float64(p.B*p.Tq*b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
	b.Run("decode", func(b *testing.B) { // 64 rollouts, 1 new token each, 1000 cached
		d := kernels.AttnParams{B: 64, Tq: 1, Hq: 28, Hkv: 4, D: 128, S: 64, Tmax: 1024}
		d.QPos, d.KLen = make([]int32, 64), make([]int32, 64)
		for i := range d.QPos {
			d.QPos[i], d.KLen[i] = 999, 1000
		}
		kc, vc := a(64*1024*4*128), a(64*1024*4*128)
		qd, od, ld := a(64*28*128), a(64*28*128), a(64*28)
		for i := 0; i < b.N; i++ {
			be.Attention(od, ld, qd, kc, vc, d)
		}
		syncOrFail(b, be)
		b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}

// BenchmarkLogProbs is the fused log-softmax over a 1024-token chunk.
func BenchmarkLogProbs(b *testing.B) {
	be := benchBackend(b, Options{})
	N, V := 1024, 152064
	logits, lp, lse, ent := be.Alloc(kernels.F32, N*V), be.Alloc(kernels.F32, N), be.Alloc(kernels.F32, N), be.Alloc(kernels.F32, N)
	tg := make([]int32, N)
	for i := 0; i < b.N; i++ {
		be.LogProbs(lp, lse, ent, logits, tg, N, V)
	}
	syncOrFail(b, be)
	b.ReportMetric(float64(N)*float64(V)*4*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkSample draws one token for 64 rollouts (top-p 0.95, T 0.6).
func BenchmarkSample(b *testing.B) {
	be := benchBackend(b, Options{})
	N, V := 64, 152064
	logits := be.Alloc(kernels.F32, N*V)
	ids, u := make([]int32, N), make([]float32, N)
	for i := 0; i < b.N; i++ {
		be.Sample(ids, logits, u, N, V, kernels.SampleParams{Temperature: 0.6, TopP: 0.95})
	}
	syncOrFail(b, be)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
