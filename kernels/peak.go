package kernels

import (
	"sync"
	"time"

	"github.com/argrl/argrl/kernels/internal/sgemm"
)

// PeakGFLOPS measures this machine's multiply-add throughput, the ceiling
// of every matmul: register-only loops of 24 independent 512-bit
// multiply-adds (256-bit on AVX2 machines), float32 FMAs or, with bf16,
// bf16 dot products (VDPBF16PS: 64 floating point operations per
// instruction), for about d per run. It returns GFLOP/s (a multiply-add
// counts 2) over the wall-clock time: the best of 3 runs of threads
// goroutines at once, or threads times the best of 3 runs of one goroutine
// when that is more (other load on a shared machine slows the concurrent
// runs; the hardware's peak is per core), or 0 when the machine has no such
// instructions (bf16 without AVX512-BF16, or a build without assembly).
func PeakGFLOPS(bf16 bool, threads int, d time.Duration) float64 {
	if threads > 1 {
		return max(peakRuns(bf16, threads, d), float64(threads)*peakRuns(bf16, 1, d))
	}
	return peakRuns(bf16, threads, d)
}

// peakRuns is the best GFLOP/s of 3 runs of threads goroutines at once.
func peakRuns(bf16 bool, threads int, d time.Duration) float64 {
	if sgemm.Peak(bf16, 1) == 0 || threads < 1 {
		return 0
	}
	// Calibrate the iterations of one run to about d on one thread.
	n := 1 << 16
	for {
		t0 := time.Now()
		sgemm.Peak(bf16, n)
		if el := time.Since(t0); el > d/8 || n > 1<<30 {
			n = int(float64(n) * float64(d) / float64(max(el, time.Microsecond)))
			break
		}
		n *= 4
	}
	best := 0.0
	for range 3 {
		var wg sync.WaitGroup
		flops := make([]int64, threads)
		t0 := time.Now()
		for i := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				flops[i] = sgemm.Peak(bf16, n)
			}()
		}
		wg.Wait()
		el := time.Since(t0).Seconds()
		total := int64(0)
		for _, f := range flops {
			total += f
		}
		best = max(best, float64(total)/el/1e9)
	}
	return best
}
