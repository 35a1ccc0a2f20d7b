package main

// One GRPO step through the trainer, split by phase, and the activation
// memory of a training step against the memory plan's formula.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/kernels/cuda"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/reward"
	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
)

// letterReward scores a response by its share of letters: a random model's
// rollouts then get distinct rewards, so the step has advantages and
// gradients to compute (rm3 would give every one of them -1).
type letterReward struct{}

func (letterReward) Name() string { return "letters" }

func (letterReward) Score(_ context.Context, _ *data.Record, text string) (*reward.Result, error) {
	n := 0
	for _, r := range text {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return &reward.Result{Reward: float64(n) / float64(len(text)+1), Gate: "letters"}, nil
}

// tracked registers an alias of backend name whose factory keeps the
// opened CUDA backend, so that a run that opens its own backend (the
// trainer's Setup) can still be asked for its pool statistics.
func tracked(name string) (alias string, get func() *cuda.Backend) {
	var cb *cuda.Backend
	alias = "gpucheck-" + name
	kernels.Register(alias, func() (kernels.Backend, error) {
		be, err := kernels.Open(name)
		if err == nil {
			cb, _ = be.(*cuda.Backend)
		}
		return be, err
	})
	return alias, func() *cuda.Backend { return cb }
}

// gpucheck grpo -model DIR -backend B -run DIR [-g 8] [-new 512] [-prompts 2] [-lora 32]
func runGRPO(args []string) error {
	fs := flag.NewFlagSet("grpo", flag.ContinueOnError)
	dir := fs.String("model", "", "model directory")
	backend := fs.String("backend", "cuda-bf16", "kernels backend")
	run := fs.String("run", "", "run directory (created)")
	G := fs.Int("g", 8, "rollouts per prompt")
	N := fs.Int("new", 512, "new tokens per rollout (a random model rarely stops earlier)")
	P := fs.Int("prompts", 2, "prompts in the step (micro-batches of one group)")
	lora := fs.Int("lora", 32, "LoRA rank")
	base := fs.String("config", "configs/grpo-tiny.yaml", "config the step starts from")
	tok := fs.String("tokenizer", "trainer/testdata/sft/tiny", "tokenizer (the random model has none)")
	train := fs.String("data", "trainer/testdata/sft/train.jsonl", "prompts")
	out := fs.String("out", "", "summary JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *run == "" {
		return fmt.Errorf("usage: gpucheck grpo -model DIR -run DIR [-backend B] [-g 8] [-new 512]")
	}
	alias, get := tracked(*backend)
	sets := []string{"algo=grpo", "run.dir=" + *run, "model.path=" + *dir, "model.init=pretrained",
		"model.tokenizer=" + *tok, "model.backend=" + alias, fmt.Sprintf("model.max_len=%d", 512+*N),
		"data.train=" + *train, "data.val=", "checkpoint.best_metric=loss", "eval_every=0",
		fmt.Sprintf("rollout.g=%d", *G), fmt.Sprintf("rollout.max_new_tokens=%d", *N),
		"optim.batch_size=1", fmt.Sprintf("optim.grad_accum=%d", *P), "optim.max_steps=1",
		"ppo.epochs=1", fmt.Sprintf("ppo.mini_batch=%d", *P**G),
		fmt.Sprintf("lora.r=%d", *lora), fmt.Sprintf("lora.alpha=%d", 2**lora)}
	rows, err := grpoStep(*base, sets, get, *backend, *G, *N, *P)
	if err != nil {
		rows = []Row{{Check: "GRPO step", Status: "FAIL", Detail: err.Error()}}
	}
	return firstErr(err, writeRows(*out, rows...))
}

// grpoStep runs the step and returns its rows: the step by phase, max
// |ρ − 1| at the first mini-batch, and the device's peak memory.
func grpoStep(base string, sets []string, get func() *cuda.Backend, backend string, G, N, P int) ([]Row, error) {
	cfg, err := config.Load(base, sets)
	if err != nil {
		return nil, err
	}
	var log bytes.Buffer
	if _, err := trainer.GRPO(context.Background(), cfg, trainer.RLOptions{Log: &log, Reward: letterReward{}}); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, log.String())
	}
	recs, err := metrics.Read(filepath.Join(cfg.Run.Dir, metrics.File))
	if err != nil {
		return nil, err
	}
	var m metrics.Metrics
	for _, r := range recs {
		if r.Kind == "train" {
			m = r.Values
		}
	}
	if m == nil {
		return nil, fmt.Errorf("%s: no train line", cfg.Run.Dir)
	}
	old := "old log-probs: no separate pass in this step (no time_old_s)"
	if v, ok := m["time_old_s"]; ok {
		old = fmt.Sprintf("old log-probs %.2f s", v)
	}
	phases := fmt.Sprintf("rollout %.2f s (%.0f tok/s), reward %.3f s, reference %.2f s (%.0f tok/s), %s, train %.2f s (%.0f tok/s)",
		m["time_rollout_s"], m["rollout_tokens_per_s"], m["time_reward_s"], m["time_ref_s"], m["ref_tokens_per_s"], old,
		m["time_train_s"], m["train_tokens_per_s"])
	detail := fmt.Sprintf("%s, %d prompts × G=%d, mean response %.0f tokens; %s; first step (graphs built in it)",
		backend, P, G, m["resp_len"], phases)
	rows := []Row{{Check: fmt.Sprintf("GRPO step (G=%d, %d new)", G, N), Key: "grpo_step_s", Status: "ok",
		Value: fmt.Sprintf("%.2f s", m["time_step_s"]), Detail: detail}}
	// ρ − 1 at the first mini-batch: the rollout's log-probs against the
	// trainer's, before any update (exactly 0 on the CPU by construction)
	rho := Row{Check: "max |ρ − 1|, first mini-batch", Key: "ratio_dev_first"}
	if v, ok := m["ratio_dev_first"]; !ok {
		rho.Status, rho.Value, rho.Detail = "FAIL", "not measured", "no ratio_dev_first in the metrics"
	} else if v == 0 {
		rho.Status, rho.Value, rho.Detail = "ok", "0 (exactly)", "rollout and training log-probs agree bit for bit"
	} else {
		rho.Status, rho.Value = "note", fmt.Sprintf("%.3g", v)
		rho.Detail = "not 0: the rollout and training paths do not compute identical log-probs on this backend (0 on cpu)"
	}
	rows = append(rows, rho)
	mem := Row{Check: "peak device memory (GRPO step)", Key: "peak_mem_gib", Status: "ok", Value: "not measured", Detail: "no CUDA backend"}
	if cb := get(); cb != nil {
		s := cb.MemStats()
		mem.Value, mem.Detail = gib(s.DevicePeak), memNote(cb)
	}
	return append(rows, mem), nil
}

