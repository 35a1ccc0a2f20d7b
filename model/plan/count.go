package plan

import (
	"fmt"
	"math"
)

// The counts below are per token unless named otherwise; docs/gpu.md
// ("Performance model") has them as formulas.

// GEMMForward is the projection FLOPs of n tokens (2 per multiply-add),
// LoRA adapters included when lora, plus the LM head on head tokens.
func (s Shape) GEMMForward(n, head int64, lora bool) float64 {
	f := 2 * float64(s.LayerParams()) * float64(s.L) * float64(n)
	if lora {
		f += 2 * float64(s.LoRAParams()) * float64(n)
	}
	return f + 2*float64(s.C)*float64(s.V)*float64(head)
}

// GEMMBackward is the backward of GEMMForward with the base weights
// frozen: one product per projection for the input gradient, and LoRA's
// two (input gradient through B·A, and dA, dB). R = 0 means full
// fine-tuning: every projection also gets its weight gradient.
func (s Shape) GEMMBackward(n, head int64) float64 {
	f := 2*float64(s.LayerParams())*float64(s.L)*float64(n) + 2*float64(s.C)*float64(s.V)*float64(head)
	if s.R > 0 {
		return f + 4*float64(s.LoRAParams())*float64(n)
	}
	return 2 * f
}

// Keys is Σ over n causal queries at positions p0..p0+n−1 of the keys each
// sees (p+1).
func Keys(p0, n int64) float64 {
	return float64(n)*float64(p0) + float64(n)*float64(n+1)/2
}

// AttnForward is Q·Kᵀ and P·V over all layers for keys (query, key)
// pairs: 2 products × 2 FLOPs × D per pair and query head.
func (s Shape) AttnForward(keys float64) float64 {
	return 4 * float64(s.D) * float64(s.Hq) * float64(s.L) * keys
}

// AttnBackwardRatio: recomputing S, then dV = Pᵀ·dO, dP = dO·Vᵀ,
// dQ = dS·K, dK = dSᵀ·Q: five products for the forward's two.
const AttnBackwardRatio = 2.5

// WeightBytes is one read of the bf16 weights the matmuls touch (layers
// and LM head; the embedding is gathered row by row) plus the f32 LoRA
// tensors.
func (s Shape) WeightBytes() float64 {
	return 2*(float64(s.LayerParams())*float64(s.L)+float64(s.V)*float64(s.C)) + 4*float64(s.LoRAParams())
}

// KVBytesPerKey is one token's K and V over all layers in the bf16 cache.
func (s Shape) KVBytesPerKey() float64 { return 2 * 2 * float64(s.L) * float64(s.Hkv) * float64(s.D) }

// ElemBytesForward is what the elementwise kernels of one token's training
// forward read and write through HBM (f32 activations: the training
// graph's nodes are f32), in the bf16 tensor-core modes with fused
// projections: per layer two RMSNorms (read and write C each), two
// residual adds (read 2C, write C), the fused q/k/v and gate/up outputs
// cut into their parts (kernels.ColumnBlock: read and write qd+2kd and
// 2F), RoPE on q and k (read and write), SwiGLU (one kernel: read 2F,
// write F); the q/k/v biases are added in the fused GEMM's epilogue
// (cuBLASLt's bias), so no bias pass; then the logits (written by the
// head, read by the log-softmax) where head.
func (s Shape) ElemBytesForward(head bool) float64 {
	qd, kd := float64(s.Hq*s.D), float64(s.Hkv*s.D)
	C, F := float64(s.C), float64(s.F)
	perLayer := 4*C + 6*C + 2*(qd+2*kd) + 2*2*F + 2*(qd+kd) + 3*F
	b := 4 * perLayer * float64(s.L)
	if head {
		b += 2 * 4 * float64(s.V)
	}
	return b
}

// ElemBytesDecode is the decoder's eager pass (KVCache), per token and
// layer in bytes: the two pre-norms read x in f32 and write their output
// in bf16 (eagerOps.preNorm: 2·(4C + 2C)); two residual adds (4·2·3C);
// the fused q/k/v output's parts copied out (read and write, 8·(qd+2kd));
// the attention prologue as one kernel (rope.cu rope_kv: reads q, k and v
// once, writes the rotated q; k and v go to the KV cache, counted in
// KVBytesPerKey); SwiGLU reading gate and up in place in the fused
// [n, 2F] output (no copy: the LoRA branches accumulate into its column
// blocks) and writing F (4·3F); then the logits where head.
func (s Shape) ElemBytesDecode(head bool) float64 {
	qd, kd := float64(s.Hq*s.D), float64(s.Hkv*s.D)
	C, F := float64(s.C), float64(s.F)
	perLayer := 2*(4*C+2*C) + 4*2*3*C + 8*(qd+2*kd) + 4*(qd+2*kd+qd) + 4*3*F
	b := perLayer * float64(s.L)
	if head {
		b += 2 * 4 * float64(s.V)
	}
	return b
}

