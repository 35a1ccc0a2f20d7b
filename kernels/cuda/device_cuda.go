//go:build argrl_cuda

package cuda

/*
#include <stdlib.h>

#include "cudrv.h"
*/
import "C"

import (
	"embed"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/argrl/argrl/kernels/cuda/cudalib"
)

// ptxFS holds the PTX gen.sh made: ptx/sm_80/*.ptx and ptx/sm_90/*.ptx;
// the device loads the set pickArch chooses and the driver JIT-compiles it
// for the device's architecture.
//
//go:embed ptx
var ptxFS embed.FS

// cuDevice is the GPU: the primary context of one device, one non-blocking
// stream for all work (kernels, copies, cuBLAS), the PTX modules (sm_80,
// JIT-compiled for the device), and a cuBLAS handle bound to the stream. A
// CUDA context is current per OS thread, so every call pins its goroutine
// to its thread and makes the context current first.
type cuDevice struct {
	dev    C.argrl_CUdevice
	ctx    C.argrl_CUcontext
	stream C.argrl_CUstream
	mods   []C.argrl_CUmodule
	fns    map[string]C.argrl_CUfunction
	sigs   map[string]string
	limits map[string]int // the driver's MAX_THREADS_PER_BLOCK per kernel
	blas   C.argrl_cublasHandle_t
	lt     C.argrl_cublasLtHandle_t // nil: no cuBLASLt (gemmLt falls back)
	ws     C.argrl_CUdeviceptr      // cuBLASLt's workspace, ltWorkspace bytes
	label  string
	// graphs holds the instantiated decode-step graphs by handle (graph.go);
	// Go code never turns a C pointer into an integer and back.
	graphs    map[graphHandle]C.argrl_CUgraphExec
	nextGraph graphHandle
	// plans holds a cuBLASLt plan (descriptors, layouts, algorithm) per
	// kind of gemmLt call, made on first use and freed at close: a
	// captured cublasLtMatmul reads them at every replay.
	plans map[gemmCall]*C.argrl_lt_plan
	xfer  Transfers
}

func (d *cuDevice) counters() *Transfers { return &d.xfer }

// maxLtPlans bounds d.plans; past it a new kind of call fails, and a graph
// step capturing it runs eagerly (graph.go).
const maxLtPlans = 1 << 14

// ltWorkspace is the workspace cuBLASLt's algorithms may use (32 MiB, what
// NVIDIA recommends for Hopper; 4 MiB would do on Ampere).
const ltWorkspace = 32 << 20

var (
	_ device      = (*cuDevice)(nil)
	_ graphDevice = (*cuDevice)(nil)
)

