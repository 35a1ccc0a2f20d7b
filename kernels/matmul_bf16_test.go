package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// MatMul with a BF16 B must give, bit for bit, the product with B widened
// to F32 first, in every configuration this build has: the assembly SGEMM
// packing bf16 itself, and the widening in column blocks that gonum and
// OpenBLAS use (with a block small enough to cut B into many blocks), over
// edge tiles, K past the KC block, the row and column splits over
// goroutines (at several goroutine counts), the batch-parallel path, and
// batches with StrideB = 0 and > 0.
//
// OpenBLAS is the exception: its result for an element of C depends on the
// number of columns of the call (measured: one 64×1000×1024 product and the
// same product in calls of 512 columns differ in 4% of the elements), so
// when B is cut into blocks its bf16 product only agrees to float32
// rounding; it is bit-identical while B fits in one block (16 MiB).

// bf16Config is one way of running a BF16 B. gonum's x·Wᵀ sums each dot
// product in an order that depends on the address of W's row modulo 16
// bytes (its SSE loop starts at an aligned element), and the widened rows
// sit where a widening of all of B into a fresh array would put them; so
// for gonum the F32 reference keeps every batch item 16-byte aligned
// (aligned), as such a widened copy is.
type bf16Config struct {
	name    string
	be      *cpuBackend
	aligned bool
}

func bf16Configs() []bf16Config {
	cs := []bf16Config{{"default/" + blasName, newCPU(cpuDefault), cpuDefault.gonum}}
	if cpuDefault.bgemm != nil { // the assembly SGEMM with block widening, and gonum as in -tags purego
		asm := cpuDefault
		asm.bgemm = nil
		cs = append(cs, bf16Config{"widened/" + blasName, newCPU(asm), false})
		cs = append(cs, bf16Config{"widened/gonum", newCPU(goBLAS{}.config()), true})
	}
	return cs
}

type bf16Shape struct {
	batch, m, n, k int
	sb             int // StrideB: -1 dense, 0 broadcast
	ta, tb         bool
	alpha, beta    float32
}

func bf16Shapes() []bf16Shape {
	var s []bf16Shape
	n := 0
	add := func(batch, m, nn, k, sb int) {
		for tr := 0; tr < 4; tr++ {
			n++
			ab := [][2]float32{{1, 0}, {0.5, 0.25}, {-2, 1}, {1, 1}}[n%4]
			s = append(s, bf16Shape{batch, m, nn, k, sb, tr&1 != 0, tr&2 != 0, ab[0], ab[1]})
		}
	}
	for _, d := range [][3]int{{1, 1, 1}, {5, 7, 3}, {6, 16, 8}, {7, 17, 9}, {8, 48, 64}, {9, 49, 65}, {17, 33, 257}, {33, 65, 700}} {
		add(1, d[0], d[1], d[2], -1)
	}
	add(1, 200, 130, 100, -1) // ≥ 2²¹: split by rows
	add(1, 130, 129, 131, -1)
	add(1, 70, 513, 127, -1) // split by columns
	add(1, 40, 500, 110, -1)
	add(1, 193, 97, 300, -1) // past MC, K past KC
	add(1, 64, 3100, 16, -1) // past NC, split by columns
	add(3, 9, 17, 13, 0)     // batch-parallel, broadcast B
	add(4, 5, 33, 20, -1)    // batch-parallel, B per item
	add(2, 150, 140, 110, 0) // large items, broadcast B
	add(2, 60, 300, 130, -1) // large items, B per item
	add(3, 7, 520, 300, 0)   // column split per item, broadcast
	return s
}

func TestMatMulBF16BitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	shapes := bf16Shapes()
	if testing.Short() {
		shapes = shapes[len(shapes)-24:]
	}
	defer func(n int) { widenBlockElems = n }(widenBlockElems)
	for _, cfg := range bf16Configs() {
		for _, par := range []int{1, 3, 8} {
			for _, block := range []int{1 << 22, 2000} {
				if cfg.be.bgemm != nil && block != 1<<22 {
					continue // no widening to block
				}
				widenBlockElems = block
				be := cfg.be
				be.par = par
				for _, s := range shapes {
					exact := blasName != "openblas" || s.k*s.n <= block
					checkBF16Shape(t, fmt.Sprintf("%s par=%d block=%d", cfg.name, par, block), be, r, s, cfg.aligned, exact)
				}
			}
		}
	}
}

