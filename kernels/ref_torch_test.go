package kernels

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The references agree with PyTorch 1.13 (float64, autograd for the
// backward passes) on the fixtures that testdata/gen_torch_ref.py wrote:
// Hugging Face's RMSNorm, rotate-half RoPE, eager GQA attention with
// causal+padding masks (training, cached decode, explicit scale),
// log_softmax/logsumexp/entropy, F.silu·up, F.embedding, matmul, and
// torch.optim.AdamW over five steps.

type torchFixtures struct {
	MatMul []struct {
		M, N, K      int
		TA, TB       bool
		Alpha, Beta  float32
		A, B, C, Out []float64
	}
	Embedding struct {
		V, C                     int
		IDs                      []int32
		Table, Out, Dout, Dtable []float64
	}
	RMSNorm struct {
		N, C                          int
		Eps                           float64
		X, W, Out, Rstd, Dout, Dx, Dw []float64
	}
	RoPE struct {
		N, H, D, P                 int
		Pos                        []int32
		Cos, Sin, X, Out, Dout, Dx []float64
	}
	Attention []struct {
		B, Tq, Hq, Hkv, D, S, Tmax          int
		Slot, QPos, KLen                    []int32
		Scale                               float32
		Q, K, V, Out, Lse, Dout, Dq, Dk, Dv []float64
	}
	SwiGLU struct {
		N                               int
		Gate, Up, Out, Dout, Dgate, Dup []float64
	}
	LogProbs struct {
		N, V                               int
		Targets                            []int32
		Logits, Lp, Lse, Ent, Dlp, Dlogits []float64
	}
	AdamW struct {
		N                         int
		LR, Beta1, Beta2, Eps, WD float32
		P0                        []float64
		Grads, Params, M, V       [][]float64
	}
}

func loadTorch(t *testing.T) *torchFixtures {
	t.Helper()
	raw, err := os.ReadFile("testdata/torch_ref.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx torchFixtures
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatalf("testdata/torch_ref.json: %v", err)
	}
	return &fx
}

func near(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%s: %d values, want %d (fixture empty?)", what, len(got), len(want))
	}
	for i := range want {
		if math.IsInf(want[i], 0) && got[i] == want[i] {
			continue
		}
		if d := math.Abs(got[i] - want[i]); !(d <= 1e-9*(1+math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %.12g, PyTorch %.12g", what, i, got[i], want[i])
		}
	}
}

func TestRefsAgainstTorch(t *testing.T) {
	fx := loadTorch(t)
	if len(fx.MatMul) != 4 || len(fx.Attention) != 3 || len(fx.AdamW.Grads) != 5 {
		t.Fatalf("fixture incomplete: %d matmul, %d attention, %d adamw cases", len(fx.MatMul), len(fx.Attention), len(fx.AdamW.Grads))
	}
	for _, c := range fx.MatMul {
		out := append([]float64(nil), c.C...)
		RefMatMul(out, c.A, c.B, MatMulParams{Batch: 1, M: c.M, N: c.N, K: c.K, TransA: c.TA, TransB: c.TB, Alpha: c.Alpha, Beta: c.Beta})
		near(t, "matmul", out, c.Out)
	}

	e := fx.Embedding
	out := make([]float64, len(e.IDs)*e.C)
	RefEmbedding(out, e.Table, e.IDs, e.C)
	near(t, "embedding", out, e.Out)
	dtab := make([]float64, e.V*e.C)
	RefEmbeddingBackward(dtab, e.Dout, e.IDs, e.C)
	near(t, "embedding backward", dtab, e.Dtable)

	r := fx.RMSNorm
	o, rs := make([]float64, r.N*r.C), make([]float64, r.N)
	RefRMSNorm(o, rs, r.X, r.W, r.N, r.C, r.Eps)
	near(t, "rmsnorm", o, r.Out)
	near(t, "rmsnorm rstd", rs, r.Rstd)
	dx, dw := make([]float64, r.N*r.C), make([]float64, r.C)
	RefRMSNormBackward(dx, dw, r.Dout, r.X, r.W, rs, r.N, r.C)
	near(t, "rmsnorm dx", dx, r.Dx)
	near(t, "rmsnorm dw", dw, r.Dw)

	p := fx.RoPE
	o = make([]float64, p.N*p.H*p.D)
	RefRoPE(o, p.X, p.Cos, p.Sin, p.Pos, p.N, p.H, p.D, false)
	near(t, "rope", o, p.Out)
	RefRoPE(o, p.Dout, p.Cos, p.Sin, p.Pos, p.N, p.H, p.D, true)
	near(t, "rope backward", o, p.Dx)

	for _, a := range fx.Attention {
		ap := AttnParams{B: a.B, Tq: a.Tq, Hq: a.Hq, Hkv: a.Hkv, D: a.D, S: a.S, Tmax: a.Tmax, Slot: a.Slot, QPos: a.QPos, KLen: a.KLen, Scale: a.Scale}
		nq, nkv := a.B*a.Tq*a.Hq*a.D, a.S*a.Tmax*a.Hkv*a.D
		o, l := make([]float64, nq), make([]float64, a.B*a.Tq*a.Hq)
		RefAttention(o, l, a.Q, a.K, a.V, ap)
		near(t, "attention out", o, a.Out)
		near(t, "attention lse", l, a.Lse)
		dq, dk, dv := make([]float64, nq), make([]float64, nkv), make([]float64, nkv)
		RefAttentionBackward(dq, dk, dv, a.Dout, a.Q, a.K, a.V, o, l, ap)
		near(t, "attention dq", dq, a.Dq)
		near(t, "attention dk", dk, a.Dk)
		near(t, "attention dv", dv, a.Dv)
	}

	s := fx.SwiGLU
	o = make([]float64, s.N)
	RefSwiGLU(o, s.Gate, s.Up, 1, s.N, s.N)
	near(t, "swiglu", o, s.Out)
	dg, du := make([]float64, s.N), make([]float64, s.N)
	RefSwiGLUBackward(dg, du, s.Dout, s.Gate, s.Up, 1, s.N, s.N)
	near(t, "swiglu dgate", dg, s.Dgate)
	near(t, "swiglu dup", du, s.Dup)

	lp := fx.LogProbs
	lpv, lse, ent := make([]float64, lp.N), make([]float64, lp.N), make([]float64, lp.N)
	RefLogProbs(lpv, lse, ent, lp.Logits, lp.Targets, lp.N, lp.V)
	near(t, "logprobs lp", lpv, lp.Lp)
	near(t, "logprobs lse", lse, lp.Lse)
	near(t, "logprobs entropy", ent, lp.Ent)
	dl := make([]float64, lp.N*lp.V)
	RefLogProbsBackward(dl, lp.Dlp, lp.Logits, lse, lp.Targets, lp.N, lp.V)
	near(t, "logprobs backward", dl, lp.Dlogits)

	w := fx.AdamW
	param := append([]float64(nil), w.P0...)
	m, v := make([]float64, w.N), make([]float64, w.N)
	for step := range w.Grads {
		RefAdamW(param, w.Grads[step], m, v, w.N, AdamWParams{LR: w.LR, Beta1: w.Beta1, Beta2: w.Beta2, Eps: w.Eps, WeightDecay: w.WD, Step: step + 1})
		near(t, "adamw m", m, w.M[step])
		near(t, "adamw v", v, w.V[step])
		near(t, "adamw param", param, w.Params[step])
	}
}
