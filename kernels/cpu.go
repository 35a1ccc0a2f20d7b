package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
)

// cpuBackend is the pure-Go Backend. Buffers live in Go memory: F32
// buffers as []float32, BF16 buffers as []uint16 converted on access.
//
// BF16 support: CopyIn/CopyOut/Copy/Fill/View, Embedding's table and
// MatMul's B operand read BF16 directly; every other read-only input may be
// BF16 too but is converted into a temporary per call (slow; keep
// activations F32). Outputs, MatMul's A and C, and in-place state (AdamW's
// param/m/v, KV caches) must be F32; anything else records an error.
//
// Ops use the first n elements of their buffers: a buffer longer than an op
// needs is fine, a shorter one records an error. CopyIn, CopyOut and Copy
// need equal lengths (use View for part of a buffer). Elementwise ops (AXPBY,
// Mul, AddBias, SwiGLU, Dropout, RoPE, RMSNorm's out) may write in place over
// an input; MatMul, Attention and the backward ops must not alias.
//
// The backend is safe for concurrent use by several goroutines; each op
// parallelizes itself over GOMAXPROCS goroutines when it is large enough.
type cpuBackend struct {
	mu    sync.Mutex
	err   error
	sgemm sgemmFunc
	par   int // worker goroutines per op
}

// sgemmFunc is blas.Float32.Sgemm (row-major).
type sgemmFunc func(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)

var _ Backend = (*cpuBackend)(nil)

// NewCPU returns the pure-Go CPU backend. Its matmul is the packed SGEMM
// with assembly microkernels of kernels/internal/sgemm (AVX-512 or
// AVX2+FMA, chosen at run time), gonum's pure-Go BLAS on other CPUs and
// architectures or with -tags purego, or OpenBLAS when built with
// -tags openblas (see blas_noopenblas.go, blas_openblas.go).
func NewCPU() Backend {
	return newCPU(defaultBLAS.Sgemm)
}

func newCPU(f sgemmFunc) *cpuBackend {
	return &cpuBackend{sgemm: f, par: runtime.GOMAXPROCS(0)}
}

func (c *cpuBackend) Name() string { return "cpu/" + blasName }

// cpuStore is the memory of one Alloc.
type cpuStore struct {
	f     []float32 // F32
	h     []uint16  // BF16
	freed bool
}

// cpuBuf is an Alloc'd buffer or a view [off, off+n) of one.
type cpuBuf struct {
	st     *cpuStore
	off, n int
	dt     DType
	view   bool
}

func (b *cpuBuf) Len() int     { return b.n }
func (b *cpuBuf) DType() DType { return b.dt }

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

func (c *cpuBackend) Alloc(dt DType, n int) Buffer {
	if n < 0 {
		c.fail(fmt.Errorf("cpu: Alloc: negative length %d", n))
		n = 0
	}
	st := &cpuStore{}
	switch dt {
	case F32:
		st.f = make([]float32, n)
	case BF16:
		st.h = make([]uint16, n)
	default:
		c.fail(fmt.Errorf("cpu: Alloc: unknown dtype %d", dt))
		dt = F32
		st.f = make([]float32, n)
	}
	return &cpuBuf{st: st, n: n, dt: dt}
}

func (c *cpuBackend) Free(b Buffer) {
	cb, ok := b.(*cpuBuf)
	if !ok || cb == nil {
		c.fail(fmt.Errorf("cpu: Free: not a cpu buffer (%T)", b))
		return
	}
	if cb.view {
		return
	}
	cb.st.freed = true
	cb.st.f, cb.st.h = nil, nil
}

func (c *cpuBackend) View(b Buffer, off, n int) Buffer {
	cb := c.buf("View", "b", b)
	if cb == nil {
		return &cpuBuf{st: &cpuStore{freed: true}, dt: F32, view: true}
	}
	if off < 0 || n < 0 || off+n > cb.n {
		c.fail(fmt.Errorf("cpu: View: [%d, %d) outside buffer of %d", off, off+n, cb.n))
		return &cpuBuf{st: &cpuStore{freed: true}, dt: cb.dt, view: true}
	}
	return &cpuBuf{st: cb.st, off: cb.off + off, n: n, dt: cb.dt, view: true}
}

