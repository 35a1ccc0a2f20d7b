package cuda

import (
	"errors"
	"fmt"
	"math"
)

// devPtr is a device address (CUdeviceptr on a GPU, a host address inside
// the emulator process).
type devPtr uint64

// dim3 is a CUDA grid or block shape.
type dim3 struct{ x, y, z int }

// arg is one kernel parameter packed into 64 bits, with its kind: 'p'
// pointer, 'i' 32-bit int, 'f' float32, 'l' 64-bit int. Every parameter
// travels as 8 bytes; the driver reads only sizeof(param) of them, which on
// little-endian machines are the low bytes where the value sits.
type arg struct {
	kind byte
	v    uint64
}

func pArg(p devPtr) arg  { return arg{'p', uint64(p)} }
func iArg(x int) arg     { return arg{'i', uint64(uint32(int32(x)))} }
func fArg(x float32) arg { return arg{'f', uint64(math.Float32bits(x))} }
func lArg(x int64) arg   { return arg{'l', uint64(x)} }
func uArg(x uint64) arg  { return arg{'l', x} }
func bArg(b bool) arg    { return iArg(btoi(b)) }
func kindsOf(a []arg) string {
	k := make([]byte, len(a))
	for i, x := range a {
		k[i] = x.kind
	}
	return string(k)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// gemmCall is one cublasGemmStridedBatchedEx call in cuBLAS's column-major
// convention: C_b = Alpha·op(A_b)·op(B_b) + Beta·C_b for b < Batch, with
// op(A) M×K, op(B) K×N, C M×N, float32 compute. Beta == 0 does not read C.
// Through gemmLt (cublasLtMatmul) Bias, if set, is an f32 [M] added to
// every column of C_b after the product (CUBLASLT_EPILOGUE_BIAS; in the
// row-major terms of MatMul, a bias per output column added to every row).
type gemmCall struct {
	Bias                      devPtr
	TransA, TransB            bool
	M, N, K, Batch            int
	Alpha, Beta               float32
	A, B, C                   devPtr
	TypeA, TypeB, TypeC       dtype
	LdA, LdB, LdC             int64
	StrideA, StrideB, StrideC int64
}

// dtype is a device element type in gemmCall (0 f32, 1 bf16, as the
// emulator's protocol).
type dtype uint32

const (
	tF32  dtype = 0
	tBF16 dtype = 1
)

// device is the small driver surface the backend is written against. The
// cuda build implements it with the driver API and cuBLAS (device_cuda.go);
// the emulator (emu.go) implements it on the CPU, so everything above this
// interface — launch shapes, argument packing, the pool, the row-major to
// column-major GEMM mapping — is exercised without a GPU.
//
// Work is ordered as issued (one stream). Asynchronous failures may
// surface only at sync.
type device interface {
	alloc(bytes int64) (devPtr, error)
	free(p devPtr) error
	htod(dst devPtr, src []byte) error
	dtoh(dst []byte, src devPtr) error
	dtod(dst, src devPtr, bytes int64) error
	memset32(dst devPtr, v uint32, n int64) error
	memset16(dst devPtr, v uint16, n int64) error
	launch(kernel string, grid, block dim3, args []arg) error
	gemm(g *gemmCall) error
	// gemmLt is the same product through cuBLASLt (cublasLtMatmul: a
	// matmul descriptor, matrix layouts, a heuristic-chosen algorithm and
	// a workspace), with g.Bias applied in its epilogue.
	gemmLt(g *gemmCall) error
	sync() error
	// memInfo reports free and total device memory in bytes.
	memInfo() (free, total int64, err error)
	close() error
	name() string
	// counters are the device's Transfers, counted as calls are issued
	counters() *Transfers
}

// Transfers count a device's host↔device copies and its waits for the
// stream (Backend.Transfers): what a decode step costs besides its
// kernels, checked by tests as counts, never timed.
type Transfers struct {
	HtoD, DtoH int // copies issued (a device→host copy also waits for the stream)
	Syncs      int // explicit waits for the stream besides those
}

// checkSignature compares the packed kinds of a launch with the kernel's
// parameter list ('p' and 'l' are both 64-bit; sig may use 'u' for "some
// 64-bit value" when the source of truth is PTX).
func checkSignature(kernel, sig string, args []arg) error {
	if len(sig) != len(args) {
		return fmt.Errorf("kernel %s takes %d parameters, launch passes %d", kernel, len(sig), len(args))
	}
	for i, a := range args {
		s := sig[i]
		ok := s == a.kind || (s == 'u' && (a.kind == 'p' || a.kind == 'l'))
		if !ok {
			return fmt.Errorf("kernel %s parameter %d is %q, launch passes %q", kernel, i, s, a.kind)
		}
	}
	return nil
}

// checkThreads refuses a launch of more threads per block than the kernel
// takes: limit is its __launch_bounds__ (the emulator) or the driver's
// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK for the compiled function (the
// GPU: the bounds, or fewer when the function needs many registers); 0 is
// no limit known. A launch over it would fail on the GPU with
// CUDA_ERROR_INVALID_VALUE, which does not say which kernel or why.
func checkThreads(kernel string, block dim3, limit int) error {
	if n := block.x * block.y * block.z; limit > 0 && n > limit {
		return fmt.Errorf("kernel %s: launch of %d threads per block (block %v), but it takes at most %d (__launch_bounds__ in its .cu source, or the compiled function's MAX_THREADS_PER_BLOCK)",
			kernel, n, block, limit)
	}
	return nil
}

// closedDevice stands in for a device after Backend.Close: every call fails.
type closedDevice struct{ label string }

var errClosed = errors.New("backend is closed")

func (closedDevice) alloc(int64) (devPtr, error)          { return 0, errClosed }
func (closedDevice) free(devPtr) error                    { return errClosed }
func (closedDevice) htod(devPtr, []byte) error            { return errClosed }
func (closedDevice) dtoh([]byte, devPtr) error            { return errClosed }
func (closedDevice) dtod(devPtr, devPtr, int64) error     { return errClosed }
func (closedDevice) memset32(devPtr, uint32, int64) error { return errClosed }
func (closedDevice) memset16(devPtr, uint16, int64) error { return errClosed }
func (closedDevice) launch(string, dim3, dim3, []arg) error {
	return errClosed
}
func (closedDevice) gemm(*gemmCall) error           { return errClosed }
func (closedDevice) gemmLt(*gemmCall) error         { return errClosed }
func (closedDevice) sync() error                    { return errClosed }
func (closedDevice) memInfo() (int64, int64, error) { return 0, 0, errClosed }
func (closedDevice) close() error                   { return nil }
func (d closedDevice) name() string                 { return d.label }
func (closedDevice) counters() *Transfers           { return &Transfers{} }
