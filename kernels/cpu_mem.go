package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// Memory of the CPU backend: Alloc'd buffers are Go slices; Map'd buffers
// are the caller's memory, read-only.

// cpuStore is the memory of one Alloc or Map.
type cpuStore struct {
	f     []float32 // F32
	h     []uint16  // BF16
	freed bool
	ro    bool // mapped: the caller's memory, never written
	// packs are the dot GEMM's packed copies of parts of a read-only BF16
	// store (cpu_prepack.go), dropped with it.
	packs *packCache
}

// cpuBuf is an Alloc'd or mapped buffer, or a view [off, off+n) of one.
type cpuBuf struct {
	st     *cpuStore
	off, n int
	dt     DType
	view   bool
}

func (b *cpuBuf) Len() int       { return b.n }
func (b *cpuBuf) DType() DType   { return b.dt }
func (b *cpuBuf) Live() bool     { return b != nil && b.st != nil && !b.st.freed }
func (b *cpuBuf) ReadOnly() bool { return b.st.ro }

// littleEndian: Upload copies raw bytes as they are and Map reinterprets
// them only on a little-endian host (all that argrl builds for today).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

var _ Mapper = (*cpuBackend)(nil)

func (c *cpuBackend) Alloc(dt DType, n int) Buffer {
	if n < 0 {
		c.fail(fmt.Errorf("cpu: Alloc: negative length %d", n))
		n = 0
	}
	st := &cpuStore{}
	switch dt {
	case F32:
		st.f = make([]float32, n)
	case BF16:
		st.h = make([]uint16, n)
	default:
		c.fail(fmt.Errorf("cpu: Alloc: unknown dtype %d", dt))
		dt = F32
		st.f = make([]float32, n)
	}
	return &cpuBuf{st: st, n: n, dt: dt}
}

// Map wraps raw (len(raw)/dt.Size() little-endian elements) as a read-only
// buffer without copying: every op that would write it records an error
// instead, so raw may be a PROT_READ mapping. raw must stay valid until the
// buffer is freed; Free forgets it without touching it.
func (c *cpuBackend) Map(dt DType, raw []byte) (Buffer, error) {
	es := dt.Size()
	switch {
	case es == 0:
		return nil, fmt.Errorf("cpu: Map: unknown dtype %d", dt)
	case len(raw)%es != 0:
		return nil, fmt.Errorf("cpu: Map: %d bytes is not a whole number of %v elements", len(raw), dt)
	case !littleEndian:
		return nil, errors.New("cpu: Map: big-endian host (checkpoint bytes are little-endian)")
	}
	n := len(raw) / es
	st := &cpuStore{ro: true}
	if n > 0 {
		p := unsafe.Pointer(unsafe.SliceData(raw))
		if uintptr(p)%uintptr(es) != 0 {
			return nil, fmt.Errorf("cpu: Map: address %#x is not aligned to the %d-byte %v element", uintptr(p), es, dt)
		}
		if dt == F32 {
			st.f = unsafe.Slice((*float32)(p), n)
		} else {
			st.h = unsafe.Slice((*uint16)(p), n)
		}
	}
	return &cpuBuf{st: st, n: n, dt: dt}, nil
}

func (c *cpuBackend) Free(b Buffer) {
	cb, ok := b.(*cpuBuf)
	if !ok || cb == nil {
		c.fail(fmt.Errorf("cpu: Free: not a cpu buffer (%T)", b))
		return
	}
	if cb.view {
		return
	}
	cb.st.freed = true
	cb.st.f, cb.st.h, cb.st.packs = nil, nil, nil
}

func (c *cpuBackend) View(b Buffer, off, n int) Buffer {
	k := c.check("View")
	cb := k.buf("b", b, 0, Read)
	if cb == nil {
		return &cpuBuf{st: &cpuStore{freed: true}, dt: F32, view: true}
	}
	if off < 0 || n < 0 || off+n > cb.n {
		k.Failf("[%d, %d) outside buffer of %d", off, off+n, cb.n)
		return &cpuBuf{st: &cpuStore{freed: true}, dt: cb.dt, view: true}
	}
	return &cpuBuf{st: cb.st, off: cb.off + off, n: n, dt: cb.dt, view: true}
}

