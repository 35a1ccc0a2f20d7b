//go:build argrl_cuda

package cuda

/*
#cgo LDFLAGS: -lcublas
#include <cuda.h>
#include <cublas_v2.h>
#include <library_types.h>

// argrl_gemm is cublasGemmStridedBatchedEx with float32 compute; at/bt/ct
// are 0 for f32, 1 for bf16.
static int argrl_gemm(cublasHandle_t h, int ta, int tb, int m, int n, int k, float alpha,
                      unsigned long long A, int at, int lda, long long sa,
                      unsigned long long B, int bt, int ldb, long long sb, float beta,
                      unsigned long long C, int ct, int ldc, long long sc, int batch) {
	cudaDataType_t ty[2] = {CUDA_R_32F, CUDA_R_16BF};
	return (int)cublasGemmStridedBatchedEx(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
		m, n, k, &alpha, (const void*)A, ty[at], lda, sa, (const void*)B, ty[bt], ldb, sb, &beta,
		(void*)C, ty[ct], ldc, sc, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

static int argrl_blas_create(cublasHandle_t* h, CUstream s) {
	int st = (int)cublasCreate(h);
	if (st != 0) return st;
	return (int)cublasSetStream(*h, (cudaStream_t)s);
}
*/
import "C"

import (
	"embed"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"gorgonia.org/cu"
)

// ptxFS holds the PTX gen.sh made: ptx/sm_80/*.ptx, JIT-compiled by the
// driver for the device's architecture.
//
//go:embed ptx
var ptxFS embed.FS

// cuDevice is the GPU: the primary context of one device, one non-blocking
// stream for all work (kernels, copies, cuBLAS), the PTX modules (sm_80,
// JIT-compiled for the device), and a cuBLAS handle bound to the stream. A
// CUDA context is current per OS thread, so every call pins its goroutine
// to its thread and makes the context current first.
type cuDevice struct {
	dev    cu.Device
	ctx    cu.CUContext
	stream cu.Stream
	mods   []cu.Module
	fns    map[string]cu.Function
	sigs   map[string]string
	blas   C.cublasHandle_t
	label  string
}

var _ device = (*cuDevice)(nil)

func newCUDADevice(ordinal int) (*cuDevice, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: compute capability: %w", ordinal, err)
	}
	if major < 8 {
		return nil, fmt.Errorf("cuda: device %d has compute capability %d.%d; argrl's kernels need 8.0 or newer", ordinal, major, minor)
	}
	arch := ptxArchs[0]
	d := &cuDevice{dev: dev, fns: map[string]cu.Function{}, sigs: map[string]string{}}
	if d.ctx, err = dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: retain context: %w", err)
	}
	if err := cu.SetCurrentContext(d.ctx); err != nil {
		return nil, fmt.Errorf("cuda: set context: %w", err)
	}
	if d.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return nil, fmt.Errorf("cuda: create stream: %w", err)
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
		mod, err := cu.LoadData(string(data))
		if err != nil {
			return nil, fmt.Errorf("cuda: load %s/%s (JIT for sm_%d%d): %w", dir, e.Name(), major, minor, err)
		}
		d.mods = append(d.mods, mod)
		entries, err := ptxEntries(string(data))
		if err != nil {
			return nil, fmt.Errorf("cuda: %s/%s: %w", dir, e.Name(), err)
		}
		for name, sig := range entries {
			fn, err := mod.Function(name)
			if err != nil {
				return nil, fmt.Errorf("cuda: kernel %s: %w", name, err)
			}
			d.fns[name], d.sigs[name] = fn, sig
		}
	}
	cs := *(*C.CUstream)(unsafe.Pointer(&d.stream)) // cu.Stream is struct{ s C.CUstream }
	if st := C.argrl_blas_create(&d.blas, cs); st != 0 {
		return nil, fmt.Errorf("cuda: cuBLAS init: status %d", int(st))
	}
	name, _ := dev.Name()
	d.label = fmt.Sprintf("%s (sm_%d%d, PTX sm_%d)", strings.TrimSpace(name), major, minor, arch)
	return d, nil
}