// StashBytes is what one token's training forward keeps for the backward
// per layer in bf16 (docs: x, the norm outputs, attention out, residual:
// 5C; q, k, v; gate, up, silu·up: 3F; LoRA A·x: 7r), written once and read
// once.
func (s Shape) StashBytes() float64 {
	qd, kd := float64(s.Hq*s.D), float64(s.Hkv*s.D)
	return 2 * (5*float64(s.C) + qd + 2*kd + 3*float64(s.F) + 7*float64(s.R)) * float64(s.L)
}

// phase fills the derived fields of p from its work and the ceilings:
// GEMMs take max(FLOPs/GEMM rate, weight bytes/copy bandwidth) (a decode
// step's GEMMs are bound by reading the weights), attention max(FLOPs/
// attention rate, KV bytes/(DecodeAttnFrac·copy bandwidth)), elementwise
// kernels their bytes at the copy bandwidth; kernels run one after another
// on one stream, so the parts add.
func (g GPU) phase(p Phase) Phase {
	p.FLOPs = p.GEMMFLOPs + p.AttnFLOPs
	p.Bytes = p.WeightBytes + p.KVBytes + p.ActBytes
	parts := []struct {
		name string
		t    float64
	}{
		{"GEMM compute", p.GEMMFLOPs / (g.GEMMTFLOPS * 1e12)},
		{"weight bandwidth", p.WeightBytes / (g.CopyGBps * 1e9)},
		{"attention compute", p.AttnFLOPs / (g.AttnFrac * g.GEMMTFLOPS * 1e12)},
		{"KV bandwidth", p.KVBytes / (g.DecodeAttnFrac * g.CopyGBps * 1e9)},
		{"elementwise bandwidth", p.ActBytes / (g.CopyGBps * 1e9)},
	}
	gemm, attn := math.Max(parts[0].t, parts[1].t), math.Max(parts[2].t, parts[3].t)
	p.Seconds = gemm + attn + parts[4].t
	best := 0
	for i, q := range parts {
		if q.t > parts[best].t {
			best = i
		}
	}
	if p.Seconds > 0 {
		p.Bound = parts[best].name
	}
	return p
}

// Validate checks the workload.
func (w Work) Validate() error {
	switch w.Algo {
	case "sft":
		if w.Seqs <= 0 || w.SeqLen <= 0 {
			return fmt.Errorf("plan: sft needs sequences > 0 and a sequence length > 0 (got %d, %d)", w.Seqs, w.SeqLen)
		}
	case "grpo":
		if w.Prompts <= 0 || w.G <= 0 || w.PromptLen <= 0 || w.RespLen <= 0 {
			return fmt.Errorf("plan: grpo needs prompts, g, prompt and response lengths > 0 (got %d, %d, %d, %d)",
				w.Prompts, w.G, w.PromptLen, w.RespLen)
		}
	default:
		return fmt.Errorf("plan: algo %q: want sft or grpo", w.Algo)
	}
	if w.MicroBatch <= 0 {
		return fmt.Errorf("plan: micro-batch %d: want > 0", w.MicroBatch)
	}
	return nil
}

// Step predicts one step of w on g, and issue 32's targets.
func Step(s Shape, g GPU, w Work) (*Plan, error) {
	p, err := step(s, g, w)
	if err != nil {
		return nil, err
	}
	p.Targets = targets(s, g)
	p.Predicted = predicted(s, g, p)
	return p, nil
}

// predicted evaluates the model at gpu-check's measurements.
func predicted(s Shape, g GPU, p *Plan) map[string]float64 {
	m := map[string]float64{"copy_gb_s": g.CopyGBps, "gemm_bf16_tflops": g.GEMMTFLOPS, "ratio_dev_first": 0}
	if p.Work.Algo == "grpo" {
		m["grpo_step_s"] = p.Seconds
	}
	for _, B := range []int64{64, 256} {
		const ctx = 1536
		keys := float64(B) * ctx
		ph := g.phase(Phase{GEMMFLOPs: s.GEMMForward(B, B, s.R > 0), AttnFLOPs: s.AttnForward(keys),
			WeightBytes: s.WeightBytes(), KVBytes: keys * s.KVBytesPerKey(), ActBytes: float64(B) * s.ElemBytesDecode(true)})
		m[fmt.Sprintf("decode_b%d_tok_s", B)] = float64(B) / ph.Seconds
	}
	for _, T := range []int{1024, 1536} {
		if sft, err := step(s, g, Work{Algo: "sft", Seqs: 8, SeqLen: T, MicroBatch: 8}); err == nil {
			m[fmt.Sprintf("sft_t%d_tok_s", T)] = float64(8*T) / sft.Seconds
		}
	}
	return m
}

