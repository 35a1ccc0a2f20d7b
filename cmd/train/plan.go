package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/plan"
)

// train plan: the performance model of one step (model/plan, docs/gpu.md
// "Performance model").
func init() { root.AddCommand(newPlanCmd()) }

// ceilingsFile is the --ceilings JSON: measured figures that replace the
// datasheet's (every key optional; unknown keys are an error).
type ceilingsFile struct {
	PeakTFLOPS     *float64 `json:"peak_tflops"`
	GEMMTFLOPS     *float64 `json:"gemm_tflops"`
	CopyGBps       *float64 `json:"copy_gbps"`
	AttnFrac       *float64 `json:"attn_frac"`
	DecodeAttnFrac *float64 `json:"decode_attn_frac"`
}

func readCeilings(path string, g *plan.GPU) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var c ceilingsFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("%s: %w (keys: peak_tflops, gemm_tflops, copy_gbps, attn_frac, decode_attn_frac)", path, err)
	}
	for _, f := range []struct {
		key string
		v   *float64
		dst *float64
	}{{"peak_tflops", c.PeakTFLOPS, &g.PeakTFLOPS}, {"gemm_tflops", c.GEMMTFLOPS, &g.GEMMTFLOPS}, {"copy_gbps", c.CopyGBps, &g.CopyGBps},
		{"attn_frac", c.AttnFrac, &g.AttnFrac}, {"decode_attn_frac", c.DecodeAttnFrac, &g.DecodeAttnFrac}} {
		if f.v == nil {
			continue
		}
		if !(*f.v > 0) {
			return fmt.Errorf("%s: key %q: %v, want > 0", path, f.key, *f.v)
		}
		*f.dst = *f.v
	}
	return nil
}