// planFloats is the memory plan's activation count per token and layer
// (kernels/cuda/doc.go): x, both norm outputs, attention output, residual
// (5C), q, k, v after RoPE, gate, up, silu·up (3F), the LoRA A·x of the
// seven projections (7r), lse and rstd.
func planFloats(c *model.Config, r int) int {
	C, F, kv := c.HiddenSize, c.IntermediateSize, c.NumKVHeads*c.HeadDim
	return 5*C + c.NumHeads*c.HeadDim + 2*kv + 3*F + 7*r + 2
}

// gpucheck memory -model DIR_A,DIR_B -backend B[,B...] [-b 4] [-t 64] [-lora 8]
//
// The pool's peak during one LoRA training step, above what the model
// held before it, per token, for two checkpoints of one shape that differ
// only in depth: the difference per layer is what each layer keeps for
// backward (the per-step transients, logits and gradients cancel), next to
// the plan's formula for the same shape. Every backend after the first is
// also given as a share of the first.
func runMemory(args []string) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	dirs := fs.String("model", "", "two model directories of different depth, shallower first")
	backends := fs.String("backend", "cuda-emu,cuda-emu-bf16", "backends to measure, f32 first")
	B := fs.Int("b", 4, "sequences")
	T := fs.Int("t", 64, "tokens per sequence")
	lora := fs.Int("lora", 8, "LoRA rank on every linear layer")
	out := fs.String("out", "", "summary JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ds := strings.Split(*dirs, ",")
	if len(ds) != 2 {
		return fmt.Errorf("usage: gpucheck memory -model DIR_A,DIR_B [-backend B,B] [-b 4] [-t 64]")
	}
	names := strings.Split(*backends, ",")
	var rows []Row
	var errs []error
	var first float64
	for i, name := range names {
		perLayer, note, err := layerBytes(ds, name, *B, *T, *lora)
		row := Row{Check: "activations per layer, " + name, Status: statusOf(err), Detail: note}
		switch {
		case err != nil:
			row.Detail = err.Error()
			errs = append(errs, err)
		case i == 0:
			first = perLayer
		case first > 0:
			row.Detail = fmt.Sprintf("%.0f%% of %s; %s", 100*perLayer/first, names[0], note)
		}
		row.Value = fmt.Sprintf("%.0f B/token", perLayer)
		rows = append(rows, row)
	}
	return firstErr(firstErr(errs...), writeRows(*out, rows...))
}

