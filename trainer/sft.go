package trainer

// SFT: supervised fine-tuning on the gold calls (docs/contracts.md §6), the warm
// start before RL (paper 000 §4.4) and paper 001's strongest in-distribution
// baseline. `train sft --config configs/sft.yaml` runs it. It reads top to
// bottom: setup and resume, the train loop (the step inline; logging,
// evaluation and checkpoints through the scaffold, run.go), the end.
//
// What it implements:
//   - loss only on the assistant target tokens (the chat template's
//     AssistantMask: the gold calls in the output format and the end-of-turn
//     token);
//   - LoRA on every linear layer, W x + (α/r)·B A x, A Kaiming-uniform, B = 0,
//     dropout on the LoRA input; r = 32, α = 64, dropout 0.05 (paper 001);
//     lora.enabled: false trains every weight instead (full fine-tuning, the
//     LoRA-vs-full ablation; with model.init: random, a model from scratch);
//   - AdamW with decoupled weight decay (norms and biases excluded), lr 1e-4,
//     cosine schedule with 5% linear warm-up, global grad-norm clip 1.0;
//   - length-bucketed batches of optim.batch_size sequences, optim.grad_accum
//     micro-batches per optimizer step, optim.epochs (2) or optim.max_steps;
//   - validation every eval_every steps and at the end: loss, and the
//     docs/contracts.md §3 rates from greedy generation; RUN/best holds the
//     checkpoint with the best checkpoint.best_metric (fcm);
//   - checkpoints every checkpoint.every steps, at the end and at each new
//     best (docs/contracts.md §7); --resume continues bit-identically (data order,
//     dropout masks, optimizer moments, schedule).
//
// Loss normalization. The loss of an optimizer step is the mean over every
// assistant token of the step's records, whichever micro-batch holds them:
//
//	L = −Σ_{micro-batches} Σ_{b,t: mask} log p(x_{b,t} | x_{b,<t}) / N,  N = Σ_{step} mask
//
// so each target token's gradient is −1/N, and 8 sequences in one
// micro-batch give the same update as 8 micro-batches of one (TRL's
// average_tokens_across_devices behaviour, not a mean of micro-batch means).
//
// Data parallel (trainer/ranks): the step's micro-batches run through
// ranks.Accumulate with the step's global N (every process knows every
// record of the step), which sums the gradients before the clip; the
// logged loss adds the NLL sums it returns, in order.
//
// Where it departs from the papers: paper 001 trains with TRL's defaults,
// where the loss is a mean per micro-batch averaged over accumulation steps;
// here it is the per-step token mean above. The first warmed-up update has
// lr = 0, as in Hugging Face's scheduler.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/argrl/argrl/dist"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/model"
	"github.com/argrl/argrl/trainer/batch"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/metrics"
	"github.com/argrl/argrl/trainer/optim"
	"github.com/argrl/argrl/trainer/ranks"
)

// SFTOptions are the command line's (and tests') additions to the config.
type SFTOptions struct {
	Resume bool      // continue from checkpoint.resume_from or RUN/checkpoints/latest
	Log    io.Writer // progress line and messages (nil: os.Stderr)
	// AfterBackward (tests) sees the model and the step's metrics after the
	// backward pass, before the NaN guard and the optimizer step.
	AfterBackward func(s *Setup, step int, m metrics.Metrics)
	// Comm is this process's rank of a data-parallel run (nil: one
	// process), Backend the one opened for it (nil: model.backend's).
	Comm    dist.Comm
	Backend kernels.Backend
}

// SFTResult summarizes a finished run.
type SFTResult struct {
	Steps      int     // optimizer steps done
	Loss       float64 // training loss of the last step
	Checkpoint string  // the final checkpoint's directory
	Best       *float64
}

// SFT runs supervised fine-tuning as cfg describes.
func SFT(ctx context.Context, cfg config.Config, o SFTOptions) (*SFTResult, error) {
	res, err := sft(ctx, cfg, o)
	return res, finish(o.Comm, err)
}

