package kerneltest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/argrl/argrl/kernels"
)

// testMemory: Alloc zero-fills; CopyIn/CopyOut round-trip F32 exactly and
// BF16 with round-to-nearest-even; Fill, Copy and View share storage.
func testMemory(h *harness) {
	t, b := h.t, h.b
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		z := b.Alloc(dt, 13)
		if z.Len() != 13 || z.DType() != dt {
			t.Fatalf("Alloc(%v, 13) gave Len %d DType %v", dt, z.Len(), z.DType())
		}
		for i, v := range h.down(z) {
			if v != 0 {
				t.Fatalf("Alloc(%v) not zero-filled at %d: %v", dt, i, v)
			}
		}
		b.Free(z)
	}

	x := h.vec(29, 3)
	buf, _ := h.up(x, kernels.F32)
	approx(t, "f32 round trip", h.down(buf), x, 0, 0)

	// BF16: exact halfway cases round to even, NaN stays NaN. The expected
	// values are what PyTorch 1.13 gives for x.to(torch.bfloat16).float().
	in := []float32{1, 1.00390625, 1.01171875, -2.5, 3.0e38, float32(math.Inf(-1)), 1e-3}
	want := []float64{1, 1, 1.015625, -2.5, 3.00405527047391e38, math.Inf(-1), 0.00099945068359375}
	hb := b.Alloc(kernels.BF16, len(in))
	b.CopyIn(hb, in)
	got := h.down(hb)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) && got[i] != want[i] {
			t.Errorf("bf16 round trip of %v = %v, want %v", in[i], got[i], want[i])
		}
	}
	b.CopyIn(b.View(hb, 0, 1), []float32{float32(math.NaN())})
	if v := h.down(hb)[0]; !math.IsNaN(v) {
		t.Errorf("bf16 NaN round trip gave %v", v)
	}

	// Fill, View, Copy.
	f := h.zeros(10)
	b.Fill(f, 2.5)
	v := b.View(f, 3, 4)
	if v.Len() != 4 {
		t.Fatalf("View len %d, want 4", v.Len())
	}
	b.Fill(v, -1)
	src := h.f32([]float64{7, 8})
	b.Copy(b.View(f, 8, 2), src)
	approx(t, "Fill/View/Copy", h.down(f), []float64{2.5, 2.5, 2.5, -1, -1, -1, -1, 2.5, 7, 8}, 0, 0)
	approx(t, "View read", h.down(b.View(f, 2, 3)), []float64{2.5, -1, -1}, 0, 0)
	fb := b.Alloc(kernels.BF16, 3)
	b.Fill(fb, 1.00390625)
	approx(t, "bf16 Fill", h.down(fb), []float64{1, 1, 1}, 0, 0)
	fb2 := b.Alloc(kernels.BF16, 3)
	b.Copy(fb2, fb)
	approx(t, "bf16 Copy", h.down(fb2), []float64{1, 1, 1}, 0, 0)
	for _, x := range []kernels.Buffer{buf, hb, f, src, fb, fb2} {
		b.Free(x)
	}
	testConvert(h)
}

// testConvert: F32 → BF16 rounds to nearest even as CopyIn does (the
// halfway cases, NaN), BF16 → F32 is exact, equal dtypes copy, views work.
func testConvert(h *harness) {
	t, b := h.t, h.b
	in := []float32{1, 1.00390625, 1.01171875, -2.5, 3.0e38, float32(math.Inf(-1)), 1e-3, float32(math.NaN())}
	src := b.Alloc(kernels.F32, len(in))
	b.CopyIn(src, in)
	want := b.Alloc(kernels.BF16, len(in))
	b.CopyIn(want, in)
	hb := b.Alloc(kernels.BF16, len(in))
	b.Convert(hb, src)
	if g, w := h.bits(hb), h.bits(want); !slices.Equal(g, w) {
		t.Errorf("Convert f32 → bf16 = %v, want the CopyIn rounding %v", h.down(hb), h.down(want))
	}
	back := h.zeros(len(in))
	b.Convert(back, hb)
	if g, w := h.bits(back), h.bits(want); !slices.Equal(g, w) {
		t.Errorf("Convert bf16 → f32 = %v, want %v exactly", h.down(back), h.down(want))
	}
	same := h.zeros(3)
	b.Convert(same, b.View(src, 2, 3))
	approx(t, "Convert f32 → f32 of a view", h.down(same), []float64{1.01171875, -2.5, float64(in[4])}, 0, 0)
	hb2 := b.Alloc(kernels.BF16, 2)
	b.Convert(hb2, b.View(hb, 0, 2))
	approx(t, "Convert bf16 → bf16", h.down(hb2), []float64{1, 1}, 0, 0)
	b.Convert(h.zeros(3), hb)
	h.wantErr("Convert length mismatch", "Convert")
	for _, x := range []kernels.Buffer{src, want, hb, back, same, hb2} {
		b.Free(x)
	}
}

