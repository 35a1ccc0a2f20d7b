package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/trainer"
	"github.com/argrl/argrl/trainer/ckpt"
	"github.com/argrl/argrl/trainer/config"
)

// train grpo --config F [--set k=v]... [--resume | --resume-from step-NNNNNN] [--debug-template]
//
// Group-relative policy optimization (docs/contracts.md §5, trainer/grpo.go).
// Progress and messages go to stderr; run.dir receives config.yaml,
// metrics.jsonl, checkpoints/ and best/ (docs/contracts.md §7).
func init() {
	root.AddCommand(rlCommand("grpo", "GRPO: G sampled responses per prompt, group-normalized rewards, β on argument tokens, KL to a reference",
		`GRPO on model.path (or on the SFT adapter init.adapter, merged or kept
trainable): each step samples optim.batch_size × optim.grad_accum prompts
of data.train, rolls out rollout.g responses each (T 0.6, top-p 0.95),
scores them with reward.name (rm1, rm2, rm3, decomposed, binary, r2if),
normalizes the rewards within each group (adv.norm_by_std: false for
Dr.GRPO), multiplies the advantage by token_weight.beta on the tokens of
argument values, and updates LoRA with the clipped surrogate plus kl.coef
times the KL (kl.estimator) to the reference, for ppo.epochs passes over
mini-batches of ppo.mini_batch rollouts. Validation every eval_every steps.

Kill it at any moment and continue with --resume: the continuation is
bit-identical to a run that never stopped.`, trainer.GRPO))
}

// rlCommand builds `train grpo` or `train ppo`.
func rlCommand(algo, short, long string, run func(context.Context, config.Config, trainer.RLOptions) (*trainer.RLResult, error)) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   algo + " --config F [--set k=v]... [--debug-template] | --resume [--resume-from step-NNNNNN] --set run.dir=RUN [--allow-config-change KEY]...",
		Short: short,
		Long:  long + "\n\n" + resumeHelp + "\n\nbin/train-mpi (make build-mpi) under mpirun or srun trains data-parallel,\none rank per process (README.md).",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRunConfig(algo, &f)
			if err != nil {
				return err
			}
			if err := cfg.ValidateRL(); err != nil {
				return err // it names the file and line, --set or ARGRL_ variable of each bad key
			}
			if f.debugTemplate {
				return printDebugTemplate(cmd, cfg)
			}
			rk, err := openRanks(cmd, cfg)
			if err != nil {
				return err
			}
			res, err := run(cmd.Context(), cfg, trainer.RLOptions{Resume: f.resume, Log: rk.log, Comm: rk.comm, Backend: rk.be})
			if err != nil {
				return rk.close(err)
			}
			if res.Checkpoint == "" { // resumed at its last step: nothing left to train
				fmt.Fprintf(rk.log, "%s: the run is complete: nothing left to train; its last checkpoint is %s (to train further: --resume --set optim.max_steps=N)\n",
					algo, resumedCheckpoint(cfg))
			} else {
				fmt.Fprintf(rk.log, "%s: done: %d steps; last checkpoint %s\n", algo, res.Steps, res.Checkpoint)
			}
			if res.Best != nil {
				fmt.Fprintf(rk.log, "%s: best validation %s %.4f in %s/best\n", algo, cfg.Checkpoint.BestMetric, *res.Best, cfg.Run.Dir)
			}
			return rk.close(nil)
		},
	}
	addRunFlags(cmd, &f)
	return cmd
}

// resumedCheckpoint is the directory of the checkpoint a resumed run
// continued: checkpoint.resume_from, else the one RUN/checkpoints/latest
// names.
func resumedCheckpoint(cfg config.Config) string {
	dir := filepath.Join(cfg.Run.Dir, ckpt.CheckpointsDir)
	name := cfg.Checkpoint.ResumeFrom
	if name == "" {
		b, err := os.ReadFile(filepath.Join(dir, ckpt.LatestFile))
		if err != nil {
			return dir + " (" + err.Error() + ")"
		}
		name = strings.TrimSpace(string(b))
	}
	return filepath.Join(dir, name)
}