func (c *cpuBackend) CopyIn(dst Buffer, src []float32) {
	k := c.check("CopyIn")
	d := k.buf("dst", dst, len(src), WriteAny)
	if k.Bad {
		return
	}
	if k.Exact("dst", "src", d.n, len(src)); k.Bad {
		return
	}
	if d.dt == F32 {
		copy(d.st.f[d.off:], src)
		return
	}
	h := d.st.h[d.off : d.off+d.n]
	for i, x := range src {
		h[i] = BF16FromFloat32(x)
	}
}

// Upload copies raw, d.Len() little-endian elements of d's dtype, into d
// (byte-swapping each element on a big-endian host).
func (c *cpuBackend) Upload(dst Buffer, raw []byte) {
	k := c.check("Upload")
	d := k.buf("dst", dst, 0, WriteAny)
	if k.Bad {
		return
	}
	es := d.dt.Size()
	if len(raw) != d.n*es {
		k.Failf("raw has %d bytes, dst's %d %v elements need %d", len(raw), d.n, d.dt, d.n*es)
		return
	}
	mem := d.bytes()
	if littleEndian {
		copy(mem, raw)
		return
	}
	for i := 0; i < len(raw); i += es {
		for j := 0; j < es; j++ {
			mem[i+j] = raw[i+es-1-j]
		}
	}
}

// bytes is the memory of b's elements.
func (b *cpuBuf) bytes() []byte {
	if b.n == 0 {
		return nil
	}
	if b.dt == F32 {
		return unsafe.Slice((*byte)(unsafe.Pointer(&b.st.f[b.off])), 4*b.n)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&b.st.h[b.off])), 2*b.n)
}

func (c *cpuBackend) CopyOut(dst []float32, src Buffer) {
	k := c.check("CopyOut")
	s := k.buf("src", src, len(dst), Read)
	if k.Bad {
		return
	}
	if k.Exact("src", "dst", s.n, len(dst)); k.Bad {
		return
	}
	if s.dt == F32 {
		copy(dst, s.st.f[s.off:s.off+s.n])
		return
	}
	for i, h := range s.st.h[s.off : s.off+s.n] {
		dst[i] = Float32FromBF16(h)
	}
}

func (c *cpuBackend) Copy(dst, src Buffer) {
	k := c.check("Copy")
	d := k.buf("dst", dst, 0, WriteAny)
	s := k.buf("src", src, 0, Read)
	if k.Bad {
		return
	}
	if d.n != s.n || d.dt != s.dt {
		k.Failf("dst is %d×%v, src %d×%v", d.n, d.dt, s.n, s.dt)
		return
	}
	if d.dt == F32 {
		copy(d.st.f[d.off:d.off+d.n], s.st.f[s.off:s.off+s.n])
	} else {
		copy(d.st.h[d.off:d.off+d.n], s.st.h[s.off:s.off+s.n])
	}
}

func (c *cpuBackend) Convert(dst, src Buffer) {
	k := c.check("Convert")
	d := k.buf("dst", dst, 0, WriteAny)
	s := k.buf("src", src, 0, Read)
	if k.Bad {
		return
	}
	if d.n != s.n {
		k.Failf("dst has %d elements, src %d", d.n, s.n)
		return
	}
	switch {
	case d.dt == F32 && s.dt == F32:
		copy(d.st.f[d.off:d.off+d.n], s.st.f[s.off:s.off+s.n])
	case d.dt == BF16 && s.dt == BF16:
		copy(d.st.h[d.off:d.off+d.n], s.st.h[s.off:s.off+s.n])
	case d.dt == BF16:
		for i, x := range s.st.f[s.off : s.off+s.n] {
			d.st.h[d.off+i] = BF16FromFloat32(x)
		}
	default:
		for i, h := range s.st.h[s.off : s.off+s.n] {
			d.st.f[d.off+i] = Float32FromBF16(h)
		}
	}
}

func (c *cpuBackend) Fill(dst Buffer, v float32) {
	k := c.check("Fill")
	d := k.buf("dst", dst, 0, WriteAny)
	if k.Bad {
		return
	}
	if d.dt == F32 {
		f := d.st.f[d.off : d.off+d.n]
		for i := range f {
			f[i] = v
		}
		return
	}
	h, hv := d.st.h[d.off:d.off+d.n], BF16FromFloat32(v)
	for i := range h {
		h[i] = hv
	}
}
