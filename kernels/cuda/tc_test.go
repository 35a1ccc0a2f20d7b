package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// TestEmulatorTensorCores checks the emulator's tensor-core primitives
// (tc.cuh) with one warp-level tile (emu/selftest.cu emu_mma_tile): the
// fragments ldmatrix_x4 hands each lane are the PTX ISA's A layout, written
// out here independently, and the three products D = A·B + C (B through
// ldmatrix x2, x2 .trans and x1 .trans; A through x4 and x1/x2) equal a
// plain float64 product of the bf16 values to float32 rounding — with the
// warp's lanes run forward, in reverse and shuffled (under ASan), so a
// layout that only works in one lane order fails. cp.async groups land at
// their wait and not before, zero-filling when told to.
func TestEmulatorTensorCores(t *testing.T) {
	for _, opt := range []EmuOptions{{}, {Order: 1}, {Order: 2, Seed: 3, ASan: true}, {Order: 2, Seed: 8}} {
		t.Run(fmt.Sprintf("order=%d,seed=%d,asan=%v", opt.Order, opt.Seed, opt.ASan), func(t *testing.T) {
			be := newEmu(t, opt)
			d := be.dev.(*emuDevice)
			r := rand.New(rand.NewPCG(uint64(opt.Seed), 7))
			up := func(b []byte) devPtr {
				p, err := d.alloc(int64(len(b)))
				if err != nil {
					t.Fatal(err)
				}
				if err := d.htod(p, b); err != nil {
					t.Fatal(err)
				}
				return p
			}
			bf := func(x []float32) []byte {
				b := make([]byte, 2*len(x))
				for i, v := range x {
					binary.LittleEndian.PutUint16(b[2*i:], kernels.BF16FromFloat32(v))
				}
				return b
			}
			rnd := func(n int) []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = kernels.Float32FromBF16(kernels.BF16FromFloat32(float32(r.NormFloat64())))
				}
				return x
			}
			A, B, C := rnd(16*16), rnd(16*8), rnd(16*8)
			Bn := make([]float32, 8*16) // Bᵀ: N×K
			for k := 0; k < 16; k++ {
				for n := 0; n < 8; n++ {
					Bn[n*16+k] = B[k*8+n]
				}
			}
			out, err := d.alloc(4 * 384)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := d.alloc(4 * 128)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.launch("emu_mma_tile", dim3{1, 1, 1}, dim3{32, 1, 1}, []arg{pArg(out), pArg(raw),
				pArg(up(bf(A))), pArg(up(bf(B))), pArg(up(bf(Bn))), pArg(up(f32bytes(C)))}); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, 384)
			if err := d.dtoh(f32bytes(got), out); err != nil {
				t.Fatal(err)
			}
			rb := make([]byte, 4*128)
			if err := d.dtoh(rb, raw); err != nil {
				t.Fatal(err)
			}
			// the ISA's A fragment: a[0] = A[g][2t..], a[1] = A[g+8][2t..],
			// a[2] = A[g][2t+8..], a[3] = A[g+8][2t+8..], low half first
			for l := 0; l < 32; l++ {
				g, tg := l>>2, l&3
				for i := 0; i < 4; i++ {
					row, col := g+8*(i&1), 2*tg+8*(i>>1)
					want := uint32(kernels.BF16FromFloat32(A[row*16+col])) | uint32(kernels.BF16FromFloat32(A[row*16+col+1]))<<16
					if g := binary.LittleEndian.Uint32(rb[4*(4*l+i):]); g != want {
						t.Errorf("lane %d a[%d] = %#08x, want %#08x (A[%d][%d..%d])", l, i, g, want, row, col, col+1)
					}
				}
			}
			for v, name := range []string{"x4 · x2", "x4 · x2.trans", "x1,x2 · x1.trans"} {
				for m := 0; m < 16; m++ {
					for n := 0; n < 8; n++ {
						want := float64(C[m*8+n])
						for k := 0; k < 16; k++ {
							want += float64(A[m*16+k]) * float64(B[k*8+n])
						}
						g := float64(got[128*v+m*8+n])
						if math.Abs(g-want) > 1e-5*(1+math.Abs(want)) {
							t.Errorf("%s: D[%d][%d] = %v, want %v", name, m, n, g, want)
						}
					}
				}
			}

			src := make([]float32, 256)
			for i := range src {
				src[i] = float32(i)
			}
			cp, err := d.alloc(4 * 512)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.launch("emu_cp_async_groups", dim3{1, 1, 1}, dim3{32, 1, 1}, []arg{pArg(cp), pArg(up(f32bytes(src)))}); err != nil {
				t.Fatal(err)
			}
			res := make([]float32, 512)
			if err := d.dtoh(f32bytes(res), cp); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 128; i++ {
				w1 := float32(128 + i)
				if (i/4)%2 == 1 {
					w1 = 0 // odd lanes zero-fill
				}
				for _, c := range []struct {
					what      string
					got, want float32
				}{
					{"group 0 after wait_group 1", res[i], float32(i)},
					{"group 1 before its wait", res[128+i], -1},
					{"group 0 after wait_group 0", res[256+i], float32(i)},
					{"group 1 after wait_group 0", res[384+i], w1},
				} {
					if c.got != c.want {
						t.Errorf("cp.async %s: element %d = %v, want %v", c.what, i, c.got, c.want)
					}
				}
			}
		})
	}
}
