package kerneltest

import (
	"fmt"
	"math"
	"slices"

	"github.com/argrl/argrl/kernels"
)

// testInputsUnchanged runs every op of the catalogue with all read-only
// inputs F32 and again with them BF16 (MatMul's A included), each output a
// buffer of its own, and requires every input buffer and host side input
// to hold the same bits afterwards. (Ops documented as in place may alias
// an output with an input; with distinct outputs nothing may change.)
func testInputsUnchanged(h *harness) {
	for _, op := range catalogue() {
		for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
			what := fmt.Sprintf("%s (inputs %v)", op.name, dt)
			bufs := map[string]kernels.Buffer{}
			before := map[string][]uint32{}
			for _, a := range op.args {
				bt := kernels.F32
				if a.role == in || a.role == outAny {
					bt = dt
				}
				buf, _ := h.up(h.vec(a.n, 2), bt)
				bufs[a.name] = buf
				if a.role == in || a.role == inF32 {
					before[a.name] = h.bits(buf)
				}
			}
			ints := make([][]int32, len(op.ints))
			for i, x := range op.ints {
				ints[i] = slices.Clone(x)
			}
			floats := make([][]uint32, len(op.floats))
			for i, x := range op.floats {
				floats[i] = f32Bits(x)
			}
			op.call(h.b, bufs)
			h.sync()
			for _, a := range op.args {
				if w, ok := before[a.name]; ok && !slices.Equal(h.bits(bufs[a.name]), w) {
					h.t.Errorf("%s changed its input %s", what, a.name)
				}
			}
			for i, x := range op.ints {
				if !slices.Equal(x, ints[i]) {
					h.t.Errorf("%s changed host input %d: %v, was %v", what, i, x, ints[i])
				}
			}
			for i, x := range op.floats {
				if !slices.Equal(f32Bits(x), floats[i]) {
					h.t.Errorf("%s changed host float input %d", what, i)
				}
			}
			for _, buf := range bufs {
				h.b.Free(buf)
			}
		}
	}
}

// bits reads buf back (widening BF16 exactly) as float32 bit patterns.
func (h *harness) bits(buf kernels.Buffer) []uint32 {
	h.t.Helper()
	f := make([]float32, buf.Len())
	h.b.CopyOut(f, buf)
	h.sync()
	return f32Bits(f)
}

func f32Bits(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}