func newCUDADevice(ordinal int) (*cuDevice, error) {
	if err := loadLibraries(); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuErr("cuInit", C.drv_init()); err != nil {
		return nil, fmt.Errorf("cuda: %w (driver %s, CUDA %s)", err, libPath(cudalib.Driver), cudaVersion(driverVer))
	}
	var n C.int
	if err := cuErr("cuDeviceGetCount", C.drv_device_count(&n)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if ordinal >= int(n) {
		return nil, fmt.Errorf("cuda: device %d requested, %d visible", ordinal, int(n))
	}
	d := &cuDevice{fns: map[string]C.argrl_CUfunction{}, sigs: map[string]string{}, limits: map[string]int{}}
	if err := cuErr("cuDeviceGet", C.drv_device(&d.dev, C.int(ordinal))); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	var major, minor C.int
	if err := cuErr("cuDeviceGetAttribute", C.drv_capability(&major, &minor, d.dev)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: compute capability: %w", ordinal, err)
	}
	arch, err := pickArch(int(major), int(minor))
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	if err := cuErr("cuDevicePrimaryCtxRetain", C.drv_retain(&d.ctx, d.dev)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	if err := cuErr("cuCtxSetCurrent", C.drv_set_ctx(d.ctx)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if err := cuErr("cuStreamCreate", C.drv_stream(&d.stream)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	dir := fmt.Sprintf("ptx/sm_%d", arch)
	ents, err := ptxFS.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("cuda: embedded PTX: %w", err)
	}
	for _, e := range ents {
		data, err := ptxFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("cuda: embedded PTX: %w", err)
		}
		if err := d.loadModule(dir+"/"+e.Name(), string(data), int(major), int(minor)); err != nil {
			return nil, err
		}
	}
	if st := C.blas_create(&d.blas, d.stream); st != 0 {
		d.blas = nil
		return nil, fmt.Errorf("cuda: cuBLAS (%s) init: status %d", libPath(cudalib.CuBLAS), int(st))
	}
	lt := "no cuBLASLt: bias epilogues run as a separate kernel"
	if C.argrl_has_cublaslt() != 0 {
		if st := C.blaslt_create(&d.lt); st != 0 {
			d.lt = nil
			return nil, fmt.Errorf("cuda: cuBLASLt (%s) init: status %d", libPath(cudalib.CuBLASLt), int(st))
		}
		if err := cuErr("cuMemAlloc", C.drv_alloc(&d.ws, ltWorkspace)); err != nil {
			return nil, fmt.Errorf("cuda: cuBLASLt workspace of %d MiB: %w", ltWorkspace>>20, err)
		}
		lt = "cuBLASLt"
	}
	var name [256]C.char
	_ = C.drv_device_name(&name[0], C.int(len(name)), d.dev)
	d.label = fmt.Sprintf("%s (sm_%d%d, PTX sm_%d; CUDA driver %s, cuBLAS %d, %s)", strings.TrimSpace(C.GoString(&name[0])),
		major, minor, arch, cudaVersion(driverVer), int(C.blas_version(d.blas)), lt)
	ok = true
	return d, nil
}

// loadModule JIT-compiles one PTX file and looks up its kernels.
func (d *cuDevice) loadModule(file, ptx string, major, minor int) error {
	src := C.CString(ptx)
	defer C.free(unsafe.Pointer(src))
	var log [4096]C.char
	var mod C.argrl_CUmodule
	if err := cuErr("cuModuleLoadDataEx", C.drv_load_module(&mod, src, &log[0], C.size_t(len(log)))); err != nil {
		return fmt.Errorf("cuda: load %s (JIT for sm_%d%d): %w: %s", file, major, minor, err, C.GoString(&log[0]))
	}
	d.mods = append(d.mods, mod)
	entries, err := ptxEntries(ptx)
	if err != nil {
		return fmt.Errorf("cuda: %s: %w", file, err)
	}
	for name, sig := range entries {
		cn := C.CString(name)
		var fn C.argrl_CUfunction
		r := C.drv_function(&fn, mod, cn)
		C.free(unsafe.Pointer(cn))
		if err := cuErr("cuModuleGetFunction", r); err != nil {
			return fmt.Errorf("cuda: kernel %s: %w", name, err)
		}
		var limit C.int
		if err := cuErr("cuFuncGetAttribute", C.drv_func_attr(&limit, C.ARGRL_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn)); err != nil {
			return fmt.Errorf("cuda: kernel %s: MAX_THREADS_PER_BLOCK: %w", name, err)
		}
		d.fns[name], d.sigs[name], d.limits[name] = fn, sig, int(limit)
	}
	return nil
}

func (d *cuDevice) name() string { return "cuda" }

// enter pins the goroutine to its OS thread and makes the context current;
// call the returned function to unpin.
func (d *cuDevice) enter() func() {
	runtime.LockOSThread()
	_ = C.drv_set_ctx(d.ctx)
	return runtime.UnlockOSThread
}

func (d *cuDevice) alloc(bytes int64) (devPtr, error) {
	defer d.enter()()
	var p C.argrl_CUdeviceptr
	err := cuErr("cuMemAlloc", C.drv_alloc(&p, C.size_t(bytes)))
	return devPtr(p), err
}

func (d *cuDevice) free(p devPtr) error {
	defer d.enter()()
	return cuErr("cuMemFree", C.drv_free(C.argrl_CUdeviceptr(p)))
}

// htod copies from pageable Go memory: the driver stages it before the call
// returns, so src may be reused at once.
func (d *cuDevice) htod(dst devPtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	d.xfer.HtoD++
	defer d.enter()()
	return cuErr("cuMemcpyHtoDAsync", C.drv_htod(C.argrl_CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)), d.stream))
}

// dtoh waits for the stream, so it returns the data of all work before it.
func (d *cuDevice) dtoh(dst []byte, src devPtr) error {
	if len(dst) == 0 {
		return nil
	}
	d.xfer.DtoH++
	defer d.enter()()
	if err := cuErr("cuMemcpyDtoHAsync", C.drv_dtoh(unsafe.Pointer(&dst[0]), C.argrl_CUdeviceptr(src), C.size_t(len(dst)), d.stream)); err != nil {
		return err
	}
	return cuErr("cuStreamSynchronize", C.drv_sync(d.stream))
}

func (d *cuDevice) dtod(dst, src devPtr, bytes int64) error {
	defer d.enter()()
	return cuErr("cuMemcpyDtoDAsync", C.drv_dtod(C.argrl_CUdeviceptr(dst), C.argrl_CUdeviceptr(src), C.size_t(bytes), d.stream))
}

