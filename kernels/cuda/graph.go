package cuda

import (
	"errors"
	"fmt"
	"slices"
)

// Step graphs: a decode step's launches captured once per key (the model's
// batch-size bucket) and replayed as one graph launch (GraphStep).
//
// A step runs its ops as usual, but the device calls they make are queued
// (recDevice) instead of issued, and their integer side inputs (o.ints:
// positions, key lengths, page tables) go into the key's argument arena,
// at offsets fixed by the order of the uploads, written into a pinned host
// buffer. At the end of the step the arena goes to the device in one
// host→device copy; then, if the queued calls are exactly those the key's
// graph holds (same kernels, grids, scalar arguments and addresses:
// activations live in the model's arenas, scratch comes back from the pool
// at the same addresses, side inputs at the same arena offsets), the graph
// is launched; otherwise the calls are captured into a new graph (stream
// capture on a GPU; on the emulator the graph is the recorded list,
// re-issued call by call), which is then launched. A replayed graph thus
// does exactly what the eager calls of this step would do, so results are
// bit-identical to eager launches. A step whose calls cannot be queued (a
// copy to or from the host, a block freed to the device, a
// synchronization) is issued eagerly from that call on: the fallback.
// cuBLAS and cuBLASLt products are queued like launches.
//
// The host-side work of the ops (argument checks, building the side
// inputs) still runs every step; what a replay saves is the launches: one
// cuGraphLaunch instead of one cuLaunchKernel (a cgo call, a thread lock
// and a driver call) per kernel, about 1,150 per step at 7B, and one
// upload instead of several.

// graphDevice is implemented by devices that can capture and replay.
type graphDevice interface {
	// beginCapture starts capturing the calls that follow (not run).
	beginCapture() error
	// endCapture ends the capture and instantiates its graph.
	endCapture() (graphHandle, error)
	launchGraph(g graphHandle) error
	destroyGraph(g graphHandle) error
	// hostAlloc returns page-locked host memory (cuMemHostAlloc), from
	// which host→device copies run without staging.
	hostAlloc(bytes int) ([]byte, error)
	hostFree(b []byte) error
	// canPin reports whether the driver has the graph and pinned-memory
	// entry points (drv_graphs_available); without them steps run eagerly
	// and copies go from ordinary memory
	canPin() bool
}

// graphHandle is an instantiated graph (a CUgraphExec, or the emulator's
// index of a recorded list).
type graphHandle uint64

// devCall is one queued device operation.
type devCall struct {
	op          byte // 'k' launch, 'g' gemm, 'l' gemmLt, 'c' device copy, '4' memset32, '2' memset16
	kernel      string
	grid, block dim3
	args        []arg
	gemm        gemmCall
	dst, src    devPtr
	n           int64
	v           uint32
}

func (c *devCall) issue(d device) error {
	switch c.op {
	case 'k':
		return d.launch(c.kernel, c.grid, c.block, c.args)
	case 'g':
		g := c.gemm
		return d.gemm(&g)
	case 'l':
		g := c.gemm
		return d.gemmLt(&g)
	case 'c':
		return d.dtod(c.dst, c.src, c.n)
	case '4':
		return d.memset32(c.dst, c.v, c.n)
	case '2':
		return d.memset16(c.dst, uint16(c.v), c.n)
	}
	return fmt.Errorf("internal error: queued device call %q", c.op)
}

func (c *devCall) equal(o *devCall) bool {
	return c.op == o.op && c.kernel == o.kernel && c.grid == o.grid && c.block == o.block && slices.Equal(c.args, o.args) &&
		c.gemm == o.gemm && c.dst == o.dst && c.src == o.src && c.n == o.n && c.v == o.v
}

// GraphStats count GraphStep's outcomes.
type GraphStats struct {
	Captures int // graphs captured (first step of a key, or calls that changed)
	Replays  int // steps that launched their key's graph as it was
	Eager    int // steps issued call by call (not capturable, or capture failed)
	Calls    int // device calls in the steps run as graphs (captured or replayed)
	LtCalls  int // of which cuBLASLt products (gemmLt)
	// CaptureErr is the last failed capture's error (the step then ran
	// eagerly; after 3 failures a key stays eager).
	CaptureErr string
}

// graphKey is one captured step: its graph, the calls it holds, and its
// argument arena (device block and its pinned host mirror).
type graphKey struct {
	exec     graphHandle
	has      bool
	calls    []devCall
	arena    devPtr
	host     []byte
	used     int            // bytes of the arena this step wrote
	need     int            // bytes a step needed beyond the arena (grow before the next)
	contents map[string]int // this step's side inputs → arena offset
	failed   int            // failed captures (after 3 the key stays eager)
}

const arenaMinBytes = 64 << 10

// SetGraphs turns step graphs on or off (Options.Graphs); turning them off
// releases the captured graphs and arenas.
func (be *Backend) SetGraphs(on bool) error {
	be.mu.Lock()
	defer be.mu.Unlock()
	be.opt.Graphs = on
	if on {
		return nil
	}
	return be.releaseGraphs()
}

