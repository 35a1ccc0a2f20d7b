//go:build argrl_cuda && argrl_mpi

package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/cuda"
)

// lens are the buffers all-reduced together: empty, tiny, one not divisible
// by any rank count, and more.
var lens = []int{0, 1, 1<<20 + 3, 7, 4096}

func run() error {
	c, err := dist.Open(dist.Options{Timeout: 2 * time.Minute})
	if err != nil {
		return err
	}
	be, nc, err := dist.OpenCUDA(c, cuda.Options{})
	if err != nil {
		_ = c.Close()
		return err
	}
	r, n := nc.Rank(), nc.Size()
	fmt.Printf("ncclcheck: rank %d of %d, local rank %d, on %s\n", r, n, nc.LocalRank(), be.Device())
	var failed []string
	check := func(what string, ok bool) {
		verdict := "ok"
		if !ok {
			verdict = "FAILED"
			failed = append(failed, what)
		}
		fmt.Printf("ncclcheck: rank %d: %-52s %s\n", r, what, verdict)
	}

	want := rankOrderSum(n)
	gpu, err := allReduce(nc, be, r)
	if err != nil {
		return err
	}
	check("NCCL all-reduce equals the rank-order sum", bytes.Equal(gpu, want))
	again, err := allReduce(nc, be, r)
	if err != nil {
		return err
	}
	check("a second NCCL all-reduce gives the same bytes", bytes.Equal(again, gpu))
	host, err := allReduce(nc, kernels.NewCPU(), r)
	if err != nil {
		return err
	}
	check("MPI all-reduce (CPU backend) gives the same bytes", bytes.Equal(host, gpu))

	ok, err := broadcast(nc, be, n-1)
	if err != nil {
		return err
	}
	check(fmt.Sprintf("NCCL broadcast from rank %d", n-1), ok)

	if err := bandwidth(nc, be); err != nil {
		return err
	}
	var mine error
	if len(failed) > 0 {
		mine = fmt.Errorf("%d check(s) failed: %v", len(failed), failed)
	}
	err = nc.Check(mine)
	err = errors.Join(err, nc.Close(), be.Close())
	if err == nil {
		fmt.Printf("ncclcheck: rank %d: PASS\n", r)
	}
	return err
}

// values are rank r's inputs for buffer i: varied signs and exponents, so
// that sums depend on their order.
func values(r, i, n int) []float32 {
	v := make([]float32, n)
	for j := range v {
		x := math.Sin(float64(r*7919+i*104729+j) * 0.618)
		v[j] = float32(math.Ldexp(x, j%23-11))
	}
	return v
}

func rankOrderSum(n int) []byte {
	var out []byte
	for i, l := range lens {
		sum := make([]float32, l)
		for r := range n {
			for j, x := range values(r, i, l) {
				sum[j] += x
			}
		}
		out = appendF32(out, sum)
	}
	return out
}

// allReduce all-reduces this rank's values on be and returns the bytes.
func allReduce(c dist.Comm, be kernels.Backend, r int) ([]byte, error) {
	bufs := make([]kernels.Buffer, len(lens))
	for i, l := range lens {
		bufs[i] = be.Alloc(kernels.F32, l)
		be.CopyIn(bufs[i], values(r, i, l))
	}
	if err := c.AllReduce(be, bufs...); err != nil {
		return nil, err
	}
	var out []byte
	for _, b := range bufs {
		h := make([]float32, b.Len())
		be.CopyOut(h, b)
		out = appendF32(out, h)
		be.Free(b)
	}
	return out, be.Sync()
}

func broadcast(c dist.Comm, be kernels.Backend, root int) (bool, error) {
	bufs := make([]kernels.Buffer, len(lens))
	for i, l := range lens {
		bufs[i] = be.Alloc(kernels.F32, l)
		if c.Rank() == root {
			be.CopyIn(bufs[i], values(root, i, l))
		}
	}
	if err := c.Broadcast(be, root, bufs...); err != nil {
		return false, err
	}
	ok := true
	for i, b := range bufs {
		h := make([]float32, b.Len())
		be.CopyOut(h, b)
		ok = ok && bytes.Equal(appendF32(nil, h), appendF32(nil, values(root, i, b.Len())))
		be.Free(b)
	}
	return ok, be.Sync()
}

// bandwidth times all-reduces of 256 MiB and prints the bus bandwidth
// (bytes each rank sends and receives: 2·(N−1)/N of the buffer, per second).
func bandwidth(c dist.Comm, be kernels.Backend) error {
	const n, reps = 1 << 26, 5
	b := be.Alloc(kernels.F32, n)
	defer be.Free(b)
	be.Fill(b, 1)
	if err := c.AllReduce(be, b); err != nil { // warm-up: connections
		return err
	}
	t0 := time.Now()
	for range reps {
		if err := c.AllReduce(be, b); err != nil {
			return err
		}
	}
	dt := time.Since(t0).Seconds() / reps
	size := float64(c.Size())
	bus := 4 * n * 2 * (size - 1) / size / dt / 1e9
	fmt.Printf("ncclcheck: rank %d: all-reduce of 256 MiB: %.2f ms, bus bandwidth %.1f GB/s\n", c.Rank(), dt*1e3, bus)
	return be.Sync()
}

func appendF32(b []byte, v []float32) []byte {
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
