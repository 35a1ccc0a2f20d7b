package kernels

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackedWeights: x·Wᵀ with bf16 products over a mapped (read-only)
// bf16 W packs W once and gives, call after call, the bits of the same
// product over an Alloc'd copy of W (packed on every call): decode-sized
// products (one row, 64 rows, split over goroutines by columns), a view
// of the mapped buffer, and a large product that uses the pack without
// creating one.
func TestPackedWeights(t *testing.T) {
	c := newCPU(cpuDefault)
	if c.dot == nil {
		t.Skip("no AVX512-BF16: MatMul with BF16 computes in float32 and packs nothing")
	}
	r := rand.New(rand.NewPCG(33, 4))
	const N, K = 1500, 896
	raw := make([]byte, 2*N*K+2*48*K) // W, then 48 more rows: a view at an offset
	for i := 0; i < len(raw); i += 2 {
		binary.LittleEndian.PutUint16(raw[i:], BF16FromFloat32(r.Float32()*2-1))
	}
	mapped, err := c.Map(BF16, raw)
	if err != nil {
		t.Fatal(err)
	}
	own := c.Alloc(BF16, len(raw)/2)
	c.Upload(own, raw)
	for _, w := range []struct {
		off, n int
	}{{0, N}, {48 * K, N}} {
		for _, M := range []int{1, 64, 600} {
			x := make([]float32, M*K)
			for i := range x {
				x[i] = r.Float32()*2 - 1
			}
			xb := c.Alloc(F32, M*K)
			c.CopyIn(xb, x)
			p := MatMulParams{Batch: 1, M: M, N: w.n, K: K, TransB: true, Alpha: 1, BF16: true}
			want, got := c.Alloc(F32, M*w.n), c.Alloc(F32, M*w.n)
			c.MatMul(want, xb, c.View(own, w.off, w.n*K), p)
			for range 2 {
				c.MatMul(got, xb, c.View(mapped, w.off, w.n*K), p)
				if err := c.Sync(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.(*cpuBuf).st.f, want.(*cpuBuf).st.f) {
					t.Fatalf("W at %d, M %d: the packed weight gives other bits", w.off, M)
				}
			}
		}
	}
	st := mapped.(*cpuBuf).st
	if st.packs == nil || len(st.packs.m) != 2 {
		t.Fatalf("want 2 packed operands (W at two offsets), have %v", st.packs)
	}
	if own.(*cpuBuf).st.packs != nil {
		t.Error("a writable weight was packed: it could change under its pack")
	}
	c.Free(mapped)
	if st.packs != nil {
		t.Error("Free kept the packs")
	}
}
