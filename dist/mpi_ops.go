//go:build argrl_mpi

package dist

/*
#include "argrl_mpi.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/argrl/argrl/kernels"
)

// chunkElems bounds the f32 elements one AllReduce or Broadcast step
// stages through host memory (16 MiB); longer buffers go in chunks, which
// changes no result (each element is summed on its own).
var chunkElems = 1 << 22

// Collective kinds, exchanged in every header.
const (
	opAllReduce = iota + 1
	opBroadcast
	opBroadcastBytes
	opAllGather
	opBarrier
	opCheck
)

var opNames = map[int64]string{
	opAllReduce: "allreduce", opBroadcast: "broadcast", opBroadcastBytes: "broadcast bytes",
	opAllGather: "allgather", opBarrier: "barrier", opCheck: "check",
}

// call is one rank's header: which collective, its length (-1: the rank's
// arguments were invalid), its root.
type call struct{ op, n, root int64 }

func (k call) String() string {
	s := opNames[k.op]
	if s == "" {
		s = fmt.Sprintf("collective %d", k.op)
	}
	switch k.op {
	case opAllReduce:
		s += fmt.Sprintf(" of %d elements", k.n)
	case opBroadcast:
		s += fmt.Sprintf(" of %d elements from rank %d", k.n, k.root)
	case opBroadcastBytes:
		s += fmt.Sprintf(" from rank %d", k.root)
	}
	return s
}

// header starts every collective: an all-gather of each rank's call (which
// is also the barrier). The error, when the calls do not match, is computed
// from the gathered calls alone, so every rank returns it and the ranks
// stay in step. c.mu is held.
func (c *mpiComm) header(op, n, root int, argErr error) ([]call, error) {
	name := opNames[int64(op)]
	if argErr != nil {
		n = -1
	}
	h := c.hdr.i64(3 * (c.size + 1))
	h[0], h[1], h[2] = int64(op), int64(n), int64(root)
	c.run(name, func(r *C.MPI_Request) C.int {
		return C.argrl_iallgather(unsafe.Pointer(&h[0]), unsafe.Pointer(&h[3]), 3, tI64, r)
	})
	calls := make([]call, c.size)
	for i := range calls {
		calls[i] = call{h[3+3*i], h[4+3*i], h[5+3*i]}
	}
	if argErr != nil {
		return nil, argErr
	}
	first := calls[0]
	for r, k := range calls {
		switch {
		case k.op != first.op || k.root != first.root || (k.n != first.n && k.n >= 0 && first.n >= 0 && (first.op == opAllReduce || first.op == opBroadcast)):
			desc := make([]string, len(calls))
			for i, k := range calls {
				desc[i] = fmt.Sprintf("rank %d %v", i, k)
			}
			return nil, fmt.Errorf("dist: %s: the ranks' calls do not match: %s", name, strings.Join(desc, ", "))
		case k.n < 0:
			return nil, fmt.Errorf("dist: %s: rank %d passed invalid arguments", name, r)
		}
	}
	return calls, nil
}

// begin takes the lock for one collective.
func (c *mpiComm) begin() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// deviceOp is the frame of AllReduce and Broadcast: argument checks, the
// header, step on each chunk of at most chunk elements of the buffers'
// concatenation (its pieces and length), then be's Sync.
func (c *mpiComm) deviceOp(op int, be kernels.Backend, root int, bufs []kernels.Buffer, chunk int, step func(ps []piece, n int)) error {
	name := opNames[int64(op)]
	lens, argErr := f32Lens(name, be, bufs)
	if argErr == nil && op == opBroadcast {
		argErr = checkRoot(name, root, c.size)
	}
	if err := c.begin(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	n := total(lens)
	if _, err := c.header(op, n, root, argErr); err != nil {
		return err
	}
	if c.size == 1 || n == 0 {
		return nil
	}
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		step(span(lens, lo, hi), hi-lo)
	}
	if err := be.Sync(); err != nil {
		return fmt.Errorf("dist: %s: %w", name, err)
	}
	return nil
}

func (c *mpiComm) AllReduce(be kernels.Backend, bufs ...kernels.Buffer) error {
	return c.deviceOp(opAllReduce, be, 0, bufs, chunkElems, func(ps []piece, n int) {
		c.reduceChunk(be, bufs, ps, n)
	})
}

// reduceChunk all-reduces n elements made of pieces ps of bufs: an
// all-to-all gives this rank its part of every rank's chunk, it sums them
// in rank order, and an all-gather returns every part to every rank.
// Local staging failures are recorded by be and surface at its Sync; the
// collective runs regardless, so the other ranks never wait for this one.
func (c *mpiComm) reduceChunk(be kernels.Backend, bufs []kernels.Buffer, ps []piece, n int) {
	s := c.size
	send := c.send.f32(n)
	for _, p := range ps {
		be.CopyOut(send[p.at:p.at+p.n], view(be, bufs, p))
	}
	ints := c.ints.i32(4 * s)
	sc, sd, rc, rd := ints[:s], ints[s:2*s], ints[2*s:3*s], ints[3*s:]
	myOff, myCnt := part(n, s, c.rank)
	for p := range s {
		off, cnt := part(n, s, p)
		sc[p], sd[p], rc[p], rd[p] = C.int(cnt), C.int(off), C.int(myCnt), C.int(p*myCnt)
	}
	recv := c.recv.f32(s * myCnt)
	sp, rp := unsafe.Pointer(unsafe.SliceData(send)), unsafe.Pointer(unsafe.SliceData(recv))
	c.run("allreduce", func(r *C.MPI_Request) C.int {
		return C.argrl_ialltoallv(sp, &sc[0], &sd[0], rp, &rc[0], &rd[0], tF32, r)
	})
	sumRanks(send[myOff:], recv, s, myCnt)
	c.run("allreduce", func(r *C.MPI_Request) C.int {
		return C.argrl_iallgatherv(nil, 0, sp, &sc[0], &sd[0], tF32, r)
	})
	for _, p := range ps {
		be.CopyIn(view(be, bufs, p), send[p.at:p.at+p.n])
	}
}

func (c *mpiComm) Broadcast(be kernels.Backend, root int, bufs ...kernels.Buffer) error {
	return c.deviceOp(opBroadcast, be, root, bufs, chunkElems, func(ps []piece, n int) {
		buf := c.send.f32(n)
		if c.rank == root {
			for _, p := range ps {
				be.CopyOut(buf[p.at:p.at+p.n], view(be, bufs, p))
			}
		}
		bp := unsafe.Pointer(unsafe.SliceData(buf))
		c.run("broadcast", func(r *C.MPI_Request) C.int {
			return C.argrl_ibcast(bp, C.int(n), tF32, C.int(root), r)
		})
		if c.rank != root {
			for _, p := range ps {
				be.CopyIn(view(be, bufs, p), buf[p.at:p.at+p.n])
			}
		}
	})
}

func (c *mpiComm) BroadcastBytes(root int, b []byte) ([]byte, error) {
	argErr := checkRoot("broadcast bytes", root, c.size)
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	calls, err := c.header(opBroadcastBytes, len(b), root, argErr)
	if err != nil {
		return nil, err
	}
	n := calls[root].n
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("dist: broadcast bytes: rank %d sends %d bytes, more than %d", root, n, math.MaxInt32)
	}
	data := c.send.bytes(int(n))
	if c.rank == root {
		copy(data, b)
	}
	if n > 0 && c.size > 1 {
		dp := unsafe.Pointer(unsafe.SliceData(data))
		c.run("broadcast bytes", func(r *C.MPI_Request) C.int {
			return C.argrl_ibcast(dp, C.int(n), tBytes, C.int(root), r)
		})
	}
	return bytes.Clone(data), nil
}

func (c *mpiComm) AllGather(b []byte) ([][]byte, error) {
	if err := c.begin(); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	return c.allGather(opAllGather, b)
}

func (c *mpiComm) allGather(op int, b []byte) ([][]byte, error) {
	name := opNames[int64(op)]
	calls, err := c.header(op, len(b), 0, nil)
	if err != nil {
		return nil, err
	}
	s := c.size
	ints := c.ints.i32(2 * s)
	counts, displs := ints[:s], ints[s:]
	sum := int64(0)
	for r, k := range calls {
		if sum+k.n > math.MaxInt32 {
			return nil, fmt.Errorf("dist: %s: ranks send more than %d bytes in all", name, math.MaxInt32)
		}
		counts[r], displs[r] = C.int(k.n), C.int(sum)
		sum += k.n
	}
	recv := c.recv.bytes(int(sum))
	if sum > 0 && s > 1 {
		send := c.send.bytes(len(b))
		copy(send, b)
		sp, rp := unsafe.Pointer(unsafe.SliceData(send)), unsafe.Pointer(unsafe.SliceData(recv))
		c.run(name, func(r *C.MPI_Request) C.int {
			return C.argrl_iallgatherv(sp, C.int(len(b)), rp, &counts[0], &displs[0], tBytes, r)
		})
	} else {
		copy(recv, b)
	}
	out := make([][]byte, s)
	for r := range out {
		out[r] = bytes.Clone(recv[displs[r] : displs[r]+counts[r]])
	}
	return out, nil
}

func (c *mpiComm) Barrier() error {
	if err := c.begin(); err != nil {
		return err
	}
	defer c.mu.Unlock()
	_, err := c.header(opBarrier, 0, 0, nil)
	return err
}

func (c *mpiComm) Check(err error) error {
	if e := c.begin(); e != nil {
		return e
	}
	defer c.mu.Unlock()
	if c.size == 1 {
		return err
	}
	st, e := c.allGather(opCheck, encodeStatus(err))
	if e != nil {
		return e
	}
	return decodeStatuses(st, c.rank, err)
}
