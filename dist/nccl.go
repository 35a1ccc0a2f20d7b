//go:build argrl_cuda && argrl_mpi

package dist

/*
#include "argrl_nccl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/cuda"
)

// ncclChunkElems bounds the f32 elements of one NCCL all-reduce step: its
// two scratch buffers hold 256 MiB each at most.
var ncclChunkElems = 1 << 26

// ncclGroupOps bounds the broadcasts of one NCCL group.
const ncclGroupOps = 256

// ncclInProgress is ncclResult_t's ncclInProgress: not an error.
const ncclInProgress = 7

// ncclComm is the MPI Comm with the CUDA backend's buffers moved by NCCL:
// AllReduce and Broadcast of be's buffers run on be's stream, in the same
// fixed order as MPI's (package comment): point-to-point all-to-all, rank
// order sum with the backend's AXPBY (1·a + 1·b rounds once, like a + b),
// point-to-point all-gather. Everything else is the MPI Comm's.
type ncclComm struct {
	*mpiComm
	be         *cuda.Backend
	comm       C.argrl_nccl_comm
	flat, gath kernels.Buffer // scratch, grown on demand
}

func init() { deviceBackend = openDeviceBackend }

// openDeviceBackend opens every CUDA mode ("cuda", "cuda-bf16tc",
// "cuda-bf16") on the rank's GPU with NCCL; "auto" is the mode
// kernels.AutoCUDA picks when this rank sees a GPU (else not a device
// name: the caller falls back to kernels.Choose, which picks cpu).
func openDeviceBackend(c Comm, name string) (kernels.Backend, Comm, bool, error) {
	if name == kernels.Auto {
		if n, err := cuda.DeviceCount(); err != nil || n == 0 {
			return nil, nil, false, nil
		}
		name = kernels.AutoCUDA
	}
	opt, ok := cuda.OptionsFor(name)
	if !ok {
		return nil, nil, false, nil
	}
	be, nc, err := OpenCUDA(c, opt)
	if err != nil {
		return nil, nil, true, err
	}
	return be, nc, true, nil
}

// OpenCUDA opens the CUDA backend on the GPU of c's local rank (one rank
// per GPU) and an NCCL communicator over every rank of c, which must be
// the MPI Comm (Open under an MPI launcher). rank 0's ncclUniqueId reaches
// the others by MPI broadcast. The Comm it returns moves the backend's
// buffers through NCCL and does everything else as c; Close it before the
// backend. A failure on any rank is returned on every rank.
func OpenCUDA(c Comm, opt cuda.Options) (*cuda.Backend, Comm, error) {
	m, ok := c.(*mpiComm)
	if !ok {
		return nil, nil, fmt.Errorf("dist: NCCL needs the MPI Comm (dist.Open under mpirun or srun), not %T", c)
	}
	var be *cuda.Backend
	n, err := cuda.DeviceCount()
	if err != nil {
		err = fmt.Errorf("dist: count CUDA devices: %w", err)
	} else if dev, e := deviceFor(localRank(m.local), n); e != nil {
		err = e
	} else {
		be, err = cuda.NewOnDevice(dev, opt)
	}
	if err = m.Check(err); err == nil {
		var nc *ncclComm
		if nc, err = newNCCL(m, be); err == nil {
			return be, nc, nil
		}
	}
	if be != nil {
		_ = be.Close()
	}
	return nil, nil, err
}

func newNCCL(m *mpiComm, be *cuda.Backend) (*ncclComm, error) {
	_, err := loadNCCL()
	if err = m.Check(err); err != nil {
		return nil, err
	}
	var id C.argrl_nccl_id
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&id)), unsafe.Sizeof(id))
	if m.rank == 0 {
		err = ncclError(C.argrl_nccl_get_unique_id(&id))
		if err != nil {
			err = fmt.Errorf("dist: ncclGetUniqueId: %w", err)
		}
	}
	if err = m.Check(err); err != nil {
		return nil, err
	}
	got, err := m.BroadcastBytes(0, raw)
	if err != nil {
		return nil, err
	}
	copy(raw, got)
	nc := &ncclComm{mpiComm: m, be: be}
	err = be.Native(nil, func(unsafe.Pointer, []uintptr) error {
		var comm C.argrl_nccl_comm
		var rc C.int
		nc.blocking("nccl init", func() { rc = C.argrl_nccl_init_rank(&comm, C.int(m.size), &id, C.int(m.rank)) })
		if rc != 0 {
			return fmt.Errorf("dist: ncclCommInitRank on rank %d of %d: %w", m.rank, m.size, ncclError(rc))
		}
		nc.comm = comm
		return nil
	})
	if err = m.Check(err); err != nil {
		if nc.comm != nil {
			_ = be.Native(nil, func(unsafe.Pointer, []uintptr) error { C.argrl_nccl_abort(nc.comm); return nil })
		}
		return nil, err
	}
	return nc, nil
}

// die aborts the NCCL communicator (when it is not stuck in a call) and
// then every rank; it does not return.
func (n *ncclComm) die(op, why string, abortNCCL bool) {
	if abortNCCL && n.comm != nil {
		C.argrl_nccl_abort(n.comm)
	}
	n.fatal(op, why)
}

// blocking runs a call that may block on the other ranks (communicator
// setup, a group's launch), aborting every rank when it outlasts the
// timeout.
func (n *ncclComm) blocking(op string, f func()) {
	t := time.AfterFunc(n.timeout, func() { n.die(op, timeoutMsg(n.timeout), false) })
	f()
	t.Stop()
}

// wait polls the stream until the work enqueued on it completes, checking
// NCCL's asynchronous error; a failure or the timeout is fatal.
func (n *ncclComm) wait(op string, stream unsafe.Pointer) {
	ok := poll(n.timeout, func() bool {
		done, err := cuda.StreamDone(stream)
		if err != nil {
			n.die(op, err.Error(), true)
		}
		if done {
			return true
		}
		var ae C.int
		if rc := C.argrl_nccl_async_error(n.comm, &ae); rc != 0 {
			n.die(op, ncclError(rc).Error(), true)
		}
		if ae != 0 && ae != ncclInProgress {
			n.die(op, "asynchronous "+ncclError(ae).Error(), true)
		}
		return false
	})
	if !ok {
		n.die(op, timeoutMsg(n.timeout), true)
	}
}

// group runs issue between ncclGroupStart and ncclGroupEnd.
func (n *ncclComm) group(op string, issue func()) {
	if rc := C.argrl_nccl_group_start(); rc != 0 {
		n.die(op, ncclError(rc).Error(), true)
	}
	issue()
	var rc C.int
	n.blocking(op, func() { rc = C.argrl_nccl_group_end() })
	if rc != 0 {
		n.die(op, ncclError(rc).Error(), true)
	}
}

// exchange runs the transfers as one NCCL group on the backend's stream
// and waits for them.
func (n *ncclComm) exchange(op string, bufs []kernels.Buffer, xs []xfer) {
	err := n.be.Native(bufs, func(stream unsafe.Pointer, ptrs []uintptr) error {
		n.group(op, func() {
			for _, x := range xs {
				if x.n == 0 {
					continue
				}
				p := C.ulonglong(ptrs[x.buf] + uintptr(4*x.off))
				var rc C.int
				if x.recv {
					rc = C.argrl_nccl_recv(p, C.size_t(x.n), C.int(x.peer), n.comm, stream)
				} else {
					rc = C.argrl_nccl_send(p, C.size_t(x.n), C.int(x.peer), n.comm, stream)
				}
				if rc != 0 {
					n.die(op, ncclError(rc).Error(), true)
				}
			}
		})
		n.wait(op, stream)
		return nil
	})
	if err != nil {
		n.die(op, err.Error(), true) // the other ranks are already in the group
	}
}

// scratch returns a view of n elements of *slot, grown as needed.
func (n *ncclComm) scratch(slot *kernels.Buffer, elems int) kernels.Buffer {
	if *slot == nil || (*slot).Len() < elems {
		if *slot != nil {
			n.be.Free(*slot)
		}
		*slot = n.be.Alloc(kernels.F32, max(elems, 1))
	}
	return n.be.View(*slot, 0, elems)
}

func (n *ncclComm) AllReduce(be kernels.Backend, bufs ...kernels.Buffer) error {
	if be != kernels.Backend(n.be) {
		return n.mpiComm.AllReduce(be, bufs...)
	}
	return n.deviceOp(opAllReduce, be, 0, bufs, ncclChunkElems, func(ps []piece, cnt int) {
		n.reduceChunk(bufs, ps, cnt)
	})
}

// reduceChunk all-reduces cnt elements made of pieces ps of bufs, packed
// into scratch when they span several buffers.
func (n *ncclComm) reduceChunk(bufs []kernels.Buffer, ps []piece, cnt int) {
	be, s, me := n.be, n.size, n.rank
	flat := view(be, bufs, ps[0])
	packed := len(ps) > 1
	if packed {
		flat = n.scratch(&n.flat, cnt)
		for _, p := range ps {
			be.Copy(be.View(flat, p.at, p.n), view(be, bufs, p))
		}
	}
	myOff, myCnt := part(cnt, s, me)
	gath := n.scratch(&n.gath, s*myCnt)
	if myCnt > 0 {
		be.Copy(be.View(gath, me*myCnt, myCnt), be.View(flat, myOff, myCnt))
	}
	scatter, gather := reducePlan(cnt, s, me)
	n.exchange("allreduce", []kernels.Buffer{flat, gath}, scatter)
	if myCnt > 0 {
		out := be.View(flat, myOff, myCnt)
		be.AXPBY(out, be.View(gath, 0, myCnt), be.View(gath, myCnt, myCnt), 1, 1, myCnt)
		for p := 2; p < s; p++ {
			be.AXPBY(out, out, be.View(gath, p*myCnt, myCnt), 1, 1, myCnt)
		}
	}
	n.exchange("allreduce", []kernels.Buffer{flat}, gather)
	if packed {
		for _, p := range ps {
			be.Copy(view(be, bufs, p), be.View(flat, p.at, p.n))
		}
	}
}

func (n *ncclComm) Broadcast(be kernels.Backend, root int, bufs ...kernels.Buffer) error {
	if be != kernels.Backend(n.be) {
		return n.mpiComm.Broadcast(be, root, bufs...)
	}
	// One step over every non-empty buffer, in place, in groups.
	return n.deviceOp(opBroadcast, be, root, bufs, math.MaxInt, func(ps []piece, _ int) {
		for lo := 0; lo < len(ps); lo += ncclGroupOps {
			batch := ps[lo:min(lo+ncclGroupOps, len(ps))]
			vs := make([]kernels.Buffer, len(batch))
			for i, p := range batch {
				vs[i] = view(be, bufs, p)
			}
			err := n.be.Native(vs, func(stream unsafe.Pointer, ptrs []uintptr) error {
				n.group("broadcast", func() {
					for i, p := range batch {
						rc := C.argrl_nccl_bcast(C.ulonglong(ptrs[i]), C.size_t(p.n), C.int(root), n.comm, stream)
						if rc != 0 {
							n.die("broadcast", ncclError(rc).Error(), true)
						}
					}
				})
				n.wait("broadcast", stream)
				return nil
			})
			if err != nil {
				n.die("broadcast", err.Error(), true)
			}
		}
	})
}

// Close destroys the NCCL communicator, frees the scratch buffers and
// finalizes MPI.
func (n *ncclComm) Close() error {
	if err := n.begin(); err != nil {
		return err
	}
	var err error
	if n.comm != nil {
		err = n.be.Native(nil, func(unsafe.Pointer, []uintptr) error {
			var rc C.int
			n.blocking("close", func() { rc = C.argrl_nccl_destroy(n.comm) })
			if e := ncclError(rc); e != nil {
				return fmt.Errorf("dist: ncclCommDestroy: %w", e)
			}
			return nil
		})
		n.comm = nil
	}
	for _, b := range []*kernels.Buffer{&n.flat, &n.gath} {
		if *b != nil {
			n.be.Free(*b)
			*b = nil
		}
	}
	n.mu.Unlock()
	return errors.Join(err, n.mpiComm.Close())
}
