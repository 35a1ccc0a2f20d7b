package kernels

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkFusedProjections measures what fusing a layer's projections
// would gain on the CPU backend, at Qwen2.5-0.5B's shapes (C 896: q/k/v
// 896 + 128 + 128, gate/up 4,864 + 4,864), with bf16 checkpoint weights
// mapped read-only as model.Open maps them (so decode-sized products use
// the packed panels) and bf16 products where the CPU has them. Unfused:
// one MatMul per projection. Fused: one MatMul over the concatenated
// weights plus the ColumnBlock copies that hand each part on. Both run
// alternately in one process; the metric is the ratio of their median
// times (below 1: fusing is faster).
func BenchmarkFusedProjections(b *testing.B) {
	const C = 896
	for _, g := range []struct {
		name  string
		parts []int
	}{{"qkv", []int{896, 128, 128}}, {"gateup", []int{4864, 4864}}} {
		for _, M := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/M=%d", g.name, M), func(b *testing.B) {
				be := NewCPU()
				mp := be.(Mapper)
				W := 0
				for _, w := range g.parts {
					W += w
				}
				raw := make([]byte, 2*W*C) // the concatenation; each part maps its rows
				for i, v := range randF32(W * C) {
					h := BF16FromFloat32(v)
					raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
				}
				cat, err := mp.Map(BF16, raw)
				if err != nil {
					b.Fatal(err)
				}
				parts, outs := make([]Buffer, len(g.parts)), make([]Buffer, len(g.parts))
				off := 0
				for i, w := range g.parts {
					// separate storage, as separate checkpoint tensors are
					own := append([]byte(nil), raw[2*off*C:2*(off+w)*C]...)
					if parts[i], err = mp.Map(BF16, own); err != nil {
						b.Fatal(err)
					}
					outs[i] = be.Alloc(F32, M*w)
					off += w
				}
				x, y := be.Alloc(F32, M*C), be.Alloc(F32, M*W)
				be.CopyIn(x, randF32(M*C))
				bf := BF16Products(be)
				unfused := func() {
					for i, w := range g.parts {
						be.MatMul(outs[i], x, parts[i], MatMulParams{Batch: 1, M: M, N: w, K: C, TransB: true, Alpha: 1, BF16: bf})
					}
				}
				fused := func() {
					be.MatMul(y, x, cat, MatMulParams{Batch: 1, M: M, N: W, K: C, TransB: true, Alpha: 1, BF16: bf})
					off := 0
					for i, w := range g.parts {
						if err := ColumnBlock(be, outs[i], y, M, W, off, w); err != nil {
							b.Fatal(err)
						}
						off += w
					}
				}
				unfused()
				fused()
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				reps := max(3, 20/M)
				var tu, tf []float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for _, f := range []struct {
						run func()
						to  *[]float64
					}{{unfused, &tu}, {fused, &tf}} {
						t0 := time.Now()
						for range reps {
							f.run()
						}
						*f.to = append(*f.to, time.Since(t0).Seconds()/float64(reps))
					}
				}
				b.StopTimer()
				if err := be.Sync(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(median(tf)/median(tu), "fused/unfused")
				b.ReportMetric(median(tu)*1e6, "unfused-µs")
			})
		}
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
