package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/argrl/argrl/kernels"
)

// The two ceilings gpu-check states its figures against, measured on the
// device at hand in the same run (docs/gpu.md): the device-to-device copy
// bandwidth and the rate of a large bf16 GEMM through cuBLAS. Each is timed
// as rounds of reps calls after one warm-up call, synchronizing around
// each round; the result is the median round. The inputs are random (a
// GEMM on zeros runs faster than on data).

// CopyRate copies a buffer of the given bytes device to device reps times
// per round and returns the bandwidth counting bytes read plus bytes
// written (2·bytes per copy), in bytes/s.
func (be *Backend) CopyRate(bytes int64, reps, rounds int) (float64, error) {
	n := int(bytes / 4)
	src, dst := be.Alloc(kernels.F32, n), be.Alloc(kernels.F32, n)
	defer be.Free(src)
	defer be.Free(dst)
	// random data in a 64 MiB block, tiled over the buffer on the device
	chunk := min(n, 16<<20)
	be.CopyIn(be.View(src, 0, chunk), randomBF16Pairs(chunk, 1))
	if err := be.Sync(); err != nil {
		return 0, err
	}
	be.mu.Lock()
	for at := chunk; at < n; at += chunk {
		k := min(chunk, n-at)
		if err := be.dev.dtod(src.(*buffer).ptr()+devPtr(4*at), src.(*buffer).ptr(), int64(4*k)); err != nil {
			be.mu.Unlock()
			return 0, fmt.Errorf("%s: fill: %w", be.Name(), err)
		}
	}
	be.mu.Unlock()
	sec, err := be.timeRounds(reps, rounds, func() error {
		return be.dev.dtod(dst.(*buffer).ptr(), src.(*buffer).ptr(), int64(n)*4)
	})
	if err != nil {
		return 0, fmt.Errorf("%s: copy %d bytes: %w", be.Name(), bytes, err)
	}
	return 2 * float64(n) * 4 * float64(reps) / sec, nil
}

// GEMMRate multiplies two random n×n bf16 matrices into f32 (cuBLAS,
// float32 accumulation, the tensor-core GEMM of the bf16 modes) reps times
// per round and returns 2n³ per GEMM over the time, in FLOP/s.
func (be *Backend) GEMMRate(n, reps, rounds int) (float64, error) {
	if n < 2 || n%2 != 0 {
		return 0, fmt.Errorf("GEMMRate: n %d must be even", n)
	}
	half := n * n / 2 // bf16 pairs in one f32 element
	a, b, c := be.Alloc(kernels.F32, half), be.Alloc(kernels.F32, half), be.Alloc(kernels.F32, n*n)
	defer be.Free(a)
	defer be.Free(b)
	defer be.Free(c)
	ha, hb := randomBF16Pairs(half, 2), randomBF16Pairs(half, 3)
	be.CopyIn(a, ha)
	be.CopyIn(b, hb)
	g := gemmCall{M: n, N: n, K: n, Batch: 1, Alpha: 1, A: a.(*buffer).ptr(), B: b.(*buffer).ptr(), C: c.(*buffer).ptr(),
		TypeA: tBF16, TypeB: tBF16, TypeC: tF32, LdA: int64(n), LdB: int64(n), LdC: int64(n)}
	sec, err := be.timeRounds(reps, rounds, func() error { return be.dev.gemm(&g) })
	if err != nil {
		return 0, fmt.Errorf("%s: bf16 GEMM %d³: %w", be.Name(), n, err)
	}
	// a rate is only worth stating for a GEMM that computed the product:
	// 16 entries against float64 (column-major, C[i+j·n] = Σp A[i+p·n]·B[p+j·n])
	hc := make([]float32, n*n)
	be.CopyOut(hc, c)
	if err := be.Sync(); err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(uint64(n), 5))
	for range 16 {
		i, j := r.IntN(n), r.IntN(n)
		var want, scale float64
		for p := range n {
			x, y := float64(bf16At(ha, i+p*n)), float64(bf16At(hb, p+j*n))
			want += x * y
			scale += math.Abs(x * y)
		}
		if got := float64(hc[i+j*n]); math.Abs(got-want) > 1e-3*scale+1e-6 {
			return 0, fmt.Errorf("%s: bf16 GEMM %d³: C[%d,%d] = %g, want %g", be.Name(), n, i, j, got, want)
		}
	}
	return 2 * math.Pow(float64(n), 3) * float64(reps) / sec, nil
}

// bf16At is bf16 element e of pairs packed as randomBF16Pairs makes them.
func bf16At(pairs []float32, e int) float32 {
	w := math.Float32bits(pairs[e/2])
	if e%2 == 1 {
		w >>= 16
	}
	return math.Float32frombits(w << 16)
}

// timeRounds runs f once, then rounds × reps times, and returns the
// median round's seconds.
func (be *Backend) timeRounds(reps, rounds int, f func() error) (float64, error) {
	if err := be.Sync(); err != nil {
		return 0, err
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if err := f(); err != nil {
		return 0, err
	}
	if err := be.dev.sync(); err != nil {
		return 0, err
	}
	var secs []float64
	for range max(rounds, 1) {
		t0 := time.Now()
		for range max(reps, 1) {
			if err := f(); err != nil {
				return 0, err
			}
		}
		if err := be.dev.sync(); err != nil {
			return 0, err
		}
		secs = append(secs, time.Since(t0).Seconds())
	}
	slices.Sort(secs)
	return secs[len(secs)/2], nil
}

// randomBF16Pairs is n float32 words, each holding two bf16 values drawn
// uniformly from [-1, 1) (so the bytes are valid bf16 data, never NaN).
func randomBF16Pairs(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]float32, n)
	for i := range out {
		lo := kernels.BF16FromFloat32(float32(2*r.Float64() - 1))
		hi := kernels.BF16FromFloat32(float32(2*r.Float64() - 1))
		out[i] = math.Float32frombits(uint32(lo) | uint32(hi)<<16)
	}
	return out
}