func step(s Shape, g GPU, w Work) (*Plan, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if s.L <= 0 || s.C <= 0 || s.Hq <= 0 || s.Hkv <= 0 || s.D <= 0 || s.V <= 0 {
		return nil, fmt.Errorf("plan: model shape %+v has a zero dimension", s)
	}
	if g.GEMMTFLOPS <= 0 || g.CopyGBps <= 0 || g.PeakTFLOPS <= 0 || g.AttnFrac <= 0 || g.DecodeAttnFrac <= 0 {
		return nil, fmt.Errorf("plan: GPU ceilings %+v must be > 0", g)
	}
	p := &Plan{GPU: g, Shape: s, Work: w}
	seqs, T := int64(w.Seqs), int64(w.SeqLen)
	if w.Algo == "grpo" {
		P, G, Tp, R := int64(w.Prompts), int64(w.G), int64(w.PromptLen), int64(w.RespLen)
		seqs, T = P*G, Tp+R
		lora := s.R > 0
		// prefill each prompt once (the cache is forked G ways); logits of the last token
		p.Phases = append(p.Phases, g.phase(Phase{Name: "rollout prefill",
			GEMMFLOPs: s.GEMMForward(P*Tp, P, lora), AttnFLOPs: s.AttnForward(float64(P) * Keys(0, Tp)),
			WeightBytes: s.WeightBytes(), ActBytes: float64(P*Tp) * s.ElemBytesDecode(false),
			Note: fmt.Sprintf("%d prompts × %d tokens", P, Tp)}))
		// R decode steps of P·G sequences; step i reads Tp+i keys per sequence
		keys := float64(P*G) * Keys(Tp, R)
		p.Phases = append(p.Phases, g.phase(Phase{Name: "rollout decode",
			GEMMFLOPs: s.GEMMForward(P*G*R, P*G*R, lora), AttnFLOPs: s.AttnForward(keys),
			WeightBytes: float64(R) * s.WeightBytes(), KVBytes: keys * s.KVBytesPerKey(),
			ActBytes: float64(P*G*R) * s.ElemBytesDecode(true),
			Note:     fmt.Sprintf("%d steps × %d sequences", R, P*G)}))
		nmb := (seqs + int64(w.MicroBatch) - 1) / int64(w.MicroBatch)
		fwdKeys := float64(seqs) * Keys(0, T)
		p.Phases = append(p.Phases, g.phase(Phase{Name: "reference log-probs",
			GEMMFLOPs: s.GEMMForward(seqs*T, seqs*T, false), AttnFLOPs: s.AttnForward(fwdKeys),
			WeightBytes: float64(nmb) * s.WeightBytes(), ActBytes: float64(seqs*T) * s.ElemBytesForward(true),
			Note: "adapters off, no stash"}))
		p.Phases = append(p.Phases, Phase{Name: "old log-probs", Note: "none: π_old is the sampler's (ρ ≡ 1)"})
	}
	nmb := (seqs + int64(w.MicroBatch) - 1) / int64(w.MicroBatch)
	N := seqs * T
	keys := float64(seqs) * Keys(0, T)
	p.Phases = append(p.Phases, g.phase(Phase{Name: "train forward",
		GEMMFLOPs: s.GEMMForward(N, N, s.R > 0), AttnFLOPs: s.AttnForward(keys),
		WeightBytes: float64(nmb) * s.WeightBytes(), ActBytes: float64(N) * (s.ElemBytesForward(true) + s.StashBytes()/2),
		Note: fmt.Sprintf("%d sequences × %d tokens, %d micro-batches", seqs, T, nmb)}))
	p.Phases = append(p.Phases, g.phase(Phase{Name: "train backward",
		GEMMFLOPs: s.GEMMBackward(N, N), AttnFLOPs: AttnBackwardRatio * s.AttnForward(keys),
		WeightBytes: float64(nmb) * s.WeightBytes(),
		ActBytes:    float64(N) * (2*s.ElemBytesForward(false) + 3*4*float64(s.V) + s.StashBytes()/2)}))
	for _, ph := range p.Phases {
		p.FLOPs += ph.FLOPs
		p.Seconds += ph.Seconds
	}
	if p.Seconds > 0 {
		p.MFU = p.FLOPs / (p.Seconds * g.PeakTFLOPS * 1e12)
	}
	return p, nil
}

// targets evaluates issue 32's targets on the model: the 7B-shape LoRA
// SFT step at T = 1,536 (8 sequences per micro-batch), attention's rate
// and decode attention's bandwidth (both inputs of the model until a GPU
// measures them).
func targets(s Shape, g GPU) []Target {
	var out []Target
	lora := s
	if lora.R == 0 {
		lora.R = 32
	}
	if sft, err := step(lora, g, Work{Algo: "sft", Seqs: 8, SeqLen: 1536, MicroBatch: 8}); err == nil {
		out = append(out, Target{Name: fmt.Sprintf("LoRA r=%d SFT step MFU at T = 1,536 (8 sequences)", lora.R), Predicted: sft.MFU, Goal: 0.40, Unit: "of peak"})
	}
	out = append(out,
		Target{Name: "attention fwd+bwd rate at T = 1,536 (model input --attn-frac)", Predicted: g.AttnFrac, Goal: 0.35, Unit: "of the bf16 GEMM rate"},
		Target{Name: "decode attention KV bandwidth at B = 64 (model input --decode-attn-frac)", Predicted: g.DecodeAttnFrac, Goal: 0.60, Unit: "of copy bandwidth"})
	return out
}
