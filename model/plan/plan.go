// Package plan is argrl's performance model of one training step on a GPU:
// the FLOPs and bytes of each phase (rollout prefill and decode, reference
// log-probabilities, old log-probabilities, the training forward and
// backward), the time each would take at the GPU's ceilings, and the MFU
// that follows. `train plan` prints it; docs/gpu.md ("Performance model")
// writes the arithmetic out. Every time and MFU it gives is a prediction.
package plan

import (
	"fmt"

	"github.com/argrl/argrl/model"
)

// Shape is what the model reads of a decoder (model.Config) and its LoRA.
type Shape struct {
	C, F, Hq, Hkv, D, L, V int
	Tied                   bool // lm_head shares the embedding (no extra bytes)
	// LoRA on q, k, v, o, gate, up, down with rank R (0: no adapters)
	R int
}

// ShapeOf reads a model's config.
func ShapeOf(c *model.Config, rank int) Shape {
	return Shape{C: c.HiddenSize, F: c.IntermediateSize, Hq: c.NumHeads, Hkv: c.NumKVHeads, D: c.HeadDim,
		L: c.NumLayers, V: c.VocabSize, Tied: c.TieWordEmbeddings, R: rank}
}

// linear is the (in, out) of every projection of one layer.
func (s Shape) linear() [][2]int {
	qd, kd := s.Hq*s.D, s.Hkv*s.D
	return [][2]int{{s.C, qd}, {s.C, kd}, {s.C, kd}, {qd, s.C}, {s.C, s.F}, {s.C, s.F}, {s.F, s.C}}
}

// LayerParams is the weights of one layer's projections (biases and norms
// are counted in Params but move no FLOPs worth counting).
func (s Shape) LayerParams() int64 {
	var n int64
	for _, m := range s.linear() {
		n += int64(m[0]) * int64(m[1])
	}
	return n
}

// LoRAParams is r·(in+out) summed over the adapted projections of all layers.
func (s Shape) LoRAParams() int64 {
	var n int64
	for _, m := range s.linear() {
		n += int64(s.R) * int64(m[0]+m[1])
	}
	return n * int64(s.L)
}

// Params counts the weights: layers, embedding, untied head.
func (s Shape) Params() int64 {
	n := s.LayerParams()*int64(s.L) + int64(s.V)*int64(s.C)
	if !s.Tied {
		n += int64(s.V) * int64(s.C)
	}
	return n
}

// GPU holds the ceilings the model divides by.
type GPU struct {
	Name string
	// PeakTFLOPS is the dense bf16 tensor-core peak (datasheet): the MFU
	// denominator.
	PeakTFLOPS float64
	// GEMMTFLOPS is the bf16 GEMM rate reached at training shapes (measured
	// by gpu-check, or GEMMEff·PeakTFLOPS by default).
	GEMMTFLOPS float64
	// AttnFrac is attention's rate (forward and backward) as a fraction of
	// GEMMTFLOPS: issue 32's target, 0.35, until measured.
	AttnFrac float64
	// HBMGBps is the datasheet memory bandwidth; CopyGBps what a copy
	// kernel reaches (measured, or CopyEff·HBMGBps by default).
	HBMGBps, CopyGBps float64
	// DecodeAttnFrac is decode attention's bandwidth on the KV bytes as a
	// fraction of CopyGBps: issue 32's target, 0.6, until measured.
	DecodeAttnFrac float64
}

// Defaults applied to datasheet figures (assumptions, documented in
// docs/gpu.md; measured ceilings replace them).
const (
	GEMMEff        = 0.75 // cuBLASLt bf16 at 7B training shapes, of peak
	CopyEff        = 0.90 // a streaming copy, of the datasheet bandwidth
	AttnFrac       = 0.35
	DecodeAttnFrac = 0.60
)

// Datasheet returns the named GPU (h200, h100, a100) at the defaults.
func Datasheet(name string) (GPU, error) {
	var peak, hbm float64
	switch name {
	case "h200": // H200 SXM: 989 dense bf16 TFLOP/s, 4.8 TB/s HBM3e
		peak, hbm = 989, 4800
	case "h100": // H100 SXM: 989 TFLOP/s, 3.35 TB/s HBM3
		peak, hbm = 989, 3350
	case "a100": // A100 SXM 80 GB: 312 TFLOP/s, 2.039 TB/s HBM2e
		peak, hbm = 312, 2039
	default:
		return GPU{}, fmt.Errorf("plan: unknown GPU %q (h200, h100, a100)", name)
	}
	return GPU{Name: name, PeakTFLOPS: peak, GEMMTFLOPS: GEMMEff * peak, AttnFrac: AttnFrac,
		HBMGBps: hbm, CopyGBps: CopyEff * hbm, DecodeAttnFrac: DecodeAttnFrac}, nil
}

// Work is one step's workload.
type Work struct {
	Algo string // "sft" or "grpo"
	// SFT: Seqs sequences of SeqLen tokens. GRPO: Prompts prompts of
	// PromptLen tokens, G samples each of RespLen tokens; training runs on
	// the Prompts·G sequences of PromptLen+RespLen tokens.
	Seqs, SeqLen       int
	Prompts, G         int
	PromptLen, RespLen int
	MicroBatch         int // sequences per training micro-batch (weights re-read per micro-batch)
}

// Phase is one phase of a step: its work by kind and the predicted time.
type Phase struct {
	Name string `json:"name"`
	// GEMMFLOPs: projections, LoRA and the LM head; AttnFLOPs: Q·Kᵀ and P·V
	// (and their backward); FLOPs is their sum.
	GEMMFLOPs float64 `json:"gemm_flops"`
	AttnFLOPs float64 `json:"attn_flops"`
	FLOPs     float64 `json:"flops"`
	// Bytes moved through HBM: weights, KV cache, activations (elementwise
	// kernels), logits.
	WeightBytes float64 `json:"weight_bytes"`
	KVBytes     float64 `json:"kv_bytes"`
	ActBytes    float64 `json:"act_bytes"`
	Bytes       float64 `json:"bytes"`
	// Seconds predicted; Bound names the ceiling that sets most of it.
	Seconds float64 `json:"seconds"`
	Bound   string  `json:"bound"`
	Note    string  `json:"note,omitempty"`
}

// Plan is the step.
type Plan struct {
	GPU     GPU     `json:"gpu"`
	Shape   Shape   `json:"shape"`
	Work    Work    `json:"work"`
	Phases  []Phase `json:"phases"`
	FLOPs   float64 `json:"flops"`
	Seconds float64 `json:"seconds"`
	// MFU = FLOPs / (Seconds · PeakTFLOPS), counting the FLOPs the step does.
	MFU     float64  `json:"mfu"`
	Targets []Target `json:"targets"`
	// Predicted holds the figures make gpu-check measures, by its row keys
	// (docs/gpu.md): ceilings, decode tokens/s at B = 64 and 256 with a
	// 1,536-token context, LoRA SFT tokens/s at T = 1,024 and 1,536 (8
	// sequences), this step's seconds, and ρ − 1 (0 by design).
	Predicted map[string]float64 `json:"predicted"`
}

// Target is one of issue 32's targets as the model predicts it.
type Target struct {
	Name      string  `json:"name"`
	Predicted float64 `json:"predicted"`
	Goal      float64 `json:"goal"`
	Unit      string  `json:"unit"`
}