// StepGraphsOn reports whether GraphStep captures and replays: graphs on
// (Options.Graphs) and a device (and driver) that has them.
func (be *Backend) StepGraphsOn() bool {
	be.mu.Lock()
	defer be.mu.Unlock()
	gd, ok := be.dev.(graphDevice)
	return ok && be.opt.Graphs && gd.canPin()
}

// GraphStats returns the step-graph counters.
func (be *Backend) GraphStats() GraphStats {
	be.mu.Lock()
	defer be.mu.Unlock()
	return be.gstats
}

// releaseGraphs destroys every graph and frees the arenas (be.mu held).
func (be *Backend) releaseGraphs() error {
	gd, _ := be.dev.(graphDevice)
	var errs []error
	for k, g := range be.graphs {
		if g.has && gd != nil {
			errs = append(errs, gd.destroyGraph(g.exec))
		}
		if g.arena != 0 {
			be.pool.put(g.arena, sizeClass(int64(len(g.host))))
		}
		if g.host != nil && gd != nil {
			errs = append(errs, gd.hostFree(g.host))
		}
		delete(be.graphs, k)
	}
	return errors.Join(errs...)
}

// GraphStep runs fn, which issues one step's ops on this backend, as the
// graph of key (kernels.StepGraphs): the first step of a key captures, the
// next replay when their calls are the same (see the comment above). fn
// must not use the backend from other goroutines meanwhile. Without
// Options.Graphs, or on a device without graphs, fn just runs. Errors are
// recorded as every op's and returned by Sync.
func (be *Backend) GraphStep(key int, fn func()) {
	be.mu.Lock()
	gd, ok := be.dev.(graphDevice)
	if !ok || !be.opt.Graphs || be.rec != nil || !gd.canPin() {
		be.mu.Unlock()
		fn()
		return
	}
	g, err := be.graphKey(key, gd)
	if err != nil {
		be.fail(fmt.Errorf("%s: graph step %d: %w", be.dev.name(), key, err))
		be.mu.Unlock()
		fn()
		return
	}
	r := &recDevice{device: be.dev, be: be, key: key, g: g}
	// the pool's device too: a cached block it frees to the device (on an
	// allocation failure) may be read by a queued call
	be.rec, be.dev, be.pool.dev = r, r, r
	be.mu.Unlock()
	defer func() {
		be.mu.Lock()
		defer be.mu.Unlock()
		be.rec, be.dev, be.pool.dev = nil, r.device, r.device
		if err := be.finishStep(r, gd); err != nil {
			be.fail(fmt.Errorf("%s: graph step %d: %w", be.dev.name(), key, err))
		}
	}()
	fn()
}

// graphKey returns key's state, its arena grown as the last step needed
// (be.mu held). The pinned host arena may still be the source of the last
// step's copy: wait for it before the step writes it again.
func (be *Backend) graphKey(key int, gd graphDevice) (*graphKey, error) {
	if be.graphs == nil {
		be.graphs = map[int]*graphKey{}
	}
	g := be.graphs[key]
	if g == nil {
		g = &graphKey{need: arenaMinBytes}
		be.graphs[key] = g
	}
	if be.uploading {
		if err := be.dev.sync(); err != nil {
			return nil, err
		}
		be.uploading = false
	}
	if g.need > len(g.host) {
		size := int(sizeClass(int64(max(g.need, 2*len(g.host)))))
		if g.arena != 0 {
			be.pool.put(g.arena, sizeClass(int64(len(g.host))))
			if err := gd.hostFree(g.host); err != nil {
				return nil, err
			}
			g.arena, g.host = 0, nil
		}
		p, _, err := be.pool.get(int64(size))
		if err != nil {
			return nil, fmt.Errorf("argument arena: %w", err)
		}
		h, err := gd.hostAlloc(size)
		if err != nil {
			be.pool.put(p, int64(size))
			return nil, fmt.Errorf("pinned argument arena: %w", err)
		}
		g.arena, g.host = p, h
	}
	g.used, g.need = 0, 0
	clear(g.contents)
	if g.contents == nil {
		g.contents = map[string]int{}
	}
	return g, nil
}

// arenaInts places a step's side input in the arena: its device address,
// or false when the arena is full (the caller uploads it eagerly, and the
// next step of the key gets a bigger arena).
func (r *recDevice) arenaInts(v []int32) (devPtr, bool) {
	g := r.g
	b := i32bytes(v)
	key := string(b)
	if off, ok := g.contents[key]; ok {
		return g.arena + devPtr(off), true
	}
	off := (g.used + 15) &^ 15
	if off+len(b) > len(g.host) {
		g.need = max(g.need, off+len(b)+len(g.host))
		return 0, false
	}
	copy(g.host[off:], b)
	g.used = off + len(b)
	g.contents[key] = off
	return g.arena + devPtr(off), true
}

