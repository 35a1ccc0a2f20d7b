package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/trainer"
)

// train sft --config F [--set k=v]... [--resume | --resume-from step-NNNNNN] [--debug-template]
//
// Supervised fine-tuning (docs/contracts.md §6, trainer/sft.go). Progress and
// messages go to stderr; the run directory (run.dir) receives config.yaml,
// metrics.jsonl, checkpoints/ and best/ (docs/contracts.md §7).
func init() {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "sft --config F [--set k=v]... [--debug-template] | --resume [--resume-from step-NNNNNN] --set run.dir=RUN [--allow-config-change KEY]...",
		Short: "LoRA (or full) supervised fine-tuning on the gold calls (docs/contracts.md §6)",
		Long: `Supervised fine-tuning of model.path on data.train: loss on the assistant
target tokens only, LoRA on every linear layer (lora.enabled: false trains
every weight; with model.init: random, from scratch), AdamW with a cosine
schedule, validation on data.val every eval_every steps (loss and the
TID/TSA/ACA/ALC/FCM rates from greedy generation), checkpoints in
run.dir/checkpoints and the best one in run.dir/best.

Kill it at any moment and continue with --resume: the continuation is
bit-identical to a run that never stopped.

` + resumeHelp + `

bin/train-mpi (make build-mpi) under mpirun or srun trains data-parallel,
one rank per process (README.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadRunConfig("sft", &f)
			if err != nil {
				return err
			}
			if f.debugTemplate {
				return printDebugTemplate(cmd, cfg)
			}
			rk, err := openRanks(cmd, cfg)
			if err != nil {
				return err
			}
			res, err := trainer.SFT(cmd.Context(), cfg, trainer.SFTOptions{Resume: f.resume, Log: rk.log, Comm: rk.comm, Backend: rk.be})
			if err != nil {
				return rk.close(err)
			}
			if res.Best != nil {
				fmt.Fprintf(rk.log, "sft: best validation %s %.4f in %s/best\n", cfg.Checkpoint.BestMetric, *res.Best, cfg.Run.Dir)
			}
			return rk.close(nil)
		},
	}
	addRunFlags(cmd, &f)
	root.AddCommand(cmd)
}
