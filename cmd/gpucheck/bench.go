package main

// The model-level measurements: a random checkpoint, decode throughput,
// LoRA SFT throughput and MFU. Each opens its own backend (one process per
// step, so a step's timeout or crash cannot take the others down) and
// reports the pool's peak and, on a GPU, the device's memory.

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/cuda"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/model/modeltest"
	"github.com/argrl/argrl/rollout"
	"github.com/argrl/argrl/trainer/optim"
)

// shapes are the checkpoints `gpucheck model` writes: Qwen2.5-7B, and a
// miniature with its GQA group (7 query heads per KV head) and MLP ratio
// for the dry run on the emulator, in two depths (gpucheck memory).
var shapes = map[string]modeltest.Shape{
	"7b":    modeltest.Qwen25_7B(),
	"tiny":  {ModelType: "qwen2", Hidden: 112, MLP: 592, Layers: 2, Heads: 7, KVHeads: 1, Vocab: 1024, Shards: 2, Seed: 1},
	"tiny6": {ModelType: "qwen2", Hidden: 112, MLP: 592, Layers: 6, Heads: 7, KVHeads: 1, Vocab: 1024, Shards: 1, Seed: 1},
}

// gpucheck model -shape 7b|tiny DIR
func runModel(args []string) error {
	fs := flag.NewFlagSet("model", flag.ContinueOnError)
	shape := fs.String("shape", "7b", "7b (Qwen2.5-7B, 15 GB), tiny or tiny6")
	out := fs.String("out", "", "summary JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, ok := shapes[*shape]
	if !ok || fs.NArg() != 1 {
		return fmt.Errorf("usage: gpucheck model -shape 7b|tiny|tiny6 DIR")
	}
	t0 := time.Now()
	n, err := modeltest.Write(fs.Arg(0), s)
	row := Row{Check: "checkpoint " + *shape + " (random bf16)", Status: statusOf(err),
		Value:  fmt.Sprintf("%s in %.1f s", gib(n), time.Since(t0).Seconds()),
		Detail: fmt.Sprintf("C %d, F %d, L %d, %d/%d heads, V %d", s.Hidden, s.MLP, s.Layers, s.Heads, s.KVHeads, s.Vocab)}
	if err != nil {
		row.Detail = err.Error()
	}
	return firstErr(err, writeRows(*out, row))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// openBackend opens a backend; cb is it as the CUDA backend (nil for cpu).
func openBackend(name string) (kernels.Backend, *cuda.Backend, error) {
	be, err := kernels.Open(name)
	if err != nil {
		return nil, nil, err
	}
	cb, _ := be.(*cuda.Backend)
	return be, cb, nil
}

// gib formats bytes in GiB, or MiB below 1 GiB.
func gib(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

// memNote is the pool's peak and the device's use (GPU only).
func memNote(cb *cuda.Backend) string {
	if cb == nil {
		return ""
	}
	s := cb.MemStats()
	note := fmt.Sprintf("pool peak %s", gib(s.DevicePeak))
	if free, total, err := cb.DeviceMemory(); err == nil {
		note += fmt.Sprintf(", device %s of %s used", gib(total-free), gib(total))
	}
	return note
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// randomIDs is n prompts of P ids below vocab (never 0, the shapes' eos).
func randomIDs(n, P, vocab int, seed uint64) [][]int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([][]int32, n)
	for i := range out {
		out[i] = make([]int32, P)
		for t := range out[i] {
			out[i][t] = int32(1 + r.IntN(vocab-1))
		}
	}
	return out
}

// gpucheck decode -model DIR -backend B -batch 64,256 [-prompt 128] [-new 128] [-lora 32] [-graphs 8,64]
func runDecode(args []string) error {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	dir := fs.String("model", "", "model directory")
	backend := fs.String("backend", "cuda-bf16", "kernels backend")
	batches := fs.String("batch", "64,256", "batch sizes (sequences decoded at once)")
	P := fs.Int("prompt", 128, "prompt tokens")
	N := fs.Int("new", 128, "new tokens per sequence")
	lora := fs.Int("lora", 32, "LoRA rank of the (unmerged) adapters, as in GRPO rollouts; 0: none")
	out := fs.String("out", "", "summary JSON")
	ceil := fs.String("ceilings", "", "`gpucheck ceilings -save` output: state the rates against them")
	graphB := fs.String("graphs", "", "batch sizes of the eager-vs-graphs rows (graphs.go); empty: none")
	gP := fs.Int("graph-prompt", 128, "prompt tokens of the eager-vs-graphs rows")
	gN := fs.Int("graph-new", 64, "new tokens per sequence of the eager-vs-graphs rows")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bs, err := ints(*batches)
	if err != nil || *dir == "" {
		return firstErr(err, fmt.Errorf("usage: gpucheck decode -model DIR [-backend B] [-batch 64,256] [-graphs 8,64]"))
	}
	var gbs []int
	if *graphB != "" {
		if gbs, err = ints(*graphB); err != nil {
			return fmt.Errorf("-graphs: %w", err)
		}
		if *gP < 1 || *gN < 1 || *gP+*gN > *P+*N {
			return fmt.Errorf("-graph-prompt %d and -graph-new %d: want ≥ 1 each, together at most -prompt + -new = %d", *gP, *gN, *P+*N)
		}
	}
	be, cb, err := openBackend(*backend)
	if err != nil {
		return err
	}
	defer be.Close()
	o := model.Options{MaxLen: *P + *N}
	if *lora > 0 {
		o.LoRA = model.DefaultLoRA()
		o.LoRA.R, o.LoRA.Alpha = *lora, float64(2**lora)
	}
	t0 := time.Now()
	m, err := model.Open(*dir, be, o)
	if err != nil {
		return firstErr(err, writeRows(*out, Row{Check: "load checkpoint", Status: "FAIL", Detail: err.Error()}))
	}
	defer m.Close()
	if err := be.Sync(); err != nil {
		return err
	}
	load := time.Since(t0).Seconds()
	wb := weightBytes(m.Config)
	rows := []Row{{Check: "load checkpoint", Key: "load_s", Status: "ok", Value: fmt.Sprintf("%.1f s", load),
		Detail: fmt.Sprintf("%s: %s of bf16 weights from disk to %s, %.2f GB/s; %s", *dir, gib(int64(wb)), *backend, wb/load/1e9, memNote(cb))}}
	c := readCeilings(*ceil)
	var errs []error
	for _, B := range bs {
		row, err := decodeOnce(m, B, *P, *N, *backend)
		if err != nil {
			row = Row{Check: fmt.Sprintf("decode batch %d", B), Status: "FAIL", Detail: err.Error()}
			errs = append(errs, err)
		} else if c != nil {
			// every decode step reads every weight at least once
			rate, _ := strconv.ParseFloat(strings.Fields(row.Value)[0], 64)
			bw := wb * rate / float64(B)
			row.Detail += fmt.Sprintf("; weights read ≥ %.0f GB/s, %.0f%% of the copy ceiling", bw/1e9, 100*bw/c.CopyBytesPerS)
		}
		row.Key = fmt.Sprintf("decode_b%d_tok_s", B)
		row.Detail = strings.TrimPrefix(row.Detail+"; "+memNote(cb), "; ")
		rows = append(rows, row)
	}
	for _, B := range gbs {
		row, err := graphsRow(m, cb, *backend, B, *gP, *gN)
		if err != nil {
			if row.Check == "" {
				row = Row{Check: fmt.Sprintf("decode eager vs graphs, batch %d", B), Status: "FAIL", Detail: err.Error()}
			}
			errs = append(errs, err)
		}
		rows = append(rows, row)
	}
	return firstErr(firstErr(errs...), writeRows(*out, rows...))
}

func decodeOnce(m *model.Model, B, P, N int, backend string) (Row, error) {
	e, err := rollout.New(m, rollout.Options{Batch: B, MaxLen: P + N})
	if err != nil {
		return Row{}, err
	}
	defer e.Close()
	ps := make([]rollout.Prompt, B)
	for i, ids := range randomIDs(B, P, m.Config.VocabSize, uint64(B)) {
		ps[i] = rollout.Prompt{ID: fmt.Sprint(i), IDs: ids}
	}
	gs, err := e.Generate(context.Background(), ps, rollout.Params{G: 1, Temperature: 0.6, TopP: 0.95, MaxNewTokens: N, Seed: 1})
	if err != nil {
		return Row{}, err
	}
	st := e.Stats()
	if len(gs) != B || st.NewTokens != B*N {
		return Row{}, fmt.Errorf("batch %d: %d groups, %d new tokens (want %d)", B, len(gs), st.NewTokens, B*N)
	}
	// the prefill draws each sequence's first token; the rest are decode steps
	rate := float64(st.NewTokens-st.Samples) / st.Decode.Seconds()
	return Row{Check: fmt.Sprintf("decode batch %d", B), Status: "ok", Value: fmt.Sprintf("%.0f tokens/s", rate),
		Detail: fmt.Sprintf("%s, prompt %d + %d new, %d steps in %.2f s, prefill %.2f s", backend, P, N, st.DecodeSteps,
			st.Decode.Seconds(), st.Prefill.Seconds())}, nil
}

// weightBytes is the bf16 bytes of the model's weights: the projections of
// every layer, the embedding and (untied) LM head.
func weightBytes(c *model.Config) float64 {
	C, F, L, V := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.NumLayers), float64(c.VocabSize)
	hd, kv := float64(c.NumHeads*c.HeadDim), float64(c.NumKVHeads*c.HeadDim)
	return 2 * (L*(C*hd+2*C*kv+hd*C+3*C*F) + 2*V*C)
}

// flopsPerToken of a LoRA training step with frozen base weights: forward
// 2 FLOPs per matrix parameter, backward 2 more (the input gradient only;
// the LoRA weight gradients are negligible), and attention (QKᵀ and PV,
// 2·2·Hq·D per visible key, half the sequence on average) three times over
// (forward, and about twice that in backward).
func flopsPerToken(c *model.Config, T int) float64 {
	C, F, L, V := float64(c.HiddenSize), float64(c.IntermediateSize), float64(c.NumLayers), float64(c.VocabSize)
	hd := float64(c.NumHeads * c.HeadDim)
	kv := float64(c.NumKVHeads * c.HeadDim)
	mats := L*(C*hd+2*C*kv+hd*C+3*C*F) + V*C
	attn := L * 4 * hd * float64(T) / 2
	return 4*mats + 3*attn
}

// gpucheck sft -model DIR -backend B [-b 4] [-t 1024] [-steps 3] [-lora 32] [-peak-tflops 989]
func runSFT(args []string) error {
	fs := flag.NewFlagSet("sft", flag.ContinueOnError)
	dir := fs.String("model", "", "model directory")
	backend := fs.String("backend", "cuda-bf16", "kernels backend")
	B := fs.Int("b", 4, "sequences per step")
	Ts := fs.String("t", "1024,1536", "tokens per sequence, one row each (loss on the second half)")
	steps := fs.Int("steps", 3, "optimizer steps (the first builds the graph and is not timed)")
	lora := fs.Int("lora", 32, "LoRA rank on every linear layer")
	peak := fs.Float64("peak-tflops", 989, "the GPU's dense bf16 peak, for MFU (H100/H200 SXM: 989)")
	out := fs.String("out", "", "summary JSON")
	ceil := fs.String("ceilings", "", "`gpucheck ceilings -save` output: state MFU against the measured GEMM rate too")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ts, err := ints(*Ts)
	if err != nil || *dir == "" || *steps < 2 || *B < 1 {
		return firstErr(err, fmt.Errorf("usage: gpucheck sft -model DIR [-backend B] [-b 4] [-t 1024,1536] [-steps ≥ 2]"))
	}
	rows, err := sftBench(*dir, *backend, *B, ts, *steps, *lora, *peak, readCeilings(*ceil))
	return firstErr(err, writeRows(*out, rows...))
}

// sftBench opens the model once (for the longest T) and measures a LoRA
// step at each T; a T that fails is a FAIL row, and the rest still run.
func sftBench(dir, backend string, B int, ts []int, steps, lora int, peak float64, c *Ceilings) ([]Row, error) {
	fail := func(err error) ([]Row, error) {
		return []Row{{Check: fmt.Sprintf("LoRA SFT r=%d", lora), Status: "FAIL", Detail: err.Error()}}, err
	}
	be, cb, err := openBackend(backend)
	if err != nil {
		return fail(err)
	}
	defer be.Close()
	lo := model.DefaultLoRA()
	lo.R, lo.Alpha = lora, float64(2*lora)
	m, err := model.Open(dir, be, model.Options{LoRA: lo, MaxLen: slices.Max(ts)})
	if err != nil {
		return fail(err)
	}
	defer m.Close()
	opt, err := optim.NewAdamW(be, m.Trainable(), optim.AdamWConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01})
	if err != nil {
		return fail(err)
	}
	defer opt.Free()
	var rows []Row
	var errs []error
	for _, T := range ts {
		row, err := sftAt(m, be, cb, opt, backend, B, T, steps, lora, peak, c)
		if err != nil {
			row = Row{Check: fmt.Sprintf("LoRA SFT r=%d T=%d", lora, T), Status: "FAIL", Detail: err.Error()}
			errs = append(errs, err)
		}
		row.Key = fmt.Sprintf("sft_t%d_tok_s", T)
		rows = append(rows, row)
	}
	return rows, firstErr(errs...)
}

func sftAt(m *model.Model, be kernels.Backend, cb *cuda.Backend, opt *optim.AdamW, backend string, B, T, steps, lora int, peak float64, c *Ceilings) (Row, error) {
	if T < 2 {
		return Row{}, fmt.Errorf("T %d: want at least 2 tokens", T)
	}
	seqs := randomIDs(B, T, m.Config.VocabSize, 3)
	inv := float32(1) / float32(B*(T-T/2))
	grad := func(o *model.Outputs) (*model.Grads, error) {
		g := &model.Grads{LogProbs: make([][]float32, B)}
		for b := range g.LogProbs {
			g.LogProbs[b] = make([]float32, T)
			for t := T / 2; t < T; t++ {
				g.LogProbs[b][t] = -inv
			}
		}
		return g, nil
	}
	var times []float64
	for s := range steps {
		t0 := time.Now()
		m.ZeroGrad()
		if err := m.Step(seqs, grad); err != nil {
			return Row{}, fmt.Errorf("step %d: %w", s+1, err)
		}
		if _, err := optim.ClipGradNorm(be, m.Trainable(), 1); err != nil {
			return Row{}, err
		}
		if err := opt.Step(1e-4); err != nil {
			return Row{}, err
		}
		if err := be.Sync(); err != nil {
			return Row{}, err
		}
		if s > 0 {
			times = append(times, time.Since(t0).Seconds())
		}
	}
	slices.Sort(times)
	sec := times[len(times)/2]
	rate := float64(B*T) / sec
	fl := rate * flopsPerToken(m.Config, T)
	mfu := "MFU n/a on the emulator"
	if !strings.Contains(be.Name(), "emu") {
		mfu = fmt.Sprintf("MFU %.1f%% of the datasheet's %.0f TFLOP/s", 100*fl/(peak*1e12), peak)
	}
	if c != nil {
		mfu += fmt.Sprintf(", %.1f%% of the measured bf16 GEMM ceiling (%.0f TFLOP/s achieved)", 100*fl/c.GEMMFLOPsPerS, fl/1e12)
	}
	return Row{Check: fmt.Sprintf("LoRA SFT r=%d T=%d", lora, T), Status: "ok", Value: fmt.Sprintf("%.0f tokens/s", rate),
		Detail: fmt.Sprintf("%s, %d×%d tokens, %.3f s/step (median of %d), %s; %s", backend, B, T, sec, len(times), mfu, memNote(cb))}, nil
}
