//go:build argrl_cuda

package cuda

/*
#include "cudrv.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/argrl/argrl/kernels"
)

// The hooks package dist needs to run NCCL on this backend's GPU, through
// the driver this package opened at run time (dist links no CUDA library).

// DeviceCount opens the driver (first use) and returns the number of
// visible GPUs.
func DeviceCount() (int, error) {
	if err := loadLibraries(); err != nil {
		return 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuErr("cuInit", C.drv_init()); err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	var n C.int
	if err := cuErr("cuDeviceGetCount", C.drv_device_count(&n)); err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return int(n), nil
}

// StreamDone reports whether the work enqueued on stream (the one Native
// passes) has completed; call it inside Native.
func StreamDone(stream unsafe.Pointer) (bool, error) {
	const notReady = 600 // CUDA_ERROR_NOT_READY
	r := C.drv_stream_query(C.argrl_CUstream(stream))
	if r == notReady {
		return false, nil
	}
	return r == 0, cuErr("cuStreamQuery", r)
}

// OptionsFor returns the Options of a CUDA backend name ("cuda",
// "cuda-bf16tc", "cuda-bf16"); ok is false for any other name.
func OptionsFor(name string) (opt Options, ok bool) {
	switch name {
	case "cuda":
		return Options{}, true
	case "cuda-bf16tc":
		return Options{BF16TensorCores: true}, true
	case "cuda-bf16":
		return bf16Options, true
	}
	return Options{}, false
}

// NewOnDevice opens the CUDA backend on device ordinal, counted among the
// visible devices (New opens ordinal 0).
func NewOnDevice(ordinal int, opt Options) (*Backend, error) {
	d, err := newCUDADevice(ordinal)
	if err != nil {
		return nil, err
	}
	return newBackend(d, opt), nil
}

// Native runs f with the backend's lock held (no op of the backend runs
// meanwhile; f must not call the backend) and its CUDA context current on
// a locked OS thread, passing the backend's stream (a CUstream, which is
// also a cudaStream_t) and the device address of each of bufs, live
// buffers of this backend. Work f enqueues on the stream is ordered after
// every op issued before, and before every op issued after.
func (be *Backend) Native(bufs []kernels.Buffer, f func(stream unsafe.Pointer, ptrs []uintptr) error) error {
	d, ok := be.dev.(*cuDevice)
	if !ok {
		return fmt.Errorf("%s: Native: not a GPU device", be.Name())
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	ptrs := make([]uintptr, len(bufs))
	for i, b := range bufs {
		cb, ok := b.(*buffer)
		if !ok || !cb.Live() {
			return fmt.Errorf("cuda: Native: buffer %d is not a live buffer of the CUDA backend (%T)", i, b)
		}
		ptrs[i] = uintptr(cb.ptr())
	}
	defer d.enter()()
	return f(unsafe.Pointer(d.stream), ptrs)
}