func (d *cuDevice) name() string { return "cuda" }

// enter pins the goroutine to its OS thread and makes the context current;
// call the returned function to unpin.
func (d *cuDevice) enter() func() {
	runtime.LockOSThread()
	_ = cu.SetCurrentContext(d.ctx)
	return runtime.UnlockOSThread
}

func (d *cuDevice) alloc(bytes int64) (devPtr, error) {
	defer d.enter()()
	p, err := cu.MemAlloc(bytes)
	return devPtr(p), err
}

func (d *cuDevice) free(p devPtr) error {
	defer d.enter()()
	return cu.MemFree(cu.DevicePtr(p))
}

// htod copies from pageable Go memory: the driver stages it before the call
// returns, so src may be reused at once.
func (d *cuDevice) htod(dst devPtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	defer d.enter()()
	return cu.MemcpyHtoDAsync(cu.DevicePtr(dst), unsafe.Pointer(&src[0]), int64(len(src)), d.stream)
}

// dtoh waits for the stream, so it returns the data of all work before it.
func (d *cuDevice) dtoh(dst []byte, src devPtr) error {
	if len(dst) == 0 {
		return nil
	}
	defer d.enter()()
	if err := cu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), cu.DevicePtr(src), int64(len(dst)), d.stream); err != nil {
		return err
	}
	return d.stream.Synchronize()
}

func (d *cuDevice) dtod(dst, src devPtr, bytes int64) error {
	defer d.enter()()
	return cu.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), bytes, d.stream)
}

func (d *cuDevice) memset32(dst devPtr, v uint32, n int64) error {
	if n == 0 {
		return nil
	}
	defer d.enter()()
	return cu.MemsetD32Async(cu.DevicePtr(dst), uint(v), n, d.stream)
}

func (d *cuDevice) memset16(dst devPtr, v uint16, n int64) error {
	if n == 0 {
		return nil
	}
	defer d.enter()()
	return cu.MemsetD16Async(cu.DevicePtr(dst), v, n, d.stream)
}

func (d *cuDevice) launch(kernel string, grid, block dim3, args []arg) error {
	fn, ok := d.fns[kernel]
	if !ok {
		return fmt.Errorf("no kernel %s in the PTX", kernel)
	}
	if err := checkSignature(kernel, d.sigs[kernel], args); err != nil {
		return err
	}
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		vals[i] = a.v
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	defer d.enter()()
	return fn.Launch(grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, d.stream, ptrs)
}

func (d *cuDevice) gemm(g *gemmCall) error {
	defer d.enter()()
	st := C.argrl_gemm(d.blas, C.int(btoi(g.TransA)), C.int(btoi(g.TransB)), C.int(g.M), C.int(g.N), C.int(g.K),
		C.float(g.Alpha), C.ulonglong(g.A), C.int(g.TypeA), C.int(g.LdA), C.longlong(g.StrideA),
		C.ulonglong(g.B), C.int(g.TypeB), C.int(g.LdB), C.longlong(g.StrideB), C.float(g.Beta),
		C.ulonglong(g.C), C.int(g.TypeC), C.int(g.LdC), C.longlong(g.StrideC), C.int(g.Batch))
	if st != 0 {
		return fmt.Errorf("cublasGemmStridedBatchedEx: status %d", int(st))
	}
	return nil
}

func (d *cuDevice) sync() error {
	defer d.enter()()
	return d.stream.Synchronize()
}

func (d *cuDevice) memInfo() (free, total int64, err error) {
	defer d.enter()()
	return cu.MemInfo()
}

func (d *cuDevice) close() error {
	defer d.enter()()
	err := d.stream.Synchronize()
	C.cublasDestroy(d.blas)
	for _, m := range d.mods {
		_ = m.Unload()
	}
	_ = d.stream.Destroy()
	_ = d.dev.ReleasePrimaryCtx()
	return err
}