// testErrors: bad arguments record an error that Sync returns once, and
// never panic or write out of bounds.
func testErrors(h *harness) {
	b := h.b
	a, c := h.zeros(6), h.zeros(4)
	short := h.zeros(3)
	b.MatMul(c, a, short, kernels.MatMulParams{Batch: 1, M: 2, N: 2, K: 3, Alpha: 1})
	h.wantErr("MatMul with short B", "MatMul")

	b.MatMul(c, a, a, kernels.MatMulParams{Batch: 2, M: 1, N: 2, K: 3, Alpha: 1, StrideA: 3})
	h.wantErr("MatMul with Batch 2 and StrideC 0", "StrideC")

	b.Copy(h.zeros(3), b.Alloc(kernels.BF16, 3))
	h.wantErr("Copy across dtypes", "Copy")

	b.CopyIn(c, make([]float32, 5))
	h.wantErr("CopyIn length mismatch", "CopyIn")

	b.View(c, 2, 3)
	h.wantErr("View out of range", "View")

	tab := h.zeros(4 * 3)
	out := h.zeros(2 * 3)
	b.Embedding(out, tab, []int32{1, 4}, 3)
	h.wantErr("Embedding id out of range", "Embedding")
	b.Embedding(out, nil, []int32{1, 2}, 3)
	h.wantErr("Embedding with nil table", "Embedding")

	lp, lse := h.zeros(2), h.zeros(2)
	b.LogProbs(lp, lse, nil, h.zeros(2*5), []int32{0, 5}, 2, 5)
	h.wantErr("LogProbs target out of range", "LogProbs")

	q := h.zeros(1 * 1 * 2 * 4)
	kv := h.zeros(1 * 3 * 1 * 4)
	b.Attention(q, h.zeros(2), q, kv, kv, kernels.AttnParams{B: 1, Tq: 1, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 3,
		QPos: []int32{3}, KLen: []int32{4}})
	h.wantErr("Attention with KLen > Tmax", "Attention")
	b.Attention(q, h.zeros(2), q, kv, kv, kernels.AttnParams{B: 1, Tq: 1, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 3,
		Slot: []int32{1}})
	h.wantErr("Attention with slot out of range", "Attention")
	b.Attention(q, h.zeros(2), q, kv, kv, kernels.AttnParams{B: 1, Tq: 1, Hq: 3, Hkv: 2, D: 4, S: 1, Tmax: 3})
	h.wantErr("Attention with Hq not a multiple of Hkv", "Attention")
	b.Attention(q, h.zeros(2), q, kv, kv, kernels.AttnParams{B: 1, Tq: 1, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 3,
		KStart: []int32{-1}})
	h.wantErr("Attention with a negative KStart", "Attention")
	b.Attention(q, h.zeros(2), q, kv, kv, kernels.AttnParams{B: 1, Tq: 2, Hq: 2, Hkv: 1, D: 4, S: 1, Tmax: 3,
		KStart: []int32{0}})
	h.wantErr("Attention with KStart shorter than B·Tq", "Attention")

	b.KVWrite(kv, h.zeros(2*4), []int32{0}, []int32{2}, 1, 2, 1, 4, 3)
	h.wantErr("KVWrite past Tmax", "KVWrite")

	// kv as 3 pages of 1 token.
	pg := kernels.AttnParams{B: 1, Tq: 1, Hq: 2, Hkv: 1, D: 4, S: 3, Tmax: 1, QPos: []int32{1}, KLen: []int32{2}, MaxPages: 2}
	pg.Pages = []int32{0, 3}
	b.Attention(q, h.zeros(2), q, kv, kv, pg)
	h.wantErr("Attention with a page out of range", "Attention")
	pg.Pages = []int32{0}
	b.Attention(q, h.zeros(2), q, kv, kv, pg)
	h.wantErr("Attention with a short page table", "Attention")
	pg.Pages, pg.KLen = []int32{0, 1}, []int32{3}
	b.Attention(q, h.zeros(2), q, kv, kv, pg)
	h.wantErr("Attention with KLen > MaxPages·Tmax", "Attention")
	pg.KLen, pg.Slot = []int32{2}, []int32{0}
	b.Attention(q, h.zeros(2), q, kv, kv, pg)
	h.wantErr("Attention with Slot and Pages", "Attention")
	pg.Slot = nil
	b.AttentionBackward(q, kv, kv, q, q, kv, kv, q, h.zeros(2), pg)
	h.wantErr("AttentionBackward with Pages", "AttentionBackward")
	b.KVScatter(kv, h.zeros(4), []int32{3}, []int32{0}, 1, 1, 4, 1)
	h.wantErr("KVScatter page out of range", "KVScatter")
	b.KVScatter(kv, h.zeros(4), []int32{0}, []int32{1}, 1, 1, 4, 1)
	h.wantErr("KVScatter offset past Tmax", "KVScatter")

	b.AdamW(a, a, c, c, 6, kernels.AdamWParams{LR: 1, Beta1: 0.9, Beta2: 0.99, Step: 1})
	h.wantErr("AdamW with short state", "AdamW")

	b.Dropout(a, a, 6, 1.5, 1)
	h.wantErr("Dropout with p > 1", "Dropout")

	// The first error wins; later ones do not replace it.
	b.CopyIn(c, make([]float32, 9))
	b.Dropout(a, a, 6, -1, 1)
	h.wantErr("two errors", "CopyIn")
}

