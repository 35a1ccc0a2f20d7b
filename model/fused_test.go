package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/argrl/argrl/kernels"
)

// openFused opens a fixture with the q/k/v and gate/up projections fused,
// as the CUDA backend does, on the CPU backend; with fold, Qwen2's q/k/v
// biases are added by the fused GEMM (as in the CUDA bf16 modes).
func openFused(t *testing.T, name string, o Options, fold bool) *Model {
	t.Helper()
	saved, savedFold := fuseProjections, foldBiases
	fuseProjections = func(kernels.Backend) bool { return true }
	foldBiases = func(kernels.Backend) bool { return fold }
	defer func() { fuseProjections, foldBiases = saved, savedFold }()
	m := openFixture(t, name, o)
	n := 0
	for i := range m.w.numLayers() {
		l := m.w.layer(i)
		if l.(attnLayer).attn().qkv != nil {
			n++
		}
		if l.(mlpLayer).mlp().gateUp != nil {
			n++
		}
	}
	nb := 0
	if fold && m.Config.AttentionBias {
		nb = m.Config.NumLayers // a bias buffer per layer
	}
	if n != 2*m.Config.NumLayers || len(m.fusedW) != n+nb {
		t.Fatalf("%s: %d fused groups (%d buffers), want %d", name, n, len(m.fusedW), 2*m.Config.NumLayers)
	}
	return m
}

func sameBits(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	for b := range want {
		if len(got[b]) != len(want[b]) {
			t.Fatalf("%s: row %d has %d values, want %d", what, b, len(got[b]), len(want[b]))
		}
		for i := range want[b] {
			if math.Float32bits(got[b][i]) != math.Float32bits(want[b][i]) {
				t.Fatalf("%s: [%d][%d] = %v, unfused %v", what, b, i, got[b][i], want[b][i])
			}
		}
	}
}

// TestFusedProjections: on every fixture, with the fixture's adapter on and
// off, a model whose q/k/v and gate/up run as one GEMM each gives the
// unfused model's log-probs bit for bit (training graph and KV-cache
// decode: on the CPU each output element is the same K-long sum whatever
// the GEMM's N), and its LoRA gradients within float32 rounding (the input
// gradient of a fused projection is one GEMM over the concatenated output
// gradients). Checkpoint names, adapter names and PEFT export are those of
// the unfused model; merged adapters run unfused and match too.
func TestFusedProjections(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			plain, fused := openFixture(t, name, withAdapter(name)), openFused(t, name, withAdapter(name), false)
			for _, on := range []bool{true, false} {
				for _, m := range []*Model{plain, fused} {
					if err := m.SetAdapters(on); err != nil {
						t.Fatal(err)
					}
				}
				want, err := plain.LogProbs(ref.Tokens, on)
				if err != nil {
					t.Fatal(err)
				}
				got, err := fused.LogProbs(ref.Tokens, on)
				if err != nil {
					t.Fatal(err)
				}
				sameBits(t, "graph log-probs", got, want)
				prompt := []int{5, 3, 7, 1}
				wd, wf, _ := decodeLogProbs(t, plain, ref.Tokens, prompt, 3)
				gd, gf, _ := decodeLogProbs(t, fused, ref.Tokens, prompt, 3)
				sameBits(t, "decode log-probs", append(gd, gf), append(wd, wf))
				if d := maxDiff(gd, got); d > 1e-5 {
					t.Errorf("adapters=%v: fused decode vs fused graph %.2e", on, d)
				}
			}
			for _, m := range []*Model{plain, fused} {
				if err := m.SetAdapters(true); err != nil {
					t.Fatal(err)
				}
				m.ZeroGrad()
				if err := m.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err != nil {
					t.Fatal(err)
				}
			}
			var worst float64
			for i, p := range plain.Trainable() {
				q := fused.Trainable()[i]
				if p.Name != q.Name {
					t.Fatalf("trainable %d: %s, unfused %s", i, q.Name, p.Name)
				}
				e := relErr32(readGrad(fused, q), readGrad(plain, p))
				worst = math.Max(worst, e)
				if e > 1e-5 {
					t.Errorf("%s: gradient relative error %.2e between fused and unfused", p.Name, e)
				}
			}
			t.Logf("worst LoRA gradient relative error fused vs unfused %.2e", worst)
			pa, err := plain.Adapter()
			if err != nil {
				t.Fatal(err)
			}
			fa, err := fused.Adapter()
			if err != nil {
				t.Fatal(err)
			}
			for path, l := range pa.Modules {
				if fl := fa.Modules[path]; fl == nil || fl.A.Name != l.A.Name || fl.B.Name != l.B.Name {
					t.Fatalf("adapter module %s: fused model names it differently", path)
				}
			}
			for _, m := range []*Model{plain, fused} {
				if err := m.Merge(); err != nil {
					t.Fatal(err)
				}
			}
			want, err := plain.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fused.LogProbs(ref.Tokens, true)
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, "merged log-probs", got, want)
		})
	}
}

