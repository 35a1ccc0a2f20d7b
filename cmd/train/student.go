package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/data/format"
	"github.com/argrl/argrl/kernels"
	"github.com/argrl/argrl/trainer/config"
	"github.com/argrl/argrl/trainer/rl"
)

// studentFlags give `train reward --reward r2if` its CER student, as the
// reward.student keys give it to a training run.
type studentFlags struct {
	path, adapter, tokenizer, template, backend string
}

func addStudentFlags(c *cobra.Command, f *studentFlags) {
	addStudentModelFlags(c, f)
	c.Flags().StringVar(&f.backend, "backend", config.Default().Model.Backend, "compute backend of the r2if student")
}

// addStudentModelFlags adds the student's model flags alone (a command
// with a --backend of its own shares it with the student).
func addStudentModelFlags(c *cobra.Command, f *studentFlags) {
	fl := c.Flags()
	fl.StringVar(&f.path, "student", "", "r2if: the CER student's model directory (reward.student.path)")
	fl.StringVar(&f.adapter, "student-adapter", "", "r2if: a PEFT adapter for the student (reward.student.adapter)")
	fl.StringVar(&f.tokenizer, "student-tokenizer", "", "r2if: the student's tokenizer (reward.student.tokenizer; default: --student)")
	fl.StringVar(&f.template, "student-template", "", "r2if: the student's chat template (reward.student.template; default: its model family)")
}

// lazyStudent stands in for the student while reward.Get validates the
// reward (format, weights), so that bad flags are refused before the model
// loads; open then loads it, before anything is scored.
type lazyStudent struct{ st *rl.Student }

// Complete implements reward.Student.
func (l *lazyStudent) Complete(ctx context.Context, rec *data.Record, reasoning string, k int) ([]string, error) {
	if l.st == nil {
		return nil, errors.New("the student model is not open")
	}
	return l.st.Complete(ctx, rec, reasoning, k)
}

// open loads the student of f; it completes responses in formatName with
// the rollout defaults (temperature, top-p, max_new_tokens) and run seed 1.
func (l *lazyStudent) open(f studentFlags, formatName, rejectString string) error {
	cfg := config.Default()
	cfg.Model.MaxLen = 0 // the student's own context
	cfg.Reward.Student = config.StudentConfig{Path: f.path, Adapter: f.adapter, Tokenizer: f.tokenizer, Template: f.template}
	fm, err := format.Get(formatName, format.Options{RejectString: rejectString})
	if err != nil {
		return err
	}
	be, err := kernels.Open(f.backend)
	if err != nil {
		return err
	}
	if l.st, err = rl.OpenStudent(cfg, be, fm); err != nil {
		return fmt.Errorf("r2if student (--student %s): %w", f.path, err)
	}
	return nil
}

func (l *lazyStudent) close() { l.st.Close() }
