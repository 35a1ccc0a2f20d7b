package kerneltest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/argrl/argrl/kernels"
)

// testMapped runs the read-only suite on backends that implement
// kernels.Mapper, mapping Go memory.
func testMapped(h *harness) {
	if _, ok := h.b.(kernels.Mapper); !ok {
		h.t.Skipf("%s does not implement kernels.Mapper", h.b.Name())
	}
	runReadOnly(h, goCopy)
}

// RunReadOnly checks the read-only buffers of a kernels.Mapper backend
// (RunAll runs it on Go memory). mapRO returns a read-only copy of data,
// at least 4-byte aligned and valid until the test ends: for instance a
// PROT_READ mmap of a file holding data, which turns any write into a
// crash. The suite checks that Map rejects misaligned memory and partial
// elements; that a mapped buffer and its views read back data; that every
// op of the catalogue, given a mapped buffer (or a view of one) for any
// buffer it writes, records an error and leaves the memory unchanged; that
// with a mapped buffer for any of its inputs it computes what it computes
// from an Alloc'd copy; and that Free leaves the memory alone.
func RunReadOnly(t *testing.T, b kernels.Backend, mapRO func(t *testing.T, data []byte) []byte) {
	t.Helper()
	if _, ok := b.(kernels.Mapper); !ok {
		t.Fatalf("%s does not implement kernels.Mapper", b.Name())
	}
	runReadOnly(&harness{t: t, b: b, r: rand.New(rand.NewPCG(5, 6))}, mapRO)
}

// goCopy is data in fresh Go memory, 8-byte aligned.
func goCopy(_ *testing.T, data []byte) []byte {
	w := make([]uint64, (len(data)+7)/8+1)
	out := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(data))
	copy(out, data)
	return out
}

// elemBytes is x stored as dt, little-endian (BF16 rounded as CopyIn does).
func elemBytes(x []float64, dt kernels.DType) []byte {
	if dt == kernels.F32 {
		f := make([]float32, len(x))
		for i, v := range x {
			f[i] = float32(v)
		}
		return f32Bytes(f)
	}
	b := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(b[2*i:], kernels.BF16FromFloat32(float32(v)))
	}
	return b
}

func runReadOnly(h *harness, mapRO func(t *testing.T, data []byte) []byte) {
	t, mp := h.t, h.b.(kernels.Mapper)
	mapOf := func(dt kernels.DType, x []float64) (kernels.Buffer, []byte) {
		t.Helper()
		raw := mapRO(t, elemBytes(x, dt))
		buf, err := mp.Map(dt, raw)
		if err != nil {
			t.Fatalf("Map(%v, %d bytes): %v", dt, len(raw), err)
		}
		return buf, raw
	}

	// Map's own checks.
	x := h.vec(10, 2)
	raw := mapRO(t, append(elemBytes(x, kernels.F32), 0, 0, 0, 0))
	for _, c := range []struct {
		dt  kernels.DType
		raw []byte
		why string
	}{
		{kernels.F32, raw[1:33], "misaligned f32"}, {kernels.F32, raw[2:34], "f32 at a 2-byte address"},
		{kernels.BF16, raw[1:21], "misaligned bf16"}, {kernels.F32, raw[:38], "partial f32 element"},
		{kernels.BF16, raw[:39], "partial bf16 element"}, {kernels.DType(9), raw[:40], "unknown dtype"},
	} {
		if _, err := mp.Map(c.dt, c.raw); err == nil {
			t.Errorf("Map accepted a %s", c.why)
		}
	}
	if e, err := mp.Map(kernels.BF16, raw[:0]); err != nil || e.Len() != 0 {
		t.Errorf("Map of no bytes: %v, %v", e, err)
	}
	h.sync()

	// Reading: whole buffers and views, F32 and BF16.
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		buf, _ := mapOf(dt, x)
		_, want := h.up(x, dt)
		if buf.Len() != len(x) || buf.DType() != dt {
			t.Fatalf("mapped %v buffer: Len %d DType %v", dt, buf.Len(), buf.DType())
		}
		approx(t, "mapped "+dt.String(), h.down(buf), want, 0, 0)
		approx(t, "view of mapped "+dt.String(), h.down(h.b.View(buf, 3, 4)), want[3:7], 0, 0)
	}

	for _, op := range catalogue() {
		vals := map[string][]float64{}
		for _, a := range op.args {
			vals[a.name] = h.vec(a.n, 2)
		}
		// build allocates every argument (inputs as dt), except that one,
		// if named, is mapped (as a view into a longer mapping if view).
		build := func(dt kernels.DType, mapped string, view bool) (map[string]kernels.Buffer, []byte) {
			bufs := map[string]kernels.Buffer{}
			var mraw []byte
			for _, a := range op.args {
				bt := kernels.F32
				if a.role == in || a.role == outAny {
					bt = dt
				}
				switch {
				case a.name == mapped && view:
					pad := append(append([]float64{9, 9}, vals[a.name]...), 9)
					var whole kernels.Buffer
					whole, mraw = mapOf(bt, pad)
					bufs[a.name] = h.b.View(whole, 2, a.n)
				case a.name == mapped:
					bufs[a.name], mraw = mapOf(bt, vals[a.name])
				default:
					bufs[a.name], _ = h.up(vals[a.name], bt)
				}
			}
			return bufs, mraw
		}
		for _, a := range op.args {
			dts := []kernels.DType{kernels.F32}
			if a.role == in || a.role == outAny {
				dts = append(dts, kernels.BF16)
			}
			for _, dt := range dts {
				what := fmt.Sprintf("%s with %s mapped (%v)", op.name, a.name, dt)
				if a.role == out || a.role == outAny {
					for _, view := range []bool{false, true} {
						bufs, mraw := build(dt, a.name, view)
						keep := slices.Clone(mraw)
						op.call(h.b, bufs)
						h.wantErr(what, "read-only")
						if !slices.Equal(mraw, keep) {
							t.Errorf("%s wrote the mapped memory", what)
						}
					}
					continue
				}
				ref, _ := build(dt, "", false)
				op.call(h.b, ref)
				got, _ := build(dt, a.name, false)
				op.call(h.b, got)
				h.sync()
				for _, o := range op.args {
					if (o.role == out || o.role == outAny) && !slices.Equal(h.bits(got[o.name]), h.bits(ref[o.name])) {
						t.Errorf("%s: %s differs from the run with %s Alloc'd", what, o.name, a.name)
					}
				}
			}
		}
	}

	// Free forgets the memory: it stays as it was, the buffer is dead.
	buf, mraw := mapOf(kernels.F32, x)
	keep := slices.Clone(mraw)
	h.b.Free(buf)
	h.b.CopyOut(make([]float32, len(x)), buf)
	if err := h.b.Sync(); err == nil || !strings.Contains(err.Error(), "CopyOut") {
		t.Errorf("CopyOut of a freed mapped buffer: error %v", err)
	}
	if !slices.Equal(mraw, keep) {
		t.Errorf("Free of a mapped buffer changed its memory")
	}
}
