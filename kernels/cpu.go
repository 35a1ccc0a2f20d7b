package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"

	"github.com/argrl/argrl/kernels/internal/sgemm"
)

// cpuBackend is the pure-Go Backend. Buffers live in Go memory: F32
// buffers as []float32, BF16 buffers as []uint16 converted on access.
//
// BF16 support: CopyIn/CopyOut/Copy/Fill/Upload/View, Embedding's table,
// MatMul's B operand (packed straight from bf16 by the assembly SGEMM,
// widened in bounded column blocks for gonum and OpenBLAS), and the
// logits of LogProbs, LogProbsBackward and Sample (widened a row at a time)
// read BF16 directly; every other read-only input may be BF16 too but is
// converted into a temporary per call (meant for vectors such as norm
// weights and biases; keep activations F32). Outputs and in-place state
// (AdamW's param/m/v, KV caches) must be F32, except MatMul's C and
// RMSNorm's out; a BF16 MatMul A or C goes through F32 temporaries
// (matMulBF16IO); anything else records an error.
//
// Map (Mapper) wraps host memory, such as a read-only mmap of a checkpoint,
// as a read-only buffer without copying; see cpu_mem.go.
//
// Arguments follow the conventions of backend.go (lengths, dtypes, aliasing,
// zero sizes), checked by ArgCheck (check.go) as in every backend.
//
// The backend is safe for concurrent use by several goroutines; each op
// parallelizes itself over GOMAXPROCS goroutines when it is large enough.
type cpuBackend struct {
	cpuBLAS
	mu     sync.Mutex
	err    error
	par    int        // worker goroutines per op
	packMu sync.Mutex // creates the packs of a store (cpu_prepack.go)
}

// cpuBLAS is the matmul of a CPU backend.
type cpuBLAS struct {
	sgemm sgemmFunc
	bgemm bf16GemmFunc // nil: widen a BF16 B in column blocks for sgemm
	// split: cut large products over goroutines in blocks of multiples of
	// alignM rows or alignN columns (see gemm); false when sgemm runs its
	// own goroutines.
	split          bool
	alignM, alignN int
	gonum          bool // sgemm is gonum's (see widenWidth)
	// dot is the bf16 dot-product kernel of MatMuls with BF16 set, nil
	// without AVX512-BF16 (they are then float32 products).
	dot *sgemm.DotKernel
}

// sgemmFunc is blas.Float32.Sgemm (row-major).
type sgemmFunc func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

// bf16GemmFunc is sgemmFunc with B as bfloat16 bits.
type bf16GemmFunc func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int)

var _ Backend = (*cpuBackend)(nil)

// NewCPU returns the pure-Go CPU backend. Its matmul is the packed SGEMM
// with assembly microkernels of kernels/internal/sgemm (AVX-512 or
// AVX2+FMA, chosen at run time), gonum's pure-Go BLAS on other CPUs and
// architectures or with -tags purego, or OpenBLAS when built with
// -tags openblas (see blas_noopenblas.go, blas_openblas.go).
func NewCPU() Backend {
	return newCPU(cpuDefault)
}

func newCPU(m cpuBLAS) *cpuBackend {
	m.dot = sgemm.BestDot()
	return &cpuBackend{cpuBLAS: m, par: runtime.GOMAXPROCS(0)}
}

func (c *cpuBackend) Name() string { return "cpu/" + blasName }

// Close does nothing: buffers are Go memory (or caller mappings).
func (c *cpuBackend) Close() error { return nil }

// BF16Products: MatMuls with BF16 set are bf16 products on CPUs with
// AVX512-BF16 (see BF16Products).
func (c *cpuBackend) BF16Products() bool { return c.dot != nil }

func (c *cpuBackend) fail(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

func (c *cpuBackend) Sync() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

// chk is the argument checks of one CPU op call (ArgCheck, check.go) with
// accessors that return the checked buffers' elements.
type chk struct {
	ArgCheck
	c *cpuBackend
}

func (c *cpuBackend) check(op string) chk {
	return chk{ArgCheck: ArgCheck{Backend: "cpu", Op: op, Record: c.fail}, c: c}
}

// buf checks buffer argument name (see Arg).
func (k *chk) buf(name string, b Buffer, n int, acc Access) *cpuBuf {
	return Arg[*cpuBuf](&k.ArgCheck, name, b, n, acc)
}

// f32 returns the first n elements of a writable F32 buffer (outputs, state).
func (k *chk) f32(name string, b Buffer, n int) []float32 {
	cb := k.buf(name, b, n, Write)
	if cb == nil {
		return nil
	}
	return cb.st.f[cb.off : cb.off+n]
}

// f32in returns the first n elements of a read-only F32 input (MatMul's A
// once matMulBF16IO has widened a BF16 one); a BF16 buffer fails.
func (k *chk) f32in(name string, b Buffer, n int) []float32 {
	cb := k.buf(name, b, n, Read)
	if cb == nil {
		return nil
	}
	if cb.dt != F32 {
		k.Failf("%s must be f32 here, is %v", name, cb.dt)
		return nil
	}
	return cb.st.f[cb.off : cb.off+n]
}

// in returns the first n elements of a read-only input as float32,
// converting a BF16 buffer into a temporary.
func (k *chk) in(name string, b Buffer, n int) []float32 {
	cb := k.buf(name, b, n, Read)
	if cb == nil {
		return nil
	}
	if cb.dt == F32 {
		return cb.st.f[cb.off : cb.off+n]
	}
	out := make([]float32, n)
	for i, h := range cb.st.h[cb.off : cb.off+n] {
		out[i] = Float32FromBF16(h)
	}
	return out
}

// parallelFor runs fn over [0, n) split into at most c.par contiguous
// chunks of at least grain items, the last chunk on the calling goroutine.
func (c *cpuBackend) parallelFor(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunks := min(c.par, (n+grain-1)/max(grain, 1))
	if chunks <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + chunks - 1) / chunks
	for lo := step; lo < n; lo += step {
		wg.Add(1)
		go func(lo int) {
			defer wg.Done()
			fn(lo, min(lo+step, n))
		}(lo)
	}
	fn(0, min(step, n))
	wg.Wait()
}

// parallelDo runs fn(i) for i in [0, n) on up to c.par goroutines that take
// items in order from a shared counter (for items of uneven cost).
func (c *cpuBackend) parallelDo(n int, fn func(i int)) {
	w := min(c.par, n)
	if w <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	for g := 1; g < w; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
}

// scratch is a pool of float32 work arrays.
var scratch sync.Pool

func getScratch(n int) *[]float32 {
	if p, ok := scratch.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n)
	return &s
}

func putScratch(p *[]float32) { scratch.Put(p) }
