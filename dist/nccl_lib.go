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
	"sync"
	"unsafe"
)

// ncclLibrary is the NCCL runtime opened by the CUDA build. It is loaded
// at run time: building needs no NCCL, and only a GPU run needs it.
const ncclLibrary = "libnccl.so.2"

// ncclMinVersion is NCCL 2.7.0, the first with ncclSend/ncclRecv
// (ncclGetVersion's code: major·1000 + minor·100 + patch before 2.9,
// major·10000 + … after, so both encodings compare correctly).
const ncclMinVersion = 2700

var ncclLoad struct {
	once    sync.Once
	version int
	err     error
}

// loadNCCL opens libnccl.so.2 once per process and returns its version.
func loadNCCL() (int, error) {
	ncclLoad.once.Do(func() {
		lib := C.CString(ncclLibrary)
		defer C.free(unsafe.Pointer(lib))
		var v C.int
		if msg := C.argrl_nccl_load(lib, &v); msg != nil {
			ncclLoad.err = fmt.Errorf("dist: %s not found: %s (install NCCL %s or newer, or add its directory to LD_LIBRARY_PATH)",
				ncclLibrary, C.GoString(msg), "2.7")
			return
		}
		ncclLoad.version = int(v)
		if v < ncclMinVersion {
			ncclLoad.err = fmt.Errorf("dist: %s is NCCL version code %d; argrl needs NCCL 2.7 or newer", ncclLibrary, int(v))
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
