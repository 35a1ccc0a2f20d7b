package cuda

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/argrl/argrl/kernels"
)

// Options tune the backend.
type Options struct {
	// BF16TensorCores makes MatMuls whose B operand is BF16 round A to bf16
	// and run a bf16 tensor-core GEMM with float32 accumulation (as PyTorch
	// autocast does). Off, B is widened into float32 scratch and the GEMM is
	// float32 throughout, which matches the CPU backend to float32 rounding.
	// Training a 7B model wants it on (see the package comment).
	// With it, attention at head dims 16, 32, 64 and 128 runs on the
	// tensor-core kernels (attn_tc*.cu: training, packed rows, the paged
	// decode cache read in place) and decoders keep a bf16 KV cache.
	BF16TensorCores bool
	// BF16Activations makes training graphs keep the activations their
	// backward pass reads in bf16 between the passes
	// (kernels.BF16Activations): half the activation memory of a step
	// (see the package comment's memory plan); forward results are
	// unchanged, gradients are those of the rounded activations.
	BF16Activations bool
	// Graphs captures decode steps as graphs and replays them
	// (GraphStep, graph.go). On by default on a GPU (ARGRL_CUDA_GRAPHS=0
	// turns it off); off by default on the emulator, where a graph is
	// the recorded list of launches re-issued one by one.
	Graphs bool
}

// Backend implements kernels.Backend on a device: the GPU in the cuda
// build, or the CPU emulator of the kernels (NewEmulated).
//
// Buffers are device memory from a caching pool; views share their parent's
// memory. F32 and BF16 storage as in the CPU backend: outputs and in-place
// state must be F32 except MatMul's C and RMSNorm's out, which may be
// BF16; read-only inputs may be BF16 (Embedding tables and MatMul's A and
// B natively, others through a temporary f32 copy); Upload copies a
// checkpoint tensor's bytes to the device as they are. Argument checks are
// kernels.ArgCheck, as in every backend (no buffer is read-only: device
// memory is never mapped). Integer side inputs are uploaded per call into
// pooled scratch (small ones through a cache keyed by content), except the
// column blocks' row ids, kept per shape (ops_cols.go). All
// work goes to one stream in issue order; errors are recorded and returned
// by Sync. Methods are safe for concurrent use (they serialize).
type Backend struct {
	mu   sync.Mutex
	dev  device
	opt  Options
	err  error
	pool pool
	ints intCache
	cols map[[4]int]colIDs // column blocks' row ids by shape (ops_cols.go)
	// step graphs (graph.go)
	graphs    map[int]*graphKey
	rec       *recDevice // the step being queued, nil outside GraphStep
	gstats    GraphStats
	uploading bool // an arena copy from pinned memory may still be running
	draws     drawBuf
}

var (
	_ kernels.Backend       = (*Backend)(nil)
	_ kernels.MemReporter   = (*Backend)(nil)
	_ kernels.ColumnBlocker = (*Backend)(nil)
)

func newBackend(dev device, opt Options) *Backend {
	return &Backend{dev: dev, opt: opt, pool: pool{dev: dev, bins: map[int64][]devPtr{}}}
}

// BF16Activations reports Options.BF16Activations (kernels.BF16Activations).
func (be *Backend) BF16Activations() bool { return be.opt.BF16Activations }

// Name is "cuda" on a GPU, "cuda-emu" on the CPU emulator, with the
// registered names' suffix for the precision options: "-bf16tc" (tensor
// cores), "-bf16" (tensor cores and bf16 activations), "-bf16act".
func (be *Backend) Name() string {
	n := be.dev.name()
	switch {
	case be.opt.BF16TensorCores && be.opt.BF16Activations:
		n += "-bf16"
	case be.opt.BF16TensorCores:
		n += "-bf16tc"
	case be.opt.BF16Activations:
		n += "-bf16act"
	}
	return n
}

// Close frees every cached device block and releases the device (the GPU
// context, or the emulator process). Buffers still allocated become
// invalid; later calls record an error. Closing twice is a no-op.
func (be *Backend) Close() error {
	be.mu.Lock()
	defer be.mu.Unlock()
	if _, done := be.dev.(closedDevice); done {
		return nil
	}
	gerr := errors.Join(be.releaseGraphs(), be.releaseDraws())
	for i, e := range be.ints.ent {
		if e.size > 0 {
			be.pool.put(e.p, e.size)
			be.ints.ent[i] = intEntry{}
		}
	}
	for k, c := range be.cols {
		be.pool.put(c.p, c.size)
		delete(be.cols, k)
	}
	err := errors.Join(gerr, be.pool.trim())
	err = errors.Join(err, be.dev.close())
	be.dev = closedDevice{be.dev.name()}
	be.pool.dev = be.dev
	if err != nil {
		return fmt.Errorf("%s: close: %w", be.dev.name(), err)
	}
	return nil
}