func (d *cuDevice) memset32(dst devPtr, v uint32, n int64) error {
	if n == 0 {
		return nil
	}
	defer d.enter()()
	return cuErr("cuMemsetD32Async", C.drv_memset32(C.argrl_CUdeviceptr(dst), C.uint(v), C.size_t(n), d.stream))
}

func (d *cuDevice) memset16(dst devPtr, v uint16, n int64) error {
	if n == 0 {
		return nil
	}
	defer d.enter()()
	return cuErr("cuMemsetD16Async", C.drv_memset16(C.argrl_CUdeviceptr(dst), C.ushort(v), C.size_t(n), d.stream))
}

func (d *cuDevice) launch(kernel string, grid, block dim3, args []arg) error {
	fn, ok := d.fns[kernel]
	if !ok {
		return fmt.Errorf("no kernel %s in the PTX", kernel)
	}
	if err := checkSignature(kernel, d.sigs[kernel], args); err != nil {
		return err
	}
	if err := checkThreads(kernel, block, d.limits[kernel]); err != nil {
		return err
	}
	vals := make([]C.ulonglong, len(args)+1) // +1: never empty
	for i, a := range args {
		vals[i] = C.ulonglong(a.v)
	}
	defer d.enter()()
	return cuErr("cuLaunchKernel "+kernel, C.drv_launch(fn, C.uint(grid.x), C.uint(grid.y), C.uint(grid.z),
		C.uint(block.x), C.uint(block.y), C.uint(block.z), d.stream, &vals[0], C.int(len(args))))
}

func (d *cuDevice) gemm(g *gemmCall) error {
	defer d.enter()()
	st := C.blas_gemm(d.blas, C.int(btoi(g.TransA)), C.int(btoi(g.TransB)), C.int(g.M), C.int(g.N), C.int(g.K),
		C.float(g.Alpha), C.argrl_CUdeviceptr(g.A), C.int(g.TypeA), C.int(g.LdA), C.longlong(g.StrideA),
		C.argrl_CUdeviceptr(g.B), C.int(g.TypeB), C.int(g.LdB), C.longlong(g.StrideB), C.float(g.Beta),
		C.argrl_CUdeviceptr(g.C), C.int(g.TypeC), C.int(g.LdC), C.longlong(g.StrideC), C.int(g.Batch))
	if st != 0 {
		return fmt.Errorf("cublasGemmStridedBatchedEx: status %d", int(st))
	}
	return nil
}

// gemmLt runs g through cublasLtMatmul with the bias epilogue. Without
// cuBLASLt it is gemm followed by the add_bias kernel on each batch item
// (C is dense there: LdC = M).
func (d *cuDevice) gemmLt(g *gemmCall) error {
	if d.lt == nil {
		if err := d.gemm(g); err != nil || g.Bias == 0 {
			return err
		}
		if g.LdC != int64(g.M) || g.TypeC != tF32 {
			return fmt.Errorf("gemmLt without cuBLASLt: bias needs a dense f32 C (ldc %d, m %d)", g.LdC, g.M)
		}
		for b := range g.Batch {
			c := g.C + devPtr(int64(b)*g.StrideC*4)
			n := int64(g.M) * int64(g.N)
			if err := d.launch("add_bias", grid1(n), block1, []arg{pArg(c), pArg(c), pArg(g.Bias), iArg(g.N), iArg(g.M)}); err != nil {
				return err
			}
		}
		return nil
	}
	key := *g // the plan's kind: everything but the operands' addresses
	key.A, key.B, key.C, key.Alpha, key.Beta = 0, 0, 0, 0, 0
	defer d.enter()()
	p := d.plans[key]
	if p == nil {
		if len(d.plans) >= maxLtPlans {
			return fmt.Errorf("cublasLt: %d kinds of product planned, the most kept", maxLtPlans)
		}
		st := C.blaslt_plan(d.lt, C.int(btoi(g.TransA)), C.int(btoi(g.TransB)), C.int(g.M), C.int(g.N), C.int(g.K),
			C.int(g.TypeA), C.longlong(g.LdA), C.longlong(g.StrideA), C.int(g.TypeB), C.longlong(g.LdB), C.longlong(g.StrideB),
			C.int(g.TypeC), C.longlong(g.LdC), C.longlong(g.StrideC), C.int(g.Batch), C.argrl_CUdeviceptr(g.Bias), ltWorkspace, &p)
		if st != 0 {
			return fmt.Errorf("cublasLt plan (m %d n %d k %d batch %d, bias %v): status %d", g.M, g.N, g.K, g.Batch, g.Bias != 0, int(st))
		}
		if d.plans == nil {
			d.plans = map[gemmCall]*C.argrl_lt_plan{}
		}
		d.plans[key] = p
	}
	st := C.blaslt_run(d.lt, p, C.float(g.Alpha), C.argrl_CUdeviceptr(g.A), C.argrl_CUdeviceptr(g.B), C.float(g.Beta),
		C.argrl_CUdeviceptr(g.C), d.ws, ltWorkspace, d.stream)
	if st != 0 {
		return fmt.Errorf("cublasLtMatmul (m %d n %d k %d batch %d, bias %v): status %d", g.M, g.N, g.K, g.Batch, g.Bias != 0, int(st))
	}
	return nil
}