// buf checks that b is a live cpu buffer.
func (c *cpuBackend) buf(op, name string, b Buffer) *cpuBuf {
	cb, ok := b.(*cpuBuf)
	if !ok || cb == nil {
		c.fail(fmt.Errorf("cpu: %s: %s is not a cpu buffer (%T)", op, name, b))
		return nil
	}
	if cb.st.freed {
		c.fail(fmt.Errorf("cpu: %s: %s was freed", op, name))
		return nil
	}
	return cb
}

// chk collects the argument checks of one op call; after the checks, bad
// reports whether any failed (the first failure is recorded on the backend).
type chk struct {
	c   *cpuBackend
	op  string
	bad bool
}

func (k *chk) failf(format string, a ...any) {
	if !k.bad {
		k.c.fail(fmt.Errorf("cpu: %s: %s", k.op, fmt.Sprintf(format, a...)))
	}
	k.bad = true
}

// dims fails unless every value is ≥ 0.
func (k *chk) dims(names string, v ...int) {
	for _, x := range v {
		if x < 0 {
			k.failf("negative dimension in %s = %v", names, v)
			return
		}
	}
}

func (k *chk) get(name string, b Buffer, n int) *cpuBuf {
	if k.bad {
		return nil
	}
	cb := k.c.buf(k.op, name, b)
	if cb == nil {
		k.bad = true
		return nil
	}
	if cb.n < n {
		k.failf("%s has %d elements, needs %d", name, cb.n, n)
		return nil
	}
	return cb
}

// f32 returns the first n elements of an F32 buffer (outputs, state).
func (k *chk) f32(name string, b Buffer, n int) []float32 {
	cb := k.get(name, b, n)
	if cb == nil {
		return nil
	}
	if cb.dt != F32 {
		k.failf("%s must be f32, is %v", name, cb.dt)
		return nil
	}
	return cb.st.f[cb.off : cb.off+n]
}

// in returns the first n elements of a read-only input as float32,
// converting a BF16 buffer into a temporary.
func (k *chk) in(name string, b Buffer, n int) []float32 {
	cb := k.get(name, b, n)
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

func (c *cpuBackend) CopyIn(dst Buffer, src []float32) {
	k := chk{c: c, op: "CopyIn"}
	cb := k.get("dst", dst, len(src))
	if k.bad {
		return
	}
	if cb.n != len(src) {
		k.failf("dst has %d elements, src %d", cb.n, len(src))
		return
	}
	if cb.dt == F32 {
		copy(cb.st.f[cb.off:], src)
		return
	}
	h := cb.st.h[cb.off : cb.off+cb.n]
	for i, x := range src {
		h[i] = BF16FromFloat32(x)
	}
}

func (c *cpuBackend) CopyOut(dst []float32, src Buffer) {
	k := chk{c: c, op: "CopyOut"}
	cb := k.get("src", src, len(dst))
	if k.bad {
		return
	}
	if cb.n != len(dst) {
		k.failf("src has %d elements, dst %d", cb.n, len(dst))
		return
	}
	if cb.dt == F32 {
		copy(dst, cb.st.f[cb.off:cb.off+cb.n])
		return
	}
	for i, h := range cb.st.h[cb.off : cb.off+cb.n] {
		dst[i] = Float32FromBF16(h)
	}
}

func (c *cpuBackend) Copy(dst, src Buffer) {
	k := chk{c: c, op: "Copy"}
	d := k.get("dst", dst, 0)
	s := k.get("src", src, 0)
	if k.bad {
		return
	}
	if d.n != s.n || d.dt != s.dt {
		k.failf("dst is %d×%v, src %d×%v", d.n, d.dt, s.n, s.dt)
		return
	}
	if d.dt == F32 {
		copy(d.st.f[d.off:d.off+d.n], s.st.f[s.off:s.off+s.n])
	} else {
		copy(d.st.h[d.off:d.off+d.n], s.st.h[s.off:s.off+s.n])
	}
}

func (c *cpuBackend) Fill(dst Buffer, v float32) {
	k := chk{c: c, op: "Fill"}
	d := k.get("dst", dst, 0)
	if k.bad {
		return
	}
	if d.dt == F32 {
		f := d.st.f[d.off : d.off+d.n]
		for i := range f {
			f[i] = v
		}
		return
	}
	h, hv := d.st.h[d.off:d.off+d.n], BF16FromFloat32(v)
	for i := range h {
		h[i] = hv
	}
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
