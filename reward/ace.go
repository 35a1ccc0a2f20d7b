package reward

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/argrl/argrl/data"
)

// ACE is R2IF's average CoT effectiveness (papers 002/003): the mean over
// an evaluation set of the CER reward, v(R|Q,T) − v_base(Q,T), where v is
// the fraction of the student's K responses that are exactly correct when
// it continues after the evaluated model's reasoning R, and v_base the
// same fraction when it reasons itself (both as the r2if reward computes
// them; a response without reasoning has CER 0 and still counts). Add one
// response per record, then Report.
type ACE struct {
	r    *r2if
	vals []float64
	none int // responses without reasoning
}

// ACEReport is ACE with its standard error (the sample standard deviation
// of the per-record CER over √n), n the records, Empty those whose
// response had no reasoning.
type ACEReport struct {
	ACE   float64 `json:"ace"`
	SE    float64 `json:"ace_se"`
	N     int     `json:"n"`
	Empty int     `json:"empty_reasoning"`
}

// NewACE checks c as the r2if reward does (format reason_tool, a student,
// r2if.k > 0) and returns an empty ACE. Only the CER part of r2if is used;
// its weights are ignored.
func NewACE(c Config) (*ACE, error) {
	if c.Student == nil {
		return nil, fmt.Errorf("ace: needs the CER student model (--student DIR, or reward.student in the config)")
	}
	c.R2IF.WCER = 1
	s, err := NewScorer(c)
	if err != nil {
		return nil, fmt.Errorf("ace: %w", err)
	}
	r, err := newR2IF(c, s)
	if err != nil {
		return nil, fmt.Errorf("ace: %w", err)
	}
	return &ACE{r: r.(*r2if)}, nil
}

// Add scores one response to rec: its reasoning's CER.
func (a *ACE) Add(ctx context.Context, rec *data.Record, text string) error {
	o, err := a.r.s.Score(ctx, rec, text)
	if err != nil {
		return err
	}
	if strings.TrimSpace(o.Parsed.Reasoning) == "" {
		a.none++
	}
	v, err := a.r.cer(ctx, rec, o.Parsed.Reasoning)
	if err != nil {
		return err
	}
	a.vals = append(a.vals, v)
	return nil
}

// Report is the mean CER and its standard error (0 with fewer than two
// records).
func (a *ACE) Report() ACEReport {
	n := len(a.vals)
	rep := ACEReport{N: n, Empty: a.none}
	if n == 0 {
		return rep
	}
	var sum float64
	for _, v := range a.vals {
		sum += v
	}
	rep.ACE = sum / float64(n)
	if n > 1 {
		var ss float64
		for _, v := range a.vals {
			ss += (v - rep.ACE) * (v - rep.ACE)
		}
		rep.SE = math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	}
	return rep
}