// uploadArena copies the step's side inputs to the device: one copy.
func (be *Backend) uploadArena(r *recDevice) error {
	if r.uploaded || r.g.used == 0 {
		return nil
	}
	r.uploaded = true
	be.uploading = true
	return r.device.htod(r.g.arena, r.g.host[:r.g.used])
}

// finishStep launches the step's graph, capturing it first when its calls
// changed; a step that went eager is already issued (be.mu held).
func (be *Backend) finishStep(r *recDevice, gd graphDevice) error {
	if r.eager {
		be.gstats.Eager++
		return nil
	}
	g := r.g
	if err := be.uploadArena(r); err != nil {
		return err
	}
	same := g.has && len(g.calls) == len(r.calls)
	for i := 0; same && i < len(r.calls); i++ {
		same = g.calls[i].equal(&r.calls[i])
	}
	if !same {
		if g.failed >= 3 {
			be.gstats.Eager++
			return r.issueAll()
		}
		if g.has {
			g.has = false
			if err := gd.destroyGraph(g.exec); err != nil {
				return err
			}
		}
		exec, err := be.capture(r.calls, gd)
		if err != nil {
			// not capturable here (a driver without graph support for a
			// call, cuBLAS refusing the capture): this step, eager
			g.failed++
			be.gstats.Eager++
			be.gstats.CaptureErr = fmt.Sprintf("key %d: %v", r.key, err)
			return r.issueAll()
		}
		g.exec, g.has, g.calls = exec, true, r.calls
		be.gstats.Captures++
	} else {
		be.gstats.Replays++
	}
	be.gstats.Calls += len(r.calls)
	for i := range r.calls {
		if r.calls[i].op == 'l' {
			be.gstats.LtCalls++
		}
	}
	return gd.launchGraph(g.exec)
}

// capture records calls into a graph: nothing runs.
func (be *Backend) capture(calls []devCall, gd graphDevice) (graphHandle, error) {
	if err := gd.beginCapture(); err != nil {
		return 0, err
	}
	for i := range calls {
		if err := calls[i].issue(be.dev); err != nil {
			_, eerr := gd.endCapture()
			return 0, errors.Join(fmt.Errorf("capture %s: %w", calls[i].kernel, err), eerr)
		}
	}
	return gd.endCapture()
}

// recDevice queues a graph step's calls in front of the device.
type recDevice struct {
	device
	be       *Backend
	key      int
	g        *graphKey
	calls    []devCall
	eager    bool // a call could not be queued: the step went eager from it
	uploaded bool
}

func (r *recDevice) queue(c devCall) error {
	if r.eager {
		return c.issue(r.device)
	}
	r.calls = append(r.calls, c)
	return nil
}

// issueAll issues the queued calls eagerly (after the arena they read).
func (r *recDevice) issueAll() error {
	if err := r.be.uploadArena(r); err != nil {
		return err
	}
	var errs []error
	for i := range r.calls {
		if err := r.calls[i].issue(r.device); err != nil {
			errs = append(errs, err)
			break
		}
	}
	r.calls = nil
	return errors.Join(errs...)
}

// goEager issues what is queued and makes the rest of the step eager.
func (r *recDevice) goEager() error {
	if r.eager {
		return nil
	}
	r.eager = true
	return r.issueAll()
}

func (r *recDevice) launch(kernel string, grid, block dim3, args []arg) error {
	return r.queue(devCall{op: 'k', kernel: kernel, grid: grid, block: block, args: slices.Clone(args)})
}
func (r *recDevice) gemm(g *gemmCall) error { return r.queue(devCall{op: 'g', gemm: *g}) }

// gemmLt is queued like gemm: the device keeps what a captured
// cublasLtMatmul reads at replay (its workspace, and on a GPU the
// descriptors and algorithm of each distinct call, kept until close), so
// a replay runs it as the eager call would.
func (r *recDevice) gemmLt(g *gemmCall) error { return r.queue(devCall{op: 'l', gemm: *g}) }
func (r *recDevice) dtod(dst, src devPtr, n int64) error {
	return r.queue(devCall{op: 'c', dst: dst, src: src, n: n})
}
func (r *recDevice) memset32(dst devPtr, v uint32, n int64) error {
	return r.queue(devCall{op: '4', dst: dst, v: v, n: n})
}
func (r *recDevice) memset16(dst devPtr, v uint16, n int64) error {
	return r.queue(devCall{op: '2', dst: dst, v: uint32(v), n: n})
}

// Calls that cannot sit in a graph: issue what is queued, then go eager.
func (r *recDevice) htod(dst devPtr, src []byte) error {
	return errors.Join(r.goEager(), r.device.htod(dst, src))
}
func (r *recDevice) dtoh(dst []byte, src devPtr) error {
	return errors.Join(r.goEager(), r.device.dtoh(dst, src))
}
func (r *recDevice) sync() error         { return errors.Join(r.goEager(), r.device.sync()) }
func (r *recDevice) free(p devPtr) error { return errors.Join(r.goEager(), r.device.free(p)) }
