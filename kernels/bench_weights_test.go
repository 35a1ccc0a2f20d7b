package kernels

import "testing"

// weightShapes are the products of a linear layer y = x·Wᵀ (NT) and of its
// activation gradient dX = dY·W (NN): square 1024³, and a Qwen2.5-7B MLP
// projection (C = 3584, F = 18944) on 128 rows.
var weightShapes = []struct {
	m, n, k int
	tB      bool
}{
	{1024, 1024, 1024, true},
	{1024, 1024, 1024, false},
	{128, 18944, 3584, true},
	{128, 3584, 18944, false},
}

// BenchmarkMatMulWeights times Backend.MatMul with the weight operand B
// stored f32 and bf16, at each of weightShapes.
func BenchmarkMatMulWeights(b *testing.B) {
	for _, s := range weightShapes {
		for _, dt := range []DType{F32, BF16} {
			b.Run("B="+dt.String()+"/shape="+shapeName(s.m, s.n, s.k, false, s.tB), func(b *testing.B) {
				be := NewCPU()
				x, w, y := be.Alloc(F32, s.m*s.k), be.Alloc(dt, s.k*s.n), be.Alloc(F32, s.m*s.n)
				be.CopyIn(x, randF32(s.m*s.k))
				be.CopyIn(w, randF32(s.k*s.n))
				p := MatMulParams{Batch: 1, M: s.m, N: s.n, K: s.k, TransB: s.tB, Alpha: 1}
				be.MatMul(y, x, w, p)
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					be.MatMul(y, x, w, p)
				}
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(flops(s.m, s.n, s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