func sft(ctx context.Context, cfg config.Config, o SFTOptions) (_ *SFTResult, err error) {
	log := o.Log
	if log == nil {
		log = os.Stderr
	}

	// ---- setup: run directory (locked), data, model, optimizer, batches,
	// schedule; resume.
	run, err := ClaimRun(cfg, RunOptions{Name: "sft", Resume: o.Resume, Log: log, Comm: o.Comm, Inputs: true})
	if err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	defer func() { err = withClose(err, run.Close()) }()
	s, err := NewSetup(cfg, SetupOptions{Log: log, Ranks: run.Ranks(), Backend: o.Backend})
	if err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	defer s.Close()
	if err := run.Prepare(s, s.Train.Lengths()); err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	if err := run.Resume(); err != nil {
		return nil, fmt.Errorf("sft: %w", err)
	}
	train := s.Train.Examples
	fmt.Fprintf(log, "sft: %d training examples, %d steps (%d per epoch, %d×%d sequences per step), %s, %d trainable tensors\n",
		len(train), run.Total, run.Batches.StepsPerEpoch(), cfg.Optim.BatchSize, cfg.Optim.GradAccum, modeName(cfg), len(run.Opt.Params()))
	if s.Val != nil {
		fmt.Fprintf(log, "sft: validation on %s %s\n", s.Val.Path, evalSchedule(cfg.EvalEvery))
	}
	res := &SFTResult{Steps: run.Done}
	evaluate := func(ctx context.Context, step int) (metrics.Metrics, error) {
		e, _, _, err := s.Evaluate(ctx, s.Val, EvalOptions{Max: cfg.Data.ValMax, Generate: true})
		if _, scored := e["tid"]; err == nil && !scored {
			run.Progress.Printf("eval step %d: loss %.4f (plain chat: no call metrics)", step, e["loss"])
		} else if err == nil {
			run.Progress.Printf("eval step %d: loss %.4f  TID %.3f TSA %.3f ACA %.3f ALC %.3f FCM %.3f", step,
				e["loss"], e["tid"], e["tsa"], e["aca"], e["alc"], e["fcm"])
		}
		return e, err
	}

	// ---- train.
	for step := run.Done + 1; step <= run.Total; step++ {
		sb, err := run.Next(ctx, step)
		if err != nil {
			return res, fmt.Errorf("sft: %w", err)
		}
		t0 := time.Now()
		loss, tokens, err := sftStep(run.Ranks(), s, run.Opt.Params(), train, sb)
		if err != nil {
			return res, fmt.Errorf("sft: step %d: %w", step, err)
		}
		norm, err := optim.ClipGradNorm(s.Backend, run.Opt.Params(), cfg.Optim.GradClip)
		if err != nil {
			return res, fmt.Errorf("sft: step %d: %w", step, err)
		}
		lr := run.Sched.LR(step - 1)
		m := metrics.Metrics{"loss": loss, "grad_norm": norm, "lr": lr}
		if o.AfterBackward != nil {
			o.AfterBackward(s, step, m)
		}
		if err := run.CheckFinite(step, m, "loss", "grad_norm"); err != nil {
			return res, fmt.Errorf("sft: %w", err)
		}
		if err := run.Opt.Step(lr); err != nil {
			return res, fmt.Errorf("sft: step %d: %w", step, err)
		}
		run.TokensSeen += int64(tokens)
		dt := time.Since(t0).Seconds()
		m["tokens_per_s"], m["time_step_s"] = float64(tokens)/dt, dt
		res.Steps, res.Loss = step, loss

		// ---- log, evaluate, checkpoint.
		err = run.EndStep(ctx, step, sb, m, tokens, evaluate)
		res.Checkpoint = run.Saved
		if err != nil {
			return res, fmt.Errorf("sft: %w", err)
		}
	}
	res.Best = run.Best()
	if res.Checkpoint == "" { // resumed at the end: nothing left to train
		res.Checkpoint = run.Resumed.Dir
		run.Progress.Printf("sft: the run is complete (step %d of %d); nothing to do", run.Done, run.Total)
		return res, nil
	}
	run.Progress.Printf("sft: done: %d steps; final checkpoint %s", res.Steps, res.Checkpoint)
	return res, nil
}

// sftStep runs forward and backward over the step's micro-batches and
// leaves ∂L/∂W in params' G, with L the step's token-mean NLL (file
// header). It returns L and the number of tokens of the step.
func sftStep(rk *ranks.Team, s *Setup, params []*model.Param, exs []Example, sb batch.StepBatch) (float64, int, error) {
	recs := sb.Records()
	n, tokens := 0, 0
	for _, i := range recs {
		n += exs[i].Targets
		tokens += len(exs[i].IDs)
	}
	if n == 0 {
		return 0, 0, errors.New("no target tokens in the step (an encoding bug)")
	}
	inv := 1 / float64(n)
	m := s.Model
	B := s.Config.Optim.BatchSize
	base := m.DropoutCounter()
	nlls, batches, err := ranks.Accumulate(rk, s.Backend, params, rk.Deal(len(recs), B), B, func(b ranks.Batch, nll *float64) error {
		seqs := make([][]int32, len(b.At))
		for i, at := range b.At {
			seqs[i] = exs[recs[at]].IDs
		}
		m.SetDropoutCounter(base + uint64(b.Index))
		return m.Step(seqs, func(o *model.Outputs) (*model.Grads, error) {
			g := &model.Grads{LogProbs: make([][]float32, len(b.At))}
			for i, at := range b.At {
				ex := &exs[recs[at]]
				row := make([]float32, len(ex.IDs))
				for t := 1; t < len(ex.IDs); t++ {
					if ex.Mask[t] {
						*nll -= float64(o.LogProbs[i][t])
						row[t] = float32(-inv)
					}
				}
				g.LogProbs[i] = row
			}
			return g, nil
		})
	})
	m.SetDropoutCounter(base + uint64(batches))
	if err != nil {
		return 0, 0, err
	}
	var sum float64
	for _, v := range nlls {
		sum += v
	}
	return sum * inv, tokens, nil
}

// evalSchedule says when validation runs: "every 50 steps and at the
// end", or with eval_every 0 (or less) "at the end".
func evalSchedule(every int) string {
	if every <= 0 {
		return "at the end"
	}
	if every == 1 {
		return "after every step"
	}
	return fmt.Sprintf("every %d steps and at the end", every)
}

func modeName(cfg config.Config) string {
	if cfg.LoRA.Enabled {
		return fmt.Sprintf("LoRA r=%d α=%g dropout %g on %v", cfg.LoRA.R, cfg.LoRA.Alpha, cfg.LoRA.Dropout, cfg.LoRA.Targets)
	}
	if cfg.Model.Init == "random" {
		return "full fine-tuning from random initialization"
	}
	return "full fine-tuning"
}
