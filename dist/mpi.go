//go:build argrl_mpi

package dist

/*
#cgo pkg-config: mpi
#include <stdlib.h>
#include "argrl_mpi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// MPIAvailable reports whether this binary was built with MPI (-tags
// argrl_mpi).
const MPIAvailable = true

// Element type codes of argrl_type.
const (
	tBytes = 0
	tF32   = 1
	tI64   = 2
)

// abortCode is the exit status of a job aborted by this package.
const abortCode = 3

var mpiOnce struct {
	sync.Mutex
	used bool
}

// mpiComm is the MPI Comm. Every MPI call runs on one goroutine locked to
// the OS thread that called MPI_Init_thread (the thread that must finalize
// it); mu keeps one collective in flight, so calls are serialized as
// MPI_THREAD_SERIALIZED requires. Buffers handed to MPI are C memory
// (cmem): a non-blocking operation keeps using them after the call that
// started it returns, which Go memory must not be used for.
type mpiComm struct {
	mu                sync.Mutex
	jobs              chan func()
	rank, size, local int
	timeout           time.Duration
	closed            bool
	hdr, ints         cmem // collective headers; counts and displacements
	send, recv        cmem // payload
}

// MPI initializes MPI (once per process) and returns its Comm over every
// rank of the job.
func MPI(opt Options) (Comm, error) {
	c, err := newMPI(opt)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func newMPI(opt Options) (*mpiComm, error) {
	timeout, err := opt.timeout()
	if err != nil {
		return nil, err
	}
	mpiOnce.Lock()
	defer mpiOnce.Unlock()
	if mpiOnce.used {
		return nil, fmt.Errorf("dist: MPI was already initialized in this process (one MPI Comm per process)")
	}
	mpiOnce.used = true
	c := &mpiComm{jobs: make(chan func()), timeout: timeout}
	go c.serve()
	var rc, provided, rank, size, local C.int
	c.do(func() { rc = C.argrl_init(&provided, &rank, &size, &local) })
	switch {
	case rc == -1:
		close(c.jobs)
		return nil, fmt.Errorf("dist: MPI was initialized outside this package")
	case rc != 0:
		var msg string
		c.do(func() { msg = c.errString(rc) })
		close(c.jobs)
		return nil, fmt.Errorf("dist: MPI_Init_thread: %s", msg)
	case provided < C.MPI_THREAD_SERIALIZED:
		c.finalize()
		return nil, fmt.Errorf("dist: this MPI provides thread level %d, below MPI_THREAD_SERIALIZED", int(provided))
	}
	c.rank, c.size, c.local = int(rank), int(size), int(local)
	if n, _ := launchedSize(); n > 1 && c.size != n {
		c.finalize()
		return nil, fmt.Errorf("dist: the launcher started %d ranks but MPI sees %d (under srun, pass --mpi=pmix)", n, c.size)
	}
	return c, nil
}

// serve runs MPI calls on one locked OS thread until jobs is closed.
func (c *mpiComm) serve() {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	for f := range c.jobs {
		f()
	}
}

// do runs f on the MPI thread and waits for it.
func (c *mpiComm) do(f func()) {
	done := make(chan struct{})
	c.jobs <- func() {
		defer close(done)
		f()
	}
	<-done
}

// finalize ends MPI, aborting every rank if that outlasts the timeout
// (MPI_Finalize waits for the other ranks).
func (c *mpiComm) finalize() C.int {
	var rc C.int
	t := time.AfterFunc(c.timeout, func() { c.fatal("finalize", timeoutMsg(c.timeout)) })
	c.do(func() { rc = C.argrl_finalize() })
	t.Stop()
	close(c.jobs)
	return rc
}

func (c *mpiComm) Rank() int      { return c.rank }
func (c *mpiComm) Size() int      { return c.size }
func (c *mpiComm) LocalRank() int { return c.local }

// Close finalizes MPI. The Comm and MPI cannot be used again in this
// process.
func (c *mpiComm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	rc := c.finalize()
	for _, m := range []*cmem{&c.hdr, &c.ints, &c.send, &c.recv} {
		m.free()
	}
	if rc != 0 {
		return fmt.Errorf("dist: MPI_Finalize: MPI error %d", int(rc))
	}
	return nil
}

// errString describes an MPI error code (on the MPI thread).
func (c *mpiComm) errString(rc C.int) string {
	buf := (*C.char)(C.malloc(C.MPI_MAX_ERROR_STRING + 1))
	defer C.free(unsafe.Pointer(buf))
	C.argrl_error_string(rc, buf)
	if s := C.GoString(buf); s != "" {
		return s
	}
	return fmt.Sprintf("MPI error %d", int(rc))
}

// fatal reports an unrecoverable failure of a collective and aborts every
// rank of the job; it does not return.
func (c *mpiComm) fatal(op, why string) {
	fmt.Fprintf(os.Stderr, "dist: rank %d: %s: %s; aborting every rank\n", c.rank, op, why)
	C.argrl_abort(abortCode)
	os.Exit(abortCode) // MPI_Abort does not return
}

// run starts one non-blocking operation on the MPI thread and polls it to
// completion. A failure, or no completion within the timeout, is fatal.
func (c *mpiComm) run(op string, start func(r *C.MPI_Request) C.int) {
	c.do(func() {
		var req C.MPI_Request
		if rc := start(&req); rc != 0 {
			c.fatal(op, c.errString(rc))
		}
		ok := poll(c.timeout, func() bool {
			var done C.int
			if rc := C.argrl_test(&req, &done); rc != 0 {
				c.fatal(op, c.errString(rc))
			}
			return done != 0
		})
		if !ok {
			c.fatal(op, timeoutMsg(c.timeout))
		}
	})
}

// cmem is a growable block of C memory.
type cmem struct {
	p unsafe.Pointer
	n int
}

// get returns at least n bytes (never a nil pointer).
func (m *cmem) get(n int) unsafe.Pointer {
	n = max(n, 8)
	if n > m.n {
		m.free()
		m.p = C.malloc(C.size_t(n))
		if m.p == nil {
			fmt.Fprintf(os.Stderr, "dist: out of memory allocating %d bytes\n", n)
			C.argrl_abort(abortCode)
			os.Exit(abortCode)
		}
		m.n = n
	}
	return m.p
}

func (m *cmem) free() {
	if m.p != nil {
		C.free(m.p)
	}
	m.p, m.n = nil, 0
}

func (m *cmem) f32(n int) []float32 { return unsafe.Slice((*float32)(m.get(4*n)), n) }
func (m *cmem) i64(n int) []int64   { return unsafe.Slice((*int64)(m.get(8*n)), n) }
func (m *cmem) i32(n int) []C.int   { return unsafe.Slice((*C.int)(m.get(4*n)), n) }
func (m *cmem) bytes(n int) []byte  { return unsafe.Slice((*byte)(m.get(n)), n) }