// TestFusedBiasFolded: with Qwen2's q/k/v biases added by the fused GEMM
// (MatMulParams.Bias; the CUDA bf16 modes' cuBLASLt epilogue), before the
// LoRA branch as PEFT orders it, log-probs equal the unfused model's within
// float32 rounding (the bias and the branch are added in the other order)
// with the adapter on, and bit for bit with it off (nothing else is added);
// decoding gives the training graph's log-probs; LoRA gradients agree.
func TestFusedBiasFolded(t *testing.T) {
	for _, name := range []string{"qwen2-f32", "qwen2-bf16-tied"} {
		t.Run(name, func(t *testing.T) {
			ref := readFixtureRef(t, name)
			plain, fused := openFixture(t, name, withAdapter(name)), openFused(t, name, withAdapter(name), true)
			if fused.w.layer(0).(attnLayer).attn().qkv.bias == nil {
				t.Fatal("q/k/v biases not folded")
			}
			for _, on := range []bool{true, false} {
				for _, m := range []*Model{plain, fused} {
					if err := m.SetAdapters(on); err != nil {
						t.Fatal(err)
					}
				}
				want, err := plain.LogProbs(ref.Tokens, on)
				if err != nil {
					t.Fatal(err)
				}
				got, err := fused.LogProbs(ref.Tokens, on)
				if err != nil {
					t.Fatal(err)
				}
				if !on {
					sameBits(t, "log-probs without adapters", got, want)
				}
				d := maxDiff(got, want)
				dec, _, _ := decodeLogProbs(t, fused, ref.Tokens, []int{5, 3, 7, 1}, 3)
				dd := maxDiff(dec, got)
				t.Logf("adapters=%v: folded vs unfused max |Δ lp| %.2e; decode vs graph %.2e", on, d, dd)
				if d > 1e-5 || dd > 1e-5 {
					t.Errorf("adapters=%v: folded vs unfused %.2e, decode vs graph %.2e (tol 1e-5)", on, d, dd)
				}
			}
			for _, m := range []*Model{plain, fused} {
				if err := m.SetAdapters(true); err != nil {
					t.Fatal(err)
				}
				m.ZeroGrad()
				if err := m.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err != nil {
					t.Fatal(err)
				}
			}
			for i, p := range plain.Trainable() {
				if e := relErr32(readGrad(fused, fused.Trainable()[i]), readGrad(plain, p)); e > 1e-4 {
					t.Errorf("%s: gradient relative error %.2e between folded and unfused", p.Name, e)
				}
			}
		})
	}
}

// TestFusedOnCUDAEmuBF16: on the CUDA kernels (the emulator) in the bf16
// tensor-core mode with bf16 compute, the model fuses q/k/v (biases in the
// cuBLASLt epilogue) and gate/up, and runs the LoRA products on the tensor
// cores: log-probs and LoRA gradients agree with the CPU's float32 ones
// within bf16 tolerance (5e-2, as TestBF16MatchesF32), decoding gives the
// training graph's log-probs, and compute f32 on the same backend differs
// (the LoRA branches are then float32 products; the checkpoint is bf16, so
// its GEMMs run on the tensor cores in both).
func TestFusedOnCUDAEmuBF16(t *testing.T) {
	if testing.Short() {
		t.Skip("cuda-emu-bf16: -short")
	}
	const name = "qwen2-bf16-tied"
	ref := readFixtureRef(t, name)
	open := func(compute string) *Model {
		be, err := kernels.Open("cuda-emu-bf16")
		if err != nil {
			t.Skipf("cuda-emu-bf16: %v", err)
		}
		t.Cleanup(func() { be.Close() })
		o := withAdapter(name)
		o.Compute = compute
		m, err := Open(filepath.Join(fixtures, name), be, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}
	m, m16, cpu := open("bf16"), open("f32"), openFixture(t, name, withAdapter(name))
	if m.Compute() != "bf16" {
		t.Fatalf("compute %s on cuda-emu-bf16, want bf16", m.Compute())
	}
	if at := m.w.layer(0).(attnLayer).attn(); at.qkv == nil || at.qkv.bias == nil || m.w.layer(0).(mlpLayer).mlp().gateUp == nil {
		t.Fatal("projections not fused (or q/k/v biases not folded) on cuda-emu-bf16")
	}
	got, err := m.LogProbs(ref.Tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cpu.LogProbs(ref.Tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	f32lp, err := m16.LogProbs(ref.Tokens, true)
	if err != nil {
		t.Fatal(err)
	}
	dec, _, _ := decodeLogProbs(t, m, ref.Tokens, []int{5, 3, 7, 1}, 3)
	dCPU, dDec, dMode := maxDiff(got, want), maxDiff(dec, got), maxDiff(got, f32lp)
	t.Logf("vs cpu f32 %.2e; decode vs graph %.2e; compute bf16 vs f32 on the same backend %.2e", dCPU, dDec, dMode)
	if dCPU > 0.05 || dDec > 1e-5 || dMode == 0 {
		t.Errorf("log-probs: vs cpu %.2e (tol 5e-2), decode vs graph %.2e (tol 1e-5), bf16 vs f32 compute %.2e (want > 0)", dCPU, dDec, dMode)
	}
	for _, mm := range []*Model{m, cpu} {
		mm.ZeroGrad()
		if err := mm.Step(ref.Tokens, maskedNLLGrad(ref.LossMask)); err != nil {
			t.Fatal(err)
		}
	}
	var worst float64
	for i, p := range cpu.Trainable() {
		e := relErr32(readGrad(m, m.Trainable()[i]), readGrad(cpu, p))
		worst = math.Max(worst, e)
		if !(e < 0.05) {
			t.Errorf("%s: gradient relative difference %.2e from the CPU's f32 (tol 5e-2)", p.Name, e)
		}
	}
	t.Logf("worst LoRA gradient relative difference from the CPU's f32: %.2e", worst)
}