// MemStats reports the pool. Bytes are in size classes (what the pool
// reserves for a request).
type MemStats struct {
	InUse, Peak int64 // bytes handed out now, and the most ever at once
	Cached      int64 // bytes freed by the host and kept for reuse
	DevicePeak  int64 // the most bytes ever allocated from the device (≥ Peak)
	Requests    int64 // blocks asked of the pool (buffers, scratch, side inputs)
	Reused      int64 // requests served from the cache
	Allocs      int64 // requests that went to the device
}

// MemStats returns the allocator's counters.
func (be *Backend) MemStats() MemStats {
	be.mu.Lock()
	defer be.mu.Unlock()
	p := &be.pool
	return MemStats{InUse: p.inUse, Peak: p.peak, Cached: p.cached, DevicePeak: p.devPeak,
		Requests: p.gets, Reused: p.reused, Allocs: p.allocs}
}

// DeviceMemory reports the device's free and total bytes, as the driver
// sees them (all processes; an error on the emulator).
func (be *Backend) DeviceMemory() (free, total int64, err error) {
	be.mu.Lock()
	defer be.mu.Unlock()
	return be.dev.memInfo()
}

// MemReport is MemStats().String() (kernels.MemReporter).
func (be *Backend) MemReport() string { return be.MemStats().String() }

// String is one line: "peak 12.3 MiB (device 13.0 MiB), 4567 requests,
// 98.1% reused, 87 device allocations".
func (s MemStats) String() string {
	reuse := 0.0
	if s.Requests > 0 {
		reuse = 100 * float64(s.Reused) / float64(s.Requests)
	}
	return fmt.Sprintf("peak %.1f MiB (device %.1f MiB), %d requests, %.1f%% reused, %d device allocations",
		float64(s.Peak)/(1<<20), float64(s.DevicePeak)/(1<<20), s.Requests, reuse, s.Allocs)
}

// store is one pooled allocation.
type store struct {
	ptr   devPtr
	size  int64 // bytes reserved (pool size class)
	freed bool
}

// buffer is an Alloc'd buffer or a view of one.
type buffer struct {
	st   *store
	off  int // elements
	n    int
	dt   kernels.DType
	view bool
}

func (b *buffer) Len() int             { return b.n }
func (b *buffer) DType() kernels.DType { return b.dt }
func (b *buffer) Live() bool           { return b != nil && b.st != nil && !b.st.freed }
func (b *buffer) ReadOnly() bool       { return false } // device memory is never mapped
func (b *buffer) ptr() devPtr          { return b.st.ptr + devPtr(b.off*esize(b.dt)) }
func (b *buffer) bytes() int64         { return int64(b.n) * int64(esize(b.dt)) }

func esize(dt kernels.DType) int { return dt.Size() }

// fail records err unless an earlier error is pending (be.mu held).
func (be *Backend) fail(err error) {
	if be.err == nil {
		be.err = err
	}
}

// Transfers returns the device's copy and wait counters.
func (be *Backend) Transfers() Transfers {
	be.mu.Lock()
	defer be.mu.Unlock()
	return *be.dev.counters()
}

// Sync waits for all queued work and returns (and clears) the first error.
func (be *Backend) Sync() error {
	be.mu.Lock()
	defer be.mu.Unlock()
	if err := be.dev.sync(); err != nil {
		be.fail(fmt.Errorf("%s: %w", be.dev.name(), err))
	}
	be.uploading = false
	err := be.err
	be.err = nil
	return err
}

func (be *Backend) Alloc(dt kernels.DType, n int) kernels.Buffer {
	o := be.begin("Alloc")
	defer o.end()
	if dt != kernels.F32 && dt != kernels.BF16 {
		be.fail(fmt.Errorf("%s: Alloc: unknown dtype %d", be.Name(), dt))
		dt = kernels.F32
	}
	if n < 0 {
		be.fail(fmt.Errorf("%s: Alloc: negative length %d", be.Name(), n))
		n = 0
	}
	bytes := int64(n) * int64(esize(dt))
	p, size, err := be.pool.get(bytes)
	if err != nil {
		be.fail(fmt.Errorf("%s: Alloc(%v, %d): %w", be.Name(), dt, n, err))
		return &buffer{st: &store{freed: true}, dt: dt}
	}
	if err := be.dev.memset32(p, 0, (bytes+3)/4); err != nil {
		be.fail(fmt.Errorf("%s: Alloc: zero fill: %w", be.Name(), err))
	}
	return &buffer{st: &store{ptr: p, size: size}, n: n, dt: dt}
}

func (be *Backend) Free(b kernels.Buffer) {
	o := be.begin("Free")
	defer o.end()
	cb, ok := b.(*buffer)
	if !ok || cb == nil {
		be.fail(fmt.Errorf("%s: Free: not a %s buffer (%T)", be.Name(), be.Name(), b))
		return
	}
	if cb.view {
		return
	}
	if cb.st.freed {
		be.fail(fmt.Errorf("%s: Free: buffer freed twice", be.Name()))
		return
	}
	cb.st.freed = true
	be.pool.put(cb.st.ptr, cb.st.size)
}

