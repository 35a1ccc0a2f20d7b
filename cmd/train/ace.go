package main

import (
	"context"
	"fmt"
	"io"

	"github.com/argrl/argrl/data"
	"github.com/argrl/argrl/reward"
)

// aceEval is `train eval --metric ace`: R2IF's ACE over the evaluated
// responses, from the same student the r2if reward uses. A nil *aceEval
// (no --metric ace) does nothing.
type aceEval struct {
	ace *reward.ACE
	st  *lazyStudent
	k   int
}

// openACE checks --metric and the student flags, then loads the student,
// before anything is generated or scored.
func openACE(f *evalFlags) (*aceEval, error) {
	switch f.metric {
	case "":
		if f.student != (studentFlags{}) {
			return nil, fmt.Errorf("--student is only used by --metric ace")
		}
		return nil, nil
	case "ace":
	default:
		return nil, fmt.Errorf("--metric %q: the one metric beyond the table is ace", f.metric)
	}
	if f.student.path == "" {
		return nil, fmt.Errorf("--metric ace needs the CER student: --student DIR (as reward.student.path)")
	}
	cfg := f.reward
	st := &lazyStudent{}
	cfg.Student = st
	a, err := reward.NewACE(cfg)
	if err != nil {
		return nil, err
	}
	stu := f.student
	stu.backend = f.gen.backend
	if stu.backend == "" {
		stu.backend = "auto"
	}
	if err := st.open(stu, cfg.Format, cfg.RejectString); err != nil {
		return nil, err
	}
	return &aceEval{ace: a, st: st, k: cfg.R2IF.K}, nil
}

func (a *aceEval) add(ctx context.Context, rec *data.Record, text string) error {
	if a == nil {
		return nil
	}
	if err := a.ace.Add(ctx, rec, text); err != nil {
		return fmt.Errorf("ace: %s: %w", rec.ID, err)
	}
	return nil
}

// report prints ACE ± its standard error and returns it.
func (a *aceEval) report(w io.Writer) reward.ACEReport {
	r := a.ace.Report()
	fmt.Fprintf(w, "ACE %.4f ± %.4f (standard error; %d records, %d without reasoning; K = %d student responses each)\n", r.ACE, r.SE, r.N, r.Empty, a.k)
	return r
}

func (a *aceEval) close() {
	if a != nil {
		a.st.close()
	}
}