// checkBF16Shape runs s with B as BF16 and as its widened F32 and requires
// equal bits in all of C (float32 rounding unless exact).
func checkBF16Shape(t *testing.T, what string, be *cpuBackend, r *rand.Rand, s bf16Shape, aligned, exact bool) {
	t.Helper()
	p := MatMulParams{Batch: s.batch, M: s.m, N: s.n, K: s.k, TransA: s.ta, TransB: s.tb, Alpha: s.alpha, Beta: s.beta,
		StrideA: s.m*s.k + 3, StrideB: s.k*s.n + 5, StrideC: s.m*s.n + 1}
	if aligned {
		p.StrideB = (s.k*s.n+3)/4*4 + 4
	}
	if s.sb == 0 {
		p.StrideB = 0
	}
	span := func(stride, size int) int { return (p.Batch-1)*stride + size }
	rnd := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.Float64()*2 - 1)
		}
		return x
	}
	a, bv, c0 := rnd(span(p.StrideA, s.m*s.k)), rnd(span(p.StrideB, s.k*s.n)), rnd(span(p.StrideC, s.m*s.n))
	for i, v := range bv {
		bv[i] = Float32FromBF16(BF16FromFloat32(v))
	}
	up := func(x []float32, dt DType) Buffer {
		buf := be.Alloc(dt, len(x))
		be.CopyIn(buf, x)
		return buf
	}
	A, Bh, Bf := up(a, F32), up(bv, BF16), up(bv, F32)
	Ch, Cf := up(c0, F32), up(c0, F32)
	be.MatMul(Ch, A, Bh, p)
	be.MatMul(Cf, A, Bf, p)
	if err := be.Sync(); err != nil {
		t.Fatalf("%s %+v: %v", what, p, err)
	}
	got, want := make([]float32, len(c0)), make([]float32, len(c0))
	be.CopyOut(got, Ch)
	be.CopyOut(want, Cf)
	for i := range got {
		if exact && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s %+v: c[%d] = %v with B bf16, %v with B widened to f32", what, p, i, got[i], want[i])
		}
		if d := math.Abs(float64(got[i]) - float64(want[i])); d > 1e-5*math.Sqrt(float64(s.k))*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("%s %+v: c[%d] = %v with B bf16, %v with B widened to f32 (beyond float32 rounding)", what, p, i, got[i], want[i])
		}
	}
}

// TestMatMulBF16Memory: a MatMul with a BF16 B allocates far less than a
// float32 copy of B (which the lm_head of a 7B model would make 2.2 GB):
// at most half of it, in every configuration, both transposes, with the
// scratch pools emptied first (two GCs) so that nothing is reused.
func TestMatMulBF16Memory(t *testing.T) {
	const M, N, K = 4, 8192, 2048
	widened := uint64(4 * N * K)
	for _, cfg := range bf16Configs() {
		be := cfg.be
		be.par = 2
		x, w, y := be.Alloc(F32, M*K), be.Alloc(BF16, N*K), be.Alloc(F32, M*N)
		be.CopyIn(x, randF32(M*K))
		be.CopyIn(w, randF32(N*K))
		for _, tb := range []bool{true, false} {
			p := MatMulParams{Batch: 1, M: M, N: N, K: K, TransB: tb, Alpha: 1}
			runtime.GC()
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			be.MatMul(y, x, w, p)
			runtime.ReadMemStats(&m1)
			if err := be.Sync(); err != nil {
				t.Fatal(err)
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > widened/2 {
				t.Errorf("%s TransB=%v: MatMul allocated %d bytes; a widened copy of B is %d", cfg.name, tb, a, widened)
			}
			t.Logf("%s TransB=%v: %d bytes allocated (a widened B: %d)", cfg.name, tb, m1.TotalAlloc-m0.TotalAlloc, widened)
		}
	}
}