// layerBytes measures both checkpoints on backend and returns the pool
// bytes per token and layer.
func layerBytes(dirs []string, backend string, B, T, lora int) (float64, string, error) {
	var per [2]float64
	var cfg [2]*model.Config
	for i, d := range dirs {
		var err error
		if per[i], cfg[i], err = stepPeak(d, backend, B, T, lora); err != nil {
			return 0, "", err
		}
	}
	dl := cfg[1].NumLayers - cfg[0].NumLayers
	if dl <= 0 {
		return 0, "", fmt.Errorf("%s and %s: the second must be deeper", dirs[0], dirs[1])
	}
	perLayer := (per[1] - per[0]) / float64(dl)
	plan := float64(4 * planFloats(cfg[0], lora))
	return perLayer, fmt.Sprintf("L %d vs %d, %d×%d tokens, LoRA r=%d: %.0f and %.0f B/token in all; the plan's f32 formula %.0f B (%d floats), measured/plan %.2f",
		cfg[0].NumLayers, cfg[1].NumLayers, B, T, lora, per[0], per[1], plan, planFloats(cfg[0], lora), perLayer/plan), nil
}

// stepPeak is the pool's peak during one LoRA training step above what
// the model held before it, per token.
func stepPeak(dir, backend string, B, T, lora int) (float64, *model.Config, error) {
	be, cb, err := openBackend(backend)
	if err != nil {
		return 0, nil, err
	}
	defer be.Close()
	if cb == nil {
		return 0, nil, fmt.Errorf("%s has no pool statistics", backend)
	}
	lo := model.DefaultLoRA()
	lo.R, lo.Alpha, lo.Dropout = lora, float64(2*lora), 0
	m, err := model.Open(dir, be, model.Options{LoRA: lo, MaxLen: T})
	if err != nil {
		return 0, nil, err
	}
	defer m.Close()
	m.ZeroGrad()
	if err := be.Sync(); err != nil {
		return 0, nil, err
	}
	before := cb.MemStats().Peak
	err = m.Step(randomIDs(B, T, m.Config.VocabSize, 5), func(o *model.Outputs) (*model.Grads, error) {
		g := &model.Grads{LogProbs: make([][]float32, B)}
		for b := range g.LogProbs {
			g.LogProbs[b] = make([]float32, T)
			for t := 1; t < T; t++ {
				g.LogProbs[b][t] = -1 / float32(B*T)
			}
		}
		return g, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return float64(cb.MemStats().Peak-before) / float64(B*T), m.Config, nil
}
