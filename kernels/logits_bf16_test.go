package kernels

import (
	"math"
	"slices"
	"testing"
)

// TestLogitsBF16: LogProbs, LogProbsBackward and Sample read BF16 logits a
// row at a time and give, bit for bit, what they give on the same logits
// stored F32.
func TestLogitsBF16(t *testing.T) {
	be := NewCPU()
	const N, V = 5, 1031
	x := randF32(N * V)
	for i, v := range x {
		x[i] = Float32FromBF16(BF16FromFloat32(4 * v))
	}
	lh, lf := be.Alloc(BF16, N*V), be.Alloc(F32, N*V)
	be.CopyIn(lh, x)
	be.CopyIn(lf, x)
	targets := []int32{3, -1, 1030, 0, 77}
	run := func(logits Buffer) ([]float32, []int32) {
		lp, lse, ent, dl := be.Alloc(F32, N), be.Alloc(F32, N), be.Alloc(F32, N), be.Alloc(F32, N*V)
		dlp := be.Alloc(F32, N)
		be.Fill(dlp, 0.75)
		be.LogProbs(lp, lse, ent, logits, targets, N, V)
		be.LogProbsBackward(dl, dlp, logits, lse, targets, N, V)
		ids := make([]int32, N)
		be.Sample(ids, logits, []float32{0.1, 0.9, 0.5, 0, 0.99}, N, V, SampleParams{Temperature: 0.8, TopP: 0.9})
		var out []float32
		for _, b := range []Buffer{lp, lse, ent, dl} {
			h := make([]float32, b.Len())
			be.CopyOut(h, b)
			out = append(out, h...)
		}
		if err := be.Sync(); err != nil {
			t.Fatal(err)
		}
		return out, ids
	}
	gh, ih := run(lh)
	gf, idf := run(lf)
	for i := range gf {
		if math.Float32bits(gh[i]) != math.Float32bits(gf[i]) {
			t.Fatalf("output %d: %v with bf16 logits, %v with f32", i, gh[i], gf[i])
		}
	}
	if !slices.Equal(ih, idf) {
		t.Errorf("Sample: %v with bf16 logits, %v with f32", ih, idf)
	}
}
