//go:build !argrl_cuda

package cuda

import "errors"

// Available reports whether this binary was built with the CUDA backend.
const Available = false

// New fails: the binary was built without -tags cuda (make train-cuda).
func New(opt Options) (*Backend, error) {
	return nil, errors.New("cuda: this binary was built without the CUDA backend; build with -tags cuda (make train-cuda)")
}

// Device describes the device.
func (be *Backend) Device() string { return be.dev.name() }
