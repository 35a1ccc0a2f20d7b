package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// SGEMM benchmarks: GFLOP/s of C = A·op(B) through the CPU backend
// (Backend.MatMul with the build's BLAS) and, in the openblas build,
// OpenBLAS's sgemm called directly (bench_openblas_test.go). bench.sh runs
// the default and the openblas build and prints the ratio table.

// sgemmShapes: square sizes and two Linear shapes (y = x·Wᵀ, TransB):
// a batch-64 decode step and a 2048-token training step of a 896→4864 MLP.
var sgemmShapes = []struct {
	m, n, k int
	transB  bool
}{
	{256, 256, 256, false},
	{1024, 1024, 1024, false},
	{2048, 2048, 2048, false},
	{64, 4864, 896, true},
	{2048, 4864, 896, true},
}

// sgemmImpls maps a benchmark name to a function doing one C = A·op(B).
// The openblas build adds "openblas-direct".
var sgemmImpls = []struct {
	name string
	mk   func(m, n, k int, transB bool) func() error
}{
	{"cpu-" + blasName, backendSGEMM},
}

func randF32(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.Float64()*2 - 1)
	}
	return x
}

func backendSGEMM(m, n, k int, transB bool) func() error {
	be := NewCPU()
	a, b, c := be.Alloc(F32, m*k), be.Alloc(F32, k*n), be.Alloc(F32, m*n)
	be.CopyIn(a, randF32(m*k))
	be.CopyIn(b, randF32(k*n))
	p := MatMulParams{Batch: 1, M: m, N: n, K: k, TransB: transB, Alpha: 1}
	return func() error {
		be.MatMul(c, a, b, p)
		return be.Sync()
	}
}

func BenchmarkSGEMM(b *testing.B) {
	for _, impl := range sgemmImpls {
		for _, s := range sgemmShapes {
			b.Run(fmt.Sprintf("impl=%s/shape=%dx%dx%d", impl.name, s.m, s.n, s.k), func(b *testing.B) {
				run := impl.mk(s.m, s.n, s.k, s.transB)
				if err := run(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := run(); err != nil {
						b.Fatal(err)
					}
				}
				flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
				b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkAttention: fused forward and backward at a training shape
// (B=2, T=256, Hq=8, Hkv=4, D=64) and a batch-64 decode step over a
// 512-token cache (Hq=14, Hkv=2, D=64: Qwen2.5-0.5B).
func BenchmarkAttention(b *testing.B) {
	train := AttnParams{B: 2, Tq: 256, Hq: 8, Hkv: 4, D: 64, S: 2, Tmax: 256}
	dec := AttnParams{B: 64, Tq: 1, Hq: 14, Hkv: 2, D: 64, S: 64, Tmax: 512}
	dec.QPos, dec.KLen = make([]int32, 64), make([]int32, 64)
	for i := range dec.QPos {
		dec.QPos[i], dec.KLen[i] = 511, 512
	}
	for _, c := range []struct {
		name string
		p    AttnParams
		bwd  bool
	}{{"train-fwd", train, false}, {"train-bwd", train, true}, {"decode64", dec, false}} {
		b.Run(c.name, func(b *testing.B) {
			be := NewCPU()
			p := c.p
			nq, nkv := p.B*p.Tq*p.Hq*p.D, p.S*p.Tmax*p.Hkv*p.D
			buf := func(n int) Buffer { x := be.Alloc(F32, n); be.CopyIn(x, randF32(n)); return x }
			q, k, v, out, lse := buf(nq), buf(nkv), buf(nkv), be.Alloc(F32, nq), be.Alloc(F32, p.B*p.Tq*p.Hq)
			dout, dq, dk, dv := buf(nq), be.Alloc(F32, nq), be.Alloc(F32, nkv), be.Alloc(F32, nkv)
			be.Attention(out, lse, q, k, v, p)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.bwd {
					be.AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, p)
				} else {
					be.Attention(out, lse, q, k, v, p)
				}
			}
			if err := be.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(p.B*p.Tq*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkLogProbs: fused log-softmax + gather (+entropy) and its
// backward over a 151936-token vocabulary (Qwen2.5), 64 rows.
func BenchmarkLogProbs(b *testing.B) {
	N, V := 64, 151936
	be := NewCPU()
	x := be.Alloc(F32, N*V)
	be.CopyIn(x, randF32(N*V))
	lp, lse, ent, dlp, dx := be.Alloc(F32, N), be.Alloc(F32, N), be.Alloc(F32, N), be.Alloc(F32, N), be.Alloc(F32, N*V)
	be.Fill(dlp, 1)
	tg := make([]int32, N)
	for i := range tg {
		tg[i] = int32(i * 17)
	}
	b.Run("fwd+entropy", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			be.LogProbs(lp, lse, ent, x, tg, N, V)
		}
		b.ReportMetric(float64(N*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("bwd", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			be.LogProbsBackward(dx, dlp, x, lse, tg, N, V)
		}
		b.ReportMetric(float64(N*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("sample-T0.6-p0.95", func(b *testing.B) {
		ids, u := make([]int32, N), make([]float32, N)
		for i := range u {
			u[i] = float32(i) / float32(N)
		}
		for i := 0; i < b.N; i++ {
			be.Sample(ids, x, u, N, V, SampleParams{Temperature: 0.6, TopP: 0.95})
		}
		b.ReportMetric(float64(N*b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	if err := be.Sync(); err != nil {
		b.Fatal(err)
	}
}