// testUpload: Upload stores raw little-endian bytes as they are (every bit
// of F32 values, including -0, infinities and subnormals, and of BF16
// ones), into whole buffers and views; a byte count that is not exactly
// the buffer's records an error and writes nothing.
func testUpload(h *harness) {
	t, b := h.t, h.b
	f := []float32{1, -0.0, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -3.5, 65504, 0.1, float32(math.Pi)}
	buf := b.Alloc(kernels.F32, len(f))
	b.Upload(buf, f32Bytes(f))
	if got := h.bits(buf); !slices.Equal(got, f32Bits(f)) {
		t.Errorf("Upload f32: bits %x, want %x", got, f32Bits(f))
	}
	hs := []uint16{0x3f80, 0x8000, 0x7f80, 0xff80, 0x0001, 0xc060, 0x4049, 0x3dcd, 0x0000, 0xbf80, 0x4b00}
	raw := make([]byte, 2*len(hs))
	for i, v := range hs {
		binary.LittleEndian.PutUint16(raw[2*i:], v)
	}
	hb := b.Alloc(kernels.BF16, len(hs))
	b.Upload(hb, raw)
	for i, w := range h.bits(hb) {
		if w>>16 != uint32(hs[i]) || w&0xffff != 0 {
			t.Errorf("Upload bf16[%d] reads back as %#x, want %#x<<16", i, w, hs[i])
		}
	}
	// Into a view: the rest of the buffer is untouched.
	whole := h.f32([]float64{7, 7, 7, 7, 7})
	b.Upload(b.View(whole, 1, 3), f32Bytes([]float32{1, 2, 3}))
	approx(t, "Upload into a view", h.down(whole), []float64{7, 1, 2, 3, 7}, 0, 0)
	// Wrong lengths.
	for _, n := range []int{len(raw) - 1, len(raw) + 2, 0} {
		b.Upload(hb, make([]byte, n))
		h.wantErr(fmt.Sprintf("Upload of %d bytes into %d bf16", n, len(hs)), "Upload")
	}
	b.Upload(buf, f32Bytes(f)[:4*len(f)-2])
	h.wantErr("Upload of a partial f32 element", "Upload")
	if got := h.bits(buf); !slices.Equal(got, f32Bits(f)) {
		t.Errorf("failed Upload wrote the buffer")
	}
	b.Upload(b.Alloc(kernels.F32, 0), nil) // empty: nothing to do
	h.sync()
	dead := b.Alloc(kernels.F32, 2)
	b.Free(dead)
	b.Upload(dead, make([]byte, 8))
	h.wantErr("Upload into a freed buffer", "Upload")
	for _, x := range []kernels.Buffer{buf, hb, whole} {
		b.Free(x)
	}
}
