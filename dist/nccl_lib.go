//go:build argrl_mpi

package dist

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "argrl_nccl.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/argrl/argrl/kernels/cuda/cudalib"
)

// ncclLibrary is the NCCL runtime opened by the CUDA build. It is loaded
// at run time (building needs no NCCL, and only a GPU run needs it), from
// the first file package cudalib finds (the loader's path, CUDA toolkits,
// python3's nvidia-nccl pip wheel; ARGRL_LIBNCCL overrides), else by this
// name through the dynamic loader's own search.
const ncclLibrary = "libnccl.so.2"

// ncclMinVersion is NCCL 2.7.0, the first with ncclSend/ncclRecv
// (ncclGetVersion's code: major·1000 + minor·100 + patch before 2.9,
// major·10000 + … after, so both encodings compare correctly).
const ncclMinVersion = 2700

var ncclLoad struct {
	once    sync.Once
	path    string
	version int
	err     error
}

// loadNCCL opens libnccl.so.2 once per process and returns its version.
func loadNCCL() (int, error) {
	ncclLoad.once.Do(func() {
		path := ncclLibrary
		found, ferr := cudalib.System().Find(cudalib.NCCL, 0)
		if ferr == nil {
			path = found[0].Path
		} else if os.Getenv(cudalib.NCCL.Env) != "" {
			ncclLoad.err = fmt.Errorf("dist: %w", ferr)
			return
		}
		lib := C.CString(path)
		defer C.free(unsafe.Pointer(lib))
		var v C.int
		if msg := C.argrl_nccl_load(lib, &v); msg != nil {
			why := ""
			if ferr != nil {
				why = "; " + ferr.Error()
			}
			ncclLoad.err = fmt.Errorf("dist: %s not found: %s (install NCCL %s or newer, or set %s)%s",
				path, C.GoString(msg), "2.7", cudalib.NCCL.Env, why)
			return
		}
		ncclLoad.path, ncclLoad.version = path, int(v)
		if v < ncclMinVersion {
			ncclLoad.err = fmt.Errorf("dist: %s is NCCL version code %d; argrl needs NCCL 2.7 or newer", path, int(v))
		}
	})
	return ncclLoad.version, ncclLoad.err
}

// ncclError describes an ncclResult_t (nil for ncclSuccess).
func ncclError(rc C.int) error {
	if rc == 0 {
		return nil
	}
	return fmt.Errorf("NCCL error %d: %s", int(rc), C.GoString(C.argrl_nccl_error_string(rc)))
}
