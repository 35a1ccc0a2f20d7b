package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Backend-level tests of the matmul path in this build (the packed
// assembly SGEMM where the machine has it, else gonum): strided and
// broadcast batches, every transpose, alpha/beta, BF16 B, sizes that take
// the batch-parallel and the split paths of cpu_matmul.go, against
// RefMatMul; and row invariance (a row of x·Wᵀ does not depend on the
// other rows), which rollout's batch-composition determinism relies on.

func TestMatMulStridedBatches(t *testing.T) {
	be := NewCPU()
	t.Logf("backend %s", be.Name())
	r := rand.New(rand.NewPCG(21, 22))
	type tc struct {
		batch, m, n, k int
		sa, sb, sc     int // extra stride beyond the item size; -1 broadcasts (0 stride)
		dt             DType
	}
	var cases []tc
	for _, s := range [][3]int{{1, 1, 1}, {5, 7, 3}, {17, 33, 9}, {8, 48, 64}, {9, 49, 65}, {64, 100, 40}} {
		cases = append(cases, tc{3, s[0], s[1], s[2], 0, 0, 0, F32}, tc{4, s[0], s[1], s[2], 5, 3, 7, F32},
			tc{3, s[0], s[1], s[2], 0, -1, 0, F32}, tc{2, s[0], s[1], s[2], -1, 2, 1, BF16})
	}
	cases = append(cases,
		tc{2, 200, 130, 100, 3, 0, 0, F32}, // ≥ 2²¹: split by rows
		tc{2, 70, 513, 127, 0, -1, 9, F32}, // split by columns, shared B
		tc{1, 130, 129, 131, 0, 0, 0, BF16},
		tc{8, 63, 65, 64, 1, 1, 1, F32}, // batch-parallel path
	)
	n := 0
	for _, c := range cases {
		for tr := 0; tr < 4; tr++ {
			n++
			ab := [][2]float32{{1, 0}, {0.5, 0.25}, {-2, 1}}[n%3]
			p := MatMulParams{Batch: c.batch, M: c.m, N: c.n, K: c.k, TransA: tr&1 != 0, TransB: tr&2 != 0, Alpha: ab[0], Beta: ab[1]}
			stride := func(extra, size int) int {
				if extra < 0 {
					return 0
				}
				return size + extra
			}
			p.StrideA, p.StrideB, p.StrideC = stride(c.sa, c.m*c.k), stride(c.sb, c.k*c.n), stride(c.sc, c.m*c.n)
			span := func(s, size int) int { return (c.batch-1)*s + size }
			a, b, cc := make([]float64, span(p.StrideA, c.m*c.k)), make([]float64, span(p.StrideB, c.k*c.n)), make([]float64, span(p.StrideC, c.m*c.n))
			for _, v := range [][]float64{a, b, cc} {
				for i := range v {
					v[i] = r.Float64()*2 - 1
				}
			}
			if c.dt == BF16 { // the reference sees the rounded weights
				for i := range b {
					b[i] = float64(Float32FromBF16(BF16FromFloat32(float32(b[i]))))
				}
			}
			ab32 := func(v []float64, dt DType) Buffer {
				x := make([]float32, len(v))
				for i := range v {
					x[i] = float32(v[i])
				}
				buf := be.Alloc(dt, len(v))
				be.CopyIn(buf, x)
				return buf
			}
			A, B, C := ab32(a, F32), ab32(b, c.dt), ab32(cc, F32)
			for i := range a { // the reference sees float32 inputs
				a[i] = float64(float32(a[i]))
			}
			for i := range cc {
				cc[i] = float64(float32(cc[i]))
			}
			be.MatMul(C, A, B, p)
			if err := be.Sync(); err != nil {
				t.Fatalf("%+v: %v", p, err)
			}
			got := make([]float32, len(cc))
			be.CopyOut(got, C)
			RefMatMul(cc, a, b, p)
			for i := range got {
				if d := math.Abs(float64(got[i]) - cc[i]); d > 1e-4*math.Sqrt(float64(c.k))+1e-4*math.Abs(cc[i]) {
					t.Fatalf("%+v dt=%v: c[%d] = %v, want %v", p, c.dt, i, got[i], cc[i])
				}
			}
		}
	}
}

// TestMatMulRowInvariance: each row of y = x·Wᵀ (and of x·W) is
// bit-identical whether computed alone, in a batch of 64 rows (split over
// goroutines when large) or as rows of a batched call.
func TestMatMulRowInvariance(t *testing.T) {
	if blasName == "openblas" {
		t.Skip("OpenBLAS's kernels depend on the shape; rollout relaxes its checks for it")
	}
	be := NewCPU()
	r := rand.New(rand.NewPCG(23, 24))
	const M, N, K = 64, 896, 320
	up := func(n int) (Buffer, []float32) {
		x := make([]float32, n)
		for i := range x {
			x[i] = r.Float32()*2 - 1
		}
		b := be.Alloc(F32, n)
		be.CopyIn(b, x)
		return b, x
	}
	x, _ := up(M * K)
	w, _ := up(N * K)
	for _, tb := range []bool{true, false} {
		all := be.Alloc(F32, M*N)
		be.MatMul(all, x, w, MatMulParams{Batch: 1, M: M, N: N, K: K, TransB: tb, Alpha: 1})
		want := make([]float32, M*N)
		be.CopyOut(want, all)
		for _, rows := range [][2]int{{0, 1}, {5, 1}, {63, 1}, {3, 17}, {8, 40}} {
			i0, m := rows[0], rows[1]
			y := be.Alloc(F32, m*N)
			be.MatMul(y, be.View(x, i0*K, m*K), w, MatMulParams{Batch: 1, M: m, N: N, K: K, TransB: tb, Alpha: 1})
			got := make([]float32, m*N)
			be.CopyOut(got, y)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i0*N+i]) {
					t.Fatalf("%s TransB=%v rows %v: y[%d] = %v, in the 64-row product %v", be.Name(), tb, rows, i, got[i], want[i0*N+i])
				}
			}
		}
		// As a batch of 4 items of 16 rows sharing W (StrideB = 0).
		yb := be.Alloc(F32, M*N)
		be.MatMul(yb, x, w, MatMulParams{Batch: 4, M: M / 4, N: N, K: K, TransB: tb, Alpha: 1, StrideA: M / 4 * K, StrideC: M / 4 * N})
		got := make([]float32, M*N)
		be.CopyOut(got, yb)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s TransB=%v batched: y[%d] = %v, single call %v", be.Name(), tb, i, got[i], want[i])
			}
		}
	}
	if err := be.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultBLASName(t *testing.T) {
	if blasName == "" || NewCPU().Name() != fmt.Sprintf("cpu/%s", blasName) {
		t.Errorf("Name %q, blasName %q", NewCPU().Name(), blasName)
	}
	t.Logf("backend %s", NewCPU().Name())
}