func (d *cuDevice) sync() error {
	d.xfer.Syncs++
	defer d.enter()()
	return cuErr("cuStreamSynchronize", C.drv_sync(d.stream))
}

func (d *cuDevice) memInfo() (free, total int64, err error) {
	defer d.enter()()
	var f, t C.size_t
	err = cuErr("cuMemGetInfo", C.drv_mem_info(&f, &t))
	return int64(f), int64(t), err
}

// close releases what newCUDADevice made (also a partly made device).
func (d *cuDevice) close() error {
	defer d.enter()()
	var err error
	if d.stream != nil {
		err = cuErr("cuStreamSynchronize", C.drv_sync(d.stream))
	}
	if d.blas != nil {
		C.blas_destroy(d.blas)
		d.blas = nil
	}
	for k, p := range d.plans {
		C.blaslt_plan_free(p)
		delete(d.plans, k)
	}
	if d.lt != nil {
		C.blaslt_destroy(d.lt)
		d.lt = nil
	}
	if d.ws != 0 {
		_ = C.drv_free(d.ws)
		d.ws = 0
	}
	for _, m := range d.mods {
		_ = C.drv_unload(m)
	}
	d.mods = nil
	if d.stream != nil {
		_ = C.drv_stream_destroy(d.stream)
		d.stream = nil
	}
	if d.ctx != nil {
		_ = C.drv_release(d.dev)
		d.ctx = nil
	}
	return err
}

// Graphs (graph.go): stream capture on the device's one stream.

func (d *cuDevice) beginCapture() error {
	if C.drv_graphs_available() == 0 {
		return fmt.Errorf("the CUDA driver (%s) lacks a graph entry point (see DriverReport)", libPath(cudalib.Driver))
	}
	defer d.enter()()
	return cuErr("cuStreamBeginCapture", C.drv_capture_begin(d.stream))
}

func (d *cuDevice) endCapture() (graphHandle, error) {
	defer d.enter()()
	var log [1024]C.char
	var e C.argrl_CUgraphExec
	if err := cuErr("cuStreamEndCapture/cuGraphInstantiate", C.drv_capture_end(d.stream, &e, &log[0], C.size_t(len(log)))); err != nil {
		return 0, fmt.Errorf("%w: %s", err, C.GoString(&log[0]))
	}
	if d.graphs == nil {
		d.graphs = map[graphHandle]C.argrl_CUgraphExec{}
	}
	d.nextGraph++
	d.graphs[d.nextGraph] = e
	return d.nextGraph, nil
}

// graphExec returns the instantiated graph of handle g.
func (d *cuDevice) graphExec(g graphHandle) (C.argrl_CUgraphExec, error) {
	e, ok := d.graphs[g]
	if !ok {
		return nil, fmt.Errorf("cuda: no graph with handle %d", g)
	}
	return e, nil
}

func (d *cuDevice) launchGraph(g graphHandle) error {
	e, err := d.graphExec(g)
	if err != nil {
		return err
	}
	defer d.enter()()
	return cuErr("cuGraphLaunch", C.drv_graph_launch(e, d.stream))
}

func (d *cuDevice) destroyGraph(g graphHandle) error {
	e, err := d.graphExec(g)
	if err != nil {
		return err
	}
	delete(d.graphs, g)
	defer d.enter()()
	return cuErr("cuGraphExecDestroy", C.drv_graph_destroy(e))
}

func (d *cuDevice) canPin() bool { return C.drv_graphs_available() != 0 }

// hostAlloc returns page-locked memory outside Go's heap (cuMemHostAlloc).
func (d *cuDevice) hostAlloc(bytes int) ([]byte, error) {
	if C.drv_graphs_available() == 0 {
		return nil, fmt.Errorf("the CUDA driver (%s) lacks cuMemHostAlloc", libPath(cudalib.Driver))
	}
	defer d.enter()()
	var p unsafe.Pointer
	if err := cuErr("cuMemHostAlloc", C.drv_host_alloc(&p, C.size_t(bytes))); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), bytes), nil
}

func (d *cuDevice) hostFree(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	defer d.enter()()
	return cuErr("cuMemFreeHost", C.drv_host_free(unsafe.Pointer(&b[0])))
}