func newPlanCmd() *cobra.Command {
	var modelDir, gpuName, ceilings string
	var w plan.Work
	var rank int
	var gemm, copyBW, attnFrac, decFrac float64
	var asJSON bool
	c := &cobra.Command{
		Use:   "plan --model DIR [--gpu h200] [--algo grpo|sft] [--ceilings F.json] [--json]",
		Short: "predict one training step on a GPU: FLOPs, bytes and time per phase, MFU",
		Long: `Print the performance model of one step (docs/gpu.md, "Performance model"): for
each phase (GRPO: rollout prefill and decode, reference and old log-probs, training
forward and backward; SFT: the training passes) its FLOPs (GEMMs and attention), the
bytes it moves (weights, KV cache, activations and logits), the time it would take at
the GPU's ceilings and what bounds it; then the step's time and MFU and issue 32's
targets. Every time and MFU is a prediction.

Ceilings are the datasheet's (--gpu h200, h100, a100) with the documented
efficiencies, replaced by measured ones from --ceilings (JSON with any of
peak_tflops, gemm_tflops, copy_gbps, attn_frac, decode_attn_frac; gpu-check writes
them) or the flags. Only config.json is read from --model.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelDir == "" {
				return fmt.Errorf("plan: --model is required")
			}
			cfg, err := model.LoadConfig(modelDir)
			if err != nil {
				return fmt.Errorf("plan: %w", err)
			}
			if rank < 0 {
				return fmt.Errorf("plan: --lora-r %d: want ≥ 0", rank)
			}
			g, err := plan.Datasheet(gpuName)
			if err != nil {
				return err
			}
			if ceilings != "" {
				if err := readCeilings(ceilings, &g); err != nil {
					return fmt.Errorf("plan: --ceilings %w", err)
				}
			}
			for _, f := range []struct {
				name string
				v    float64
				dst  *float64
			}{{"gemm-tflops", gemm, &g.GEMMTFLOPS}, {"copy-gbps", copyBW, &g.CopyGBps}, {"attn-frac", attnFrac, &g.AttnFrac},
				{"decode-attn-frac", decFrac, &g.DecodeAttnFrac}} {
				if cmd.Flags().Changed(f.name) {
					if !(f.v > 0) {
						return fmt.Errorf("plan: --%s %v: want > 0", f.name, f.v)
					}
					*f.dst = f.v
				}
			}
			p, err := plan.Step(plan.ShapeOf(cfg, rank), g, w)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				e := json.NewEncoder(out)
				e.SetIndent("", "  ")
				return e.Encode(p)
			}
			return printPlan(out, p, modelDir)
		},
	}
	f := c.Flags()
	f.StringVar(&modelDir, "model", "", "model directory (its config.json)")
	f.StringVar(&gpuName, "gpu", "h200", "datasheet ceilings: h200, h100 or a100")
	f.StringVar(&ceilings, "ceilings", "", "measured ceilings (JSON, see --help)")
	f.StringVar(&w.Algo, "algo", "grpo", "grpo or sft")
	f.IntVar(&rank, "lora-r", 32, "LoRA rank on q,k,v,o,gate,up,down (0: full fine-tuning)")
	f.IntVar(&w.Prompts, "prompts", 16, "grpo: prompts per step")
	f.IntVar(&w.G, "g", 8, "grpo: samples per prompt")
	f.IntVar(&w.PromptLen, "prompt-len", 1024, "grpo: prompt tokens")
	f.IntVar(&w.RespLen, "resp-len", 512, "grpo: response tokens")
	f.IntVar(&w.Seqs, "seqs", 8, "sft: sequences per step")
	f.IntVar(&w.SeqLen, "seq-len", 1536, "sft: tokens per sequence")
	f.IntVar(&w.MicroBatch, "micro-batch", 8, "sequences per training micro-batch")
	f.Float64Var(&gemm, "gemm-tflops", 0, "measured bf16 GEMM TFLOP/s (default 0.75 × peak)")
	f.Float64Var(&copyBW, "copy-gbps", 0, "measured copy bandwidth GB/s (default 0.9 × HBM)")
	f.Float64Var(&attnFrac, "attn-frac", 0, "attention rate / GEMM rate (default 0.35)")
	f.Float64Var(&decFrac, "decode-attn-frac", 0, "decode attention KV bandwidth / copy bandwidth (default 0.6)")
	f.BoolVar(&asJSON, "json", false, "print the plan as JSON")
	return c
}

func printPlan(out io.Writer, p *plan.Plan, modelDir string) error {
	s, g := p.Shape, p.GPU
	fmt.Fprintf(out, "plan: %s on one %s (predictions of the model in docs/gpu.md, not measurements)\n", p.Work.Algo, g.Name)
	fmt.Fprintf(out, "model %s: C %d, F %d, %d layers, %d/%d heads, D %d, V %d: %.3g B weights; LoRA r %d: %.3g M\n",
		modelDir, s.C, s.F, s.L, s.Hq, s.Hkv, s.D, s.V, float64(s.Params())/1e9, s.R, float64(s.LoRAParams())/1e6)
	fmt.Fprintf(out, "ceilings: peak %.0f TFLOP/s bf16, GEMM %.0f TFLOP/s, attention %.2f × GEMM, copy %.0f GB/s, decode attention %.2f × copy\n\n",
		g.PeakTFLOPS, g.GEMMTFLOPS, g.AttnFrac, g.CopyGBps, g.DecodeAttnFrac)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tGEMM TFLOP\tattn TFLOP\tweights GB\tKV GB\tact GB\ttime s\tshare\tbound\t")
	for _, ph := range p.Phases {
		share := 0.0
		if p.Seconds > 0 {
			share = ph.Seconds / p.Seconds
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.0f%%\t%s\t\n", ph.Name, ph.GEMMFLOPs/1e12, ph.AttnFLOPs/1e12,
			ph.WeightBytes/1e9, ph.KVBytes/1e9, ph.ActBytes/1e9, ph.Seconds, 100*share, ph.Bound)
	}
	fmt.Fprintf(tw, "step\t\t\t\t\t\t%.3f\t\t\t\n", p.Seconds)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ph := range p.Phases {
		if ph.Note != "" {
			fmt.Fprintf(out, "  %s: %s\n", ph.Name, ph.Note)
		}
	}
	fmt.Fprintf(out, "\nstep: %.1f TFLOP in %.3f s (predicted): MFU %.1f%% of %.0f TFLOP/s\n", p.FLOPs/1e12, p.Seconds, 100*p.MFU, g.PeakTFLOPS)
	fmt.Fprintln(out, "issue 32's targets on the model (predictions):")
	for _, t := range p.Targets {
		fmt.Fprintf(out, "  %-72s %5.1f%% %s (target ≥ %.0f%%)\n", t.Name, 100*t.Predicted, t.Unit, 100*t.Goal)
	}
	return nil
}
