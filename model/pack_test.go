package model

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/argrl/argrl/kernels"
	_ "github.com/argrl/argrl/kernels/cuda" // registers cuda-emu
)

// packSeqs are sequences of lengths on both sides of the CPU attention's
// 64-row tile (the fixtures' MaxLen is 128), in random fixture tokens.
func packSeqs(V int) [][]int32 {
	r := rand.New(rand.NewPCG(34, 1))
	var out [][]int32
	for _, n := range []int{100, 3, 70, 128, 1, 40, 65, 2} {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(r.IntN(V))
		}
		out = append(out, s)
	}
	return out
}

// packedVsUnpacked runs Forward and Step on the same sequences packed
// (Options.Pack) and one per row, and returns the worst per-token
// difference of the outputs (log-probs, entropies, values) and the worst
// relative difference of the gradients, failing on a zero gradient.
func packedVsUnpacked(t *testing.T, m *Model, seqs [][]int32) (outDiff, gradDiff float64) {
	t.Helper()
	run := func(pack bool) (*Outputs, [][]float32) {
		m.opt.Pack = pack
		defer func() { m.opt.Pack = false }()
		o, err := m.Forward(seqs, true)
		if err != nil {
			t.Fatal(err)
		}
		m.ZeroGrad()
		if err := m.Step(seqs, weightedGrad(seqs, true)); err != nil {
			t.Fatal(err)
		}
		var g [][]float32
		for _, p := range m.Trainable() {
			g = append(g, readGrad(m, p))
		}
		return o, g
	}
	po, pg := run(true)
	uo, ug := run(false)
	for _, pair := range [][2][][]float32{{po.LogProbs, uo.LogProbs}, {po.Entropy, uo.Entropy}, {po.Values, uo.Values}} {
		for b := range pair[0] {
			for i, x := range pair[0][b] {
				outDiff = math.Max(outDiff, math.Abs(float64(x)-float64(pair[1][b][i])))
			}
		}
	}
	for i, p := range m.Trainable() {
		if slices.Equal(ug[i], make([]float32, len(ug[i]))) {
			t.Errorf("%s: zero gradient", p.Name)
		}
		gradDiff = math.Max(gradDiff, relErr32(pg[i], ug[i]))
	}
	return outDiff, gradDiff
}

// TestPackedEqualsUnpacked: a packed micro-batch gives the per-token
// log-probs, entropies and values of the same sequences one per row bit
// for bit on the CPU (what keeps ρ − 1 = 0 with packing), and the same
// gradients within float32 rounding (they sum in another order).
func TestPackedEqualsUnpacked(t *testing.T) {
	for _, name := range []string{"qwen2-f32", "qwen3-bf16-sharded", "llama-f32", "qwen3-f32-tied"} {
		t.Run(name, func(t *testing.T) {
			o := withAdapter(name)
			o.ValueHead = true
			m := openFixture(t, name, o)
			out, grad := packedVsUnpacked(t, m, packSeqs(m.Config.VocabSize))
			if out != 0 {
				t.Errorf("packed outputs differ from unpacked by up to %.3g (want bit-identical)", out)
			}
			if grad > 1e-6 {
				t.Errorf("packed gradients differ from unpacked by %.2e relative (tol 1e-6)", grad)
			}
			t.Logf("outputs identical; worst relative gradient difference %.2e", grad)
		})
	}
}

// TestPackedEqualsUnpackedCUDAEmu is the same comparison on the CUDA
// backend's kernels (the CPU emulator): the f32 attention restarts its key
// tiles at each sequence's KStart, so the outputs are bit-identical there
// too; the gradients within float32 rounding (measured identical).
func TestPackedEqualsUnpackedCUDAEmu(t *testing.T) {
	if testing.Short() {
		t.Skip("cuda-emu: -short")
	}
	be, err := kernels.Open("cuda-emu")
	if err != nil {
		t.Skipf("cuda-emu: %v", err)
	}
	defer be.Close()
	const name = "qwen2-f32"
	o := withAdapter(name)
	o.ValueHead = true
	m, err := Open(filepath.Join(fixtures, name), be, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	seqs := packSeqs(m.Config.VocabSize)[:5]
	out, grad := packedVsUnpacked(t, m, seqs)
	if out != 0 {
		t.Errorf("cuda-emu: packed outputs differ from unpacked by up to %.3g (want bit-identical)", out)
	}
	if grad > 1e-6 {
		t.Errorf("cuda-emu: packed gradients differ from unpacked by %.2e relative (tol 1e-6)", grad)
	}
	t.Logf("cuda-emu: outputs %.3g apart, gradients %.2e relative", out, grad)
}

// TestPackRound: packed rows waste less than 1/64 of their tokens.
func TestPackRound(t *testing.T) {
	for _, n := range []int{1, 15, 16, 17, 63, 1000, 1024, 1025, 4097, 8191, 8192, 8193, 100003} {
		T := packRound(n, 16)
		if T < n || float64(T-n) > math.Max(15, float64(n)/64) {
			t.Errorf("packRound(%d) = %d", n, T)
		}
	}
}
