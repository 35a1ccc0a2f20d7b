//go:build argrl_cuda

package cuda

import (
	"fmt"
	"unsafe"

	"github.com/argrl/argrl/kernels"
)

// The two hooks package dist needs to run NCCL on this backend's GPU.

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
