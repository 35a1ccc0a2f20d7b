package cuda

import "github.com/argrl/argrl/kernels"

// opCtx holds one op call: the backend lock, the argument checks shared
// with every backend (kernels.ArgCheck: the first failure is recorded and
// the op becomes a no-op), and scratch blocks that go back to the pool when
// the call returns (safe: see pool).
type opCtx struct {
	kernels.ArgCheck
	be  *Backend
	tmp []tmpBlock
}

type tmpBlock struct {
	p    devPtr
	size int64
}

func (be *Backend) begin(op string) *opCtx {
	be.mu.Lock()
	return &opCtx{ArgCheck: kernels.ArgCheck{Backend: be.dev.name(), Op: op, Record: be.fail}, be: be}
}

// end returns the call's scratch to the pool, last taken first: the bins
// are stacks, so they are left as the call found them and the next call
// that asks the same gets the same blocks (a step graph's calls keep their
// addresses whatever ran between two steps: graph.go).
func (o *opCtx) end() {
	for i := len(o.tmp) - 1; i >= 0; i-- {
		o.be.pool.put(o.tmp[i].p, o.tmp[i].size)
	}
	o.be.mu.Unlock()
}

// check records a device error; it reports whether err was nil.
func (o *opCtx) check(err error) bool {
	if err != nil {
		o.Failf("%v", err)
		return false
	}
	return true
}

// buf checks buffer argument name (see kernels.Arg).
func (o *opCtx) buf(name string, b kernels.Buffer, n int, acc kernels.Access) *buffer {
	return kernels.Arg[*buffer](&o.ArgCheck, name, b, n, acc)
}

// out returns a writable F32 buffer's address (outputs and in-place state).
func (o *opCtx) out(name string, b kernels.Buffer, n int) devPtr {
	cb := o.buf(name, b, n, kernels.Write)
	if cb == nil {
		return 0
	}
	return cb.ptr()
}

// in returns the address of a read-only input as f32, widening a BF16
// buffer into scratch.
func (o *opCtx) in(name string, b kernels.Buffer, n int) devPtr {
	cb := o.buf(name, b, n, kernels.Read)
	if cb == nil {
		return 0
	}
	if cb.dt == kernels.F32 || n == 0 {
		return cb.ptr()
	}
	p := o.scratch(int64(n) * 4)
	o.launch("bf16_to_f32_kernel", grid1(int64(n)), block1, pArg(p), pArg(cb.ptr()), lArg(int64(n)))
	return p
}

// scratch returns a pooled block of at least bytes, valid for this call.
func (o *opCtx) scratch(bytes int64) devPtr {
	if o.Bad {
		return 0
	}
	p, size, err := o.be.pool.get(bytes)
	if err != nil {
		o.Failf("scratch: %v", err)
		return 0
	}
	o.tmp = append(o.tmp, tmpBlock{p, size})
	return p
}

// ints uploads a host int32 side input. In a graph step it goes into the
// step's argument arena (graph.go). Small inputs go through a cache
// keyed by content: a decode step passes the same positions and attention
// table to every layer, so one upload serves all of them (the device copy
// is never written, and the stream orders the upload before every use).
func (o *opCtx) ints(v []int32) devPtr {
	if o.Bad {
		return 0
	}
	if r := o.be.rec; r != nil && !r.eager {
		if p, ok := r.arenaInts(v); ok {
			return p
		}
		o.check(r.goEager()) // the arena is full: this step goes eager
	}
	if len(v)*4 > intCacheMaxBytes {
		p := o.scratch(int64(len(v)) * 4)
		if !o.Bad && len(v) > 0 {
			o.check(o.be.dev.htod(p, i32bytes(v)))
		}
		return p
	}
	c := &o.be.ints
	key := string(i32bytes(v))
	for i := range c.ent {
		if c.ent[i].size > 0 && c.ent[i].key == key {
			return c.ent[i].p
		}
	}
	p, size, err := o.be.pool.get(int64(len(v)) * 4)
	if err != nil {
		o.Failf("upload: %v", err)
		return 0
	}
	if len(v) > 0 && !o.check(o.be.dev.htod(p, i32bytes(v))) {
		o.be.pool.put(p, size)
		return 0
	}
	e := &c.ent[c.next]
	if e.size > 0 {
		o.be.pool.put(e.p, e.size)
	}
	*e = intEntry{key: key, p: p, size: size}
	c.next = (c.next + 1) % len(c.ent)
	return p
}

// intCache is a small FIFO of uploaded int32 side inputs.
type intCache struct {
	ent  [16]intEntry
	next int
}

type intEntry struct {
	key  string // the bytes uploaded
	p    devPtr
	size int64 // pool size class; 0 = empty
}

const intCacheMaxBytes = 16 << 10

// launch runs a kernel unless a check failed.
func (o *opCtx) launch(kernel string, grid, block dim3, args ...arg) {
	if o.Bad {
		return
	}
	if err := o.be.dev.launch(kernel, grid, block, args); err != nil {
		o.Failf("%s: %v", kernel, err)
	}
}

// Launch shapes. Elementwise kernels use grid-stride loops, so the grid is
// capped (8192 blocks of 256 threads saturate any current GPU).
var block1 = dim3{256, 1, 1}

func grid1(n int64) dim3 {
	g := (n + 255) / 256
	return dim3{int(min(max(g, 1), 8192)), 1, 1}
}

// rowBlock is the block size for one-block-per-row kernels over rows of
// length c: enough warps to cover the row, at most 1024 threads.
func rowBlock(c int) dim3 {
	return dim3{min(max((c+31)/32*32, 32), 1024), 1, 1}
}
