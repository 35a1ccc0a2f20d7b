package plan

import (
	"math"
	"testing"

	"github.com/argrl/argrl/model"
)

// tiny is the hand-count shape: C 4, F 6, Hq 2, Hkv 1, D 2, one layer,
// V 10, LoRA r 1. Per layer the projections hold q 4·4 + k 4·2 + v 4·2 +
// o 4·4 + gate, up, down 3·4·6 = 120 weights; LoRA r·(in+out) = 8 + 6 + 6
// + 8 + 10 + 10 + 10 = 58.
var tiny = Shape{C: 4, F: 6, Hq: 2, Hkv: 1, D: 2, L: 1, V: 10, R: 1}

var testGPU = GPU{Name: "test", PeakTFLOPS: 100, GEMMTFLOPS: 50, AttnFrac: 0.5, HBMGBps: 1000, CopyGBps: 500, DecodeAttnFrac: 0.5}

func phases(t *testing.T, p *Plan) map[string]Phase {
	m := map[string]Phase{}
	for _, ph := range p.Phases {
		m[ph.Name] = ph
	}
	return m
}

// TestFLOPsHandCount checks every phase's FLOPs against a count by hand.
func TestFLOPsHandCount(t *testing.T) {
	if tiny.LayerParams() != 120 || tiny.LoRAParams() != 58 {
		t.Fatalf("layer params %d, LoRA %d; want 120, 58", tiny.LayerParams(), tiny.LoRAParams())
	}
	// elementwise bytes per token, tiny (C = 4, qd = 4, kd = 2, F = 6):
	// training, f32, per layer norms 4·4 + adds 6·4 + q/k/v split copies
	// 2·(4+4) + gate/up split copies 2·12 + RoPE 2·(4+2) + SwiGLU 3·6 = 110
	// elements (no bias pass: folded), head 2·10: 4·(110+20) = 520 bytes;
	// decoding, per layer bytes: pre-norms 2·(16+8) = 48, adds 4·2·12 = 96,
	// q/k/v split copy 8·8 = 64, the fused prologue reads q, k, v and
	// writes q 4·12 = 48, SwiGLU in place 4·18 = 72: 328, head 80: 408
	if f, d := tiny.ElemBytesForward(true), tiny.ElemBytesDecode(true); f != 520 || d != 408 {
		t.Errorf("elementwise bytes per token: training %v, decode %v; by hand 520, 408", f, d)
	}

	// SFT, 2 sequences × 3 tokens = 6 tokens, each query sees 1, 2, 3 keys:
	//   GEMM fwd  2·120·6 + LoRA 2·58·6 + head 2·4·10·6 = 1440 + 696 + 480 = 2616
	//   attn fwd  12 (query, key) pairs × 4·D·Hq·L = 12·16 = 192
	//   GEMM bwd  input gradients 1440 + head 480 + LoRA 4·58·6 = 1392: 3312
	//   attn bwd  2.5 · 192 = 480
	sft, err := Step(tiny, testGPU, Work{Algo: "sft", Seqs: 2, SeqLen: 3, MicroBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	ph := phases(t, sft)
	for _, c := range []struct {
		name       string
		gemm, attn float64
	}{{"train forward", 2616, 192}, {"train backward", 3312, 480}} {
		if got := ph[c.name]; got.GEMMFLOPs != c.gemm || got.AttnFLOPs != c.attn {
			t.Errorf("sft %s: GEMM %v attention %v FLOPs; by hand %v, %v", c.name, got.GEMMFLOPs, got.AttnFLOPs, c.gemm, c.attn)
		}
	}
	if sft.FLOPs != 6600 {
		t.Errorf("sft step: %v FLOPs, by hand 6600", sft.FLOPs)
	}

	// GRPO, 1 prompt of 2 tokens, G 2, 2 response tokens (sequences of 4):
	//   prefill   GEMM 2·120·2 + 2·58·2 + head on the last token 80 = 792; attn 3 pairs → 48
	//   decode    4 tokens: 960 + 464 + 320 = 1744; keys 2·(3 + 4) = 14 → 224;
	//             KV bytes 14 keys × 2 (K, V) × 2 B × L·Hkv·D = 14·8 = 112
	//   reference 8 tokens, adapters off: 1920 + 640 = 2560; 2·(1+2+3+4) = 20 pairs → 320
	//   train fwd 1920 + 928 + 640 = 3488, 320; bwd 1920 + 640 + 4·58·8 = 4416, 800
	grpo, err := Step(tiny, testGPU, Work{Algo: "grpo", Prompts: 1, G: 2, PromptLen: 2, RespLen: 2, MicroBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	ph = phases(t, grpo)
	for _, c := range []struct {
		name       string
		gemm, attn float64
	}{{"rollout prefill", 792, 48}, {"rollout decode", 1744, 224}, {"reference log-probs", 2560, 320},
		{"old log-probs", 0, 0}, {"train forward", 3488, 320}, {"train backward", 4416, 800}} {
		if got := ph[c.name]; got.GEMMFLOPs != c.gemm || got.AttnFLOPs != c.attn {
			t.Errorf("grpo %s: GEMM %v attention %v FLOPs; by hand %v, %v", c.name, got.GEMMFLOPs, got.AttnFLOPs, c.gemm, c.attn)
		}
	}
	if grpo.FLOPs != 14712 {
		t.Errorf("grpo step: %v FLOPs, by hand 14712", grpo.FLOPs)
	}
	if kv := ph["rollout decode"].KVBytes; kv != 112 {
		t.Errorf("decode KV bytes %v, by hand 112", kv)
	}
	// decode's time: GEMMs bound by 2 weight reads (bf16 layer and head
	// 2·(120 + 40) B + f32 LoRA 4·58 B = 552 B each) at 500 GB/s, attention
	// by its KV bytes at half of that, elementwise kernels by their bytes
	d := ph["rollout decode"]
	if d.WeightBytes != 2*552 {
		t.Errorf("decode weight bytes %v, by hand 1104", d.WeightBytes)
	}
	want := math.Max(1744/50e12, 2*552/500e9) + math.Max(224/25e12, 112/250e9) + d.ActBytes/500e9
	if math.Abs(d.Seconds-want) > 1e-9*want {
		t.Errorf("decode time %v s, want %v", d.Seconds, want)
	}
	if mfu := grpo.FLOPs / (grpo.Seconds * 100e12); math.Abs(grpo.MFU-mfu) > 1e-12 {
		t.Errorf("MFU %v, want %v", grpo.MFU, mfu)
	}
}

// The 7B shape read from its config: 7,615,283,200 matmul weights (the
// model's 7,615,616,512 less q/k/v biases and norms).
func TestQwen7BShape(t *testing.T) {
	c, err := model.LoadConfig("testdata/qwen2.5-7b")
	if err != nil {
		t.Fatal(err)
	}
	s := ShapeOf(c, 32)
	if s.Params() != 7_615_283_200 {
		t.Errorf("params %d, want 7,615,283,200", s.Params())
	}
	if s.LoRAParams() != 80_740_352 {
		t.Errorf("LoRA r=32 params %d, want 80,740,352 (2,883,584 per layer)", s.LoRAParams())
	}
	g, _ := Datasheet("h200")
	p, err := Step(s, g, Work{Algo: "grpo", Prompts: 16, G: 8, PromptLen: 1024, RespLen: 512, MicroBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	if p.MFU <= 0 || p.MFU >= 1 || len(p.Targets) != 3 {
		t.Errorf("MFU %v, %d targets", p.MFU, len(p.Targets))
	}
	// gpu-check's keys (docs/gpu.md): every one it can fill from the model
	for _, k := range []string{"copy_gb_s", "gemm_bf16_tflops", "decode_b64_tok_s", "decode_b256_tok_s", "sft_t1024_tok_s",
		"sft_t1536_tok_s", "grpo_step_s", "ratio_dev_first"} {
		if v, ok := p.Predicted[k]; !ok || v < 0 || (k != "ratio_dev_first" && v == 0) {
			t.Errorf("predicted %s = %v (present %v)", k, v, ok)
		}
	}
	if p.Predicted["grpo_step_s"] != p.Seconds || !(p.Predicted["decode_b256_tok_s"] > p.Predicted["decode_b64_tok_s"]) {
		t.Errorf("predicted %v", p.Predicted)
	}
}

func TestBadInput(t *testing.T) {
	for _, w := range []Work{{Algo: "dpo", MicroBatch: 1}, {Algo: "sft", Seqs: 0, SeqLen: 3, MicroBatch: 1},
		{Algo: "grpo", Prompts: 1, G: 0, PromptLen: 1, RespLen: 1, MicroBatch: 1}, {Algo: "sft", Seqs: 1, SeqLen: 1}} {
		if _, err := Step(tiny, testGPU, w); err == nil {
			t.Errorf("%+v: no error", w)
		}
	}
	if _, err := Datasheet("v100"); err == nil {
		t.Error("unknown GPU: no error")
	}
}
