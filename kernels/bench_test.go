package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// SGEMM benchmarks: GFLOP/s of C = α·op(A)·op(B) for
//
//	gonum            gonum's pure-Go sgemm called directly (its own goroutines):
//	                 the default build's matmul before kernels/internal/sgemm
//	default          Backend.MatMul as in the default (cgo-free) build: the
//	                 packed assembly SGEMM, split over goroutines by cpu_matmul.go
//	                 (gonum again where the machine has no AVX2+FMA)
//	bf16             Backend.MatMul of the default build with BF16 set and
//	                 a bf16 B (weights): the AVX512-BF16 dot GEMM, where
//	                 the CPU has it (else the float32 product)
//	openblas         Backend.MatMul in the -tags openblas build
//	openblas-direct  OpenBLAS's sgemm called directly, its own threads
//
// (the last two only in the openblas build, bench_openblas_test.go).
// BenchmarkSGEMMPaired times them alternating call by call in one process
// and reports rates and ratios; bench.sh prints the table.

// sgemmShapes: square sizes; the 896→4864 MLP Linear (y = x·Wᵀ) at a
// batch-64 decode step and a 2048-token step; the demo model's shapes
// (C=512, F=1408, 256 tokens): forward x·Wᵀ, backward dX = dY·W and
// dW = dYᵀ·X; attention-like 2048×2048×128 products (Q·Kᵀ, P·V); at the
// Qwen2.5-0.5B SFT step's 1024 tokens the MLP's dX = dY·W and the LoRA
// shapes t = x·Aᵀ (r = 32) and dA = dTᵀ·X.
var sgemmShapes = []struct {
	m, n, k    int
	transA, tB bool
}{
	{256, 256, 256, false, false},
	{1024, 1024, 1024, false, false},
	{2048, 2048, 2048, false, false},
	{64, 4864, 896, false, true},
	{2048, 4864, 896, false, true},
	{256, 1408, 512, false, true},
	{256, 512, 1408, false, false},
	{1408, 512, 256, true, false},
	{64, 512, 512, false, true},
	{2048, 2048, 128, false, true},
	{2048, 128, 2048, false, false},
	{1024, 896, 4864, false, false},
	{1024, 32, 896, false, true},
	{32, 896, 1024, true, false},
}

func shapeName(m, n, k int, tA, tB bool) string {
	t := map[bool]string{false: "N", true: "T"}
	return fmt.Sprintf("%dx%dx%d%s%s", m, n, k, t[tA], t[tB])
}

// sgemmImpl makes a function doing one C = op(A)·op(B) of a shape.
type sgemmImpl struct {
	name string
	mk   func(m, n, k int, tA, tB bool) func() error
}

// sgemmImpls: the openblas build appends "openblas" and "openblas-direct".
var sgemmImpls = []sgemmImpl{
	{"gonum", gonumSGEMM},
	{"default", func(m, n, k int, tA, tB bool) func() error {
		return backendSGEMM(newCPU(newGoBLAS().config()), m, n, k, tA, tB)
	}},
	{"bf16", func(m, n, k int, tA, tB bool) func() error {
		return backendBF16(newCPU(newGoBLAS().config()), m, n, k, tA, tB)
	}},
}

// backendBF16 is backendSGEMM with B stored bf16 and bf16 products.
func backendBF16(be Backend, m, n, k int, tA, tB bool) func() error {
	a, b, c := be.Alloc(F32, m*k), be.Alloc(BF16, k*n), be.Alloc(F32, m*n)
	be.CopyIn(a, randF32(m*k))
	be.CopyIn(b, randF32(k*n))
	p := MatMulParams{Batch: 1, M: m, N: n, K: k, TransA: tA, TransB: tB, Alpha: 1, BF16: true}
	return func() error {
		be.MatMul(c, a, b, p)
		return be.Sync()
	}
}

func randF32(n int) []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.Float64()*2 - 1)
	}
	return x
}

// lds are the leading dimensions of op(A) M×K and op(B) K×N.
func lds(m, n, k int, tA, tB bool) (blas.Transpose, int, blas.Transpose, int) {
	ta, lda, tb, ldb := blas.NoTrans, k, blas.NoTrans, n
	if tA {
		ta, lda = blas.Trans, m
	}
	if tB {
		tb, ldb = blas.Trans, k
	}
	return ta, lda, tb, ldb
}

func gonumSGEMM(m, n, k int, tA, tB bool) func() error {
	a, b, c := randF32(m*k), randF32(k*n), make([]float32, m*n)
	ta, lda, tb, ldb := lds(m, n, k, tA, tB)
	var impl gonum.Implementation
	return func() error {
		impl.Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n)
		return nil
	}
}

func backendSGEMM(be Backend, m, n, k int, tA, tB bool) func() error {
	a, b, c := be.Alloc(F32, m*k), be.Alloc(F32, k*n), be.Alloc(F32, m*n)
	be.CopyIn(a, randF32(m*k))
	be.CopyIn(b, randF32(k*n))
	p := MatMulParams{Batch: 1, M: m, N: n, K: k, TransA: tA, TransB: tB, Alpha: 1}
	return func() error {
		be.MatMul(c, a, b, p)
		return be.Sync()
	}
}

func flops(m, n, k int) float64 { return 2 * float64(m) * float64(n) * float64(k) }

// BenchmarkSGEMM times each implementation on its own.
func BenchmarkSGEMM(b *testing.B) {
	for _, impl := range sgemmImpls {
		for _, s := range sgemmShapes {
			b.Run("impl="+impl.name+"/shape="+shapeName(s.m, s.n, s.k, s.transA, s.tB), func(b *testing.B) {
				run := impl.mk(s.m, s.n, s.k, s.transA, s.tB)
				if err := run(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(flops(s.m, s.n, s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSGEMMPaired runs every implementation once per iteration, in
// turn, timing each separately, so load from other processes hits all
// alike. It reports each one's GFLOP/s and "default/gonum" (and, in the
// openblas build, "default/direct", "openblas/direct" and
// "default/openblas"): speed ratios over the same iterations.
func BenchmarkSGEMMPaired(b *testing.B) {
	for _, s := range sgemmShapes {
		b.Run("shape="+shapeName(s.m, s.n, s.k, s.transA, s.tB), func(b *testing.B) {
			runs := make([]func() error, len(sgemmImpls))
			for i, impl := range sgemmImpls {
				runs[i] = impl.mk(s.m, s.n, s.k, s.transA, s.tB)
				if err := runs[i](); err != nil {
					b.Fatal(err)
				}
			}
			el := make([]time.Duration, len(runs))
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for i, run := range runs {
					t0 := time.Now()
					if err := run(); err != nil {
						b.Fatal(err)
					}
					el[i] += time.Since(t0)
				}
			}
			f := flops(s.m, s.n, s.k) * float64(b.N)
			at := map[string]time.Duration{}
			for i, impl := range sgemmImpls {
				at[impl.name] = el[i]
				b.ReportMetric(f/el[i].Seconds()/1e9, impl.name+"-GFLOP/s")
			}
			ratio := func(name, x, y string) {
				if at[x] > 0 && at[y] > 0 {
					b.ReportMetric(at[y].Seconds()/at[x].Seconds(), name)
				}
			}
			ratio("default/gonum", "default", "gonum")
			ratio("bf16/default", "bf16", "default")
			ratio("default/direct", "default", "openblas-direct")
			ratio("openblas/direct", "openblas", "openblas-direct")
			ratio("default/openblas", "default", "openblas")
		})
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