func (be *Backend) View(b kernels.Buffer, off, n int) kernels.Buffer {
	o := be.begin("View")
	defer o.end()
	cb := o.buf("b", b, 0, kernels.Read)
	if cb == nil {
		return &buffer{st: &store{freed: true}, view: true}
	}
	if off < 0 || n < 0 || off+n > cb.n {
		o.Failf("[%d, %d) outside buffer of %d", off, off+n, cb.n)
		return &buffer{st: &store{freed: true}, dt: cb.dt, view: true}
	}
	return &buffer{st: cb.st, off: cb.off + off, n: n, dt: cb.dt, view: true}
}

func f32bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func u16bytes(v []uint16) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}

func i32bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// CopyIn uploads src (converting to bf16 on the host for BF16 buffers, so
// half the bytes cross the bus).
func (be *Backend) CopyIn(dst kernels.Buffer, src []float32) {
	o := be.begin("CopyIn")
	defer o.end()
	d := o.buf("dst", dst, len(src), kernels.WriteAny)
	if o.Bad {
		return
	}
	if o.Exact("dst", "src", d.n, len(src)); o.Bad {
		return
	}
	if d.dt == kernels.F32 {
		o.check(be.dev.htod(d.ptr(), f32bytes(src)))
		return
	}
	h := make([]uint16, len(src))
	for i, x := range src {
		h[i] = kernels.BF16FromFloat32(x)
	}
	o.check(be.dev.htod(d.ptr(), u16bytes(h)))
}

// Upload copies raw (d.Len() little-endian elements of d's dtype) straight
// to the device: one host→device copy of the caller's bytes, no conversion
// and no host copy of the tensor (the driver stages pageable memory, such
// as an mmap of a checkpoint, through its own pinned buffers).
func (be *Backend) Upload(dst kernels.Buffer, raw []byte) {
	o := be.begin("Upload")
	defer o.end()
	d := o.buf("dst", dst, 0, kernels.WriteAny)
	if o.Bad {
		return
	}
	if int64(len(raw)) != d.bytes() {
		o.Failf("raw has %d bytes, dst's %d %v elements need %d", len(raw), d.n, d.dt, d.bytes())
		return
	}
	o.check(be.dev.htod(d.ptr(), raw))
}

// CopyOut downloads src into dst; it waits for the work queued before it.
func (be *Backend) CopyOut(dst []float32, src kernels.Buffer) {
	o := be.begin("CopyOut")
	defer o.end()
	s := o.buf("src", src, len(dst), kernels.Read)
	if o.Bad {
		return
	}
	if o.Exact("src", "dst", s.n, len(dst)); o.Bad {
		return
	}
	if s.dt == kernels.F32 {
		o.check(be.dev.dtoh(f32bytes(dst), s.ptr()))
		return
	}
	h := make([]uint16, len(dst))
	if o.check(be.dev.dtoh(u16bytes(h), s.ptr())) {
		for i, x := range h {
			dst[i] = kernels.Float32FromBF16(x)
		}
	}
}

func (be *Backend) Copy(dst, src kernels.Buffer) {
	o := be.begin("Copy")
	defer o.end()
	d, s := o.buf("dst", dst, 0, kernels.WriteAny), o.buf("src", src, 0, kernels.Read)
	if o.Bad {
		return
	}
	if d.n != s.n || d.dt != s.dt {
		o.Failf("dst is %d×%v, src %d×%v", d.n, d.dt, s.n, s.dt)
		return
	}
	if d.n > 0 {
		o.check(be.dev.dtod(d.ptr(), s.ptr(), d.bytes()))
	}
}

// Convert converts on the device (f32_to_bf16_kernel, bf16_to_f32_kernel).
func (be *Backend) Convert(dst, src kernels.Buffer) {
	o := be.begin("Convert")
	defer o.end()
	d, s := o.buf("dst", dst, 0, kernels.WriteAny), o.buf("src", src, 0, kernels.Read)
	if o.Bad {
		return
	}
	if d.n != s.n {
		o.Failf("dst has %d elements, src %d", d.n, s.n)
		return
	}
	n := int64(d.n)
	switch {
	case n == 0:
	case d.dt == s.dt:
		o.check(be.dev.dtod(d.ptr(), s.ptr(), d.bytes()))
	case d.dt == kernels.BF16:
		o.launch("f32_to_bf16_kernel", grid1(n), block1, pArg(d.ptr()), pArg(s.ptr()), lArg(n))
	default:
		o.launch("bf16_to_f32_kernel", grid1(n), block1, pArg(d.ptr()), pArg(s.ptr()), lArg(n))
	}
}

func (be *Backend) Fill(dst kernels.Buffer, v float32) {
	o := be.begin("Fill")
	defer o.end()
	d := o.buf("dst", dst, 0, kernels.WriteAny)
	if o.Bad || d.n == 0 {
		return
	}
	if d.dt == kernels.F32 {
		o.check(be.dev.memset32(d.ptr(), math.Float32bits(v), int64(d.n)))
	} else {
		o.check(be.dev.memset16(d.ptr(), kernels.BF16FromFloat32(v), int64(d.n)))
	}
}
