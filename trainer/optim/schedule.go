package optim

// Learning-rate schedules, as Hugging Face Trainer / TRL compute them (so a
// user comparing against TRL sees the same curve). For the update taken
// after `done` completed updates (done = 0 is the first update), with
// W = ceil(warmup_ratio·total) warm-up steps and m = min_lr_ratio:
//
//	done < W:  factor = done / W                        (linear warm-up from 0)
//	else:      p = (done − W) / max(1, total − W)        (decay progress, clamped to [0,1])
//	  cosine:   factor = m + (1−m)·½·(1 + cos(π·p))
//	  linear:   factor = m + (1−m)·(1 − p)
//	  constant: factor = 1
//	lr = optim.lr · factor
//
// Departures from HF, written down: warm-up applies to every schedule
// (HF's "constant" has none; set warmup_ratio: 0 for that), and the linear
// schedule also honours min_lr_ratio, and W is rounded up after removing
// float noise (HF's ceil(0.07·100) is 8; here it is 7). As in HF, the first
// update of a warmed-up run uses lr = 0 (Adam's moments still see it).

import (
	"fmt"
	"math"
	"strings"
)

// ScheduleConfig holds the schedule's keys: optim.schedule, optim.lr,
// optim.warmup_ratio and optim.min_lr_ratio.
type ScheduleConfig struct {
	Kind                        string // cosine | linear | constant
	LR, WarmupRatio, MinLRRatio float64
}

// Schedule is a resolved learning-rate schedule. It is stored in
// trainer_state.json so a resumed run can check it continues the same curve.
type Schedule struct {
	Kind       string  `json:"kind"` // cosine | linear | constant
	BaseLR     float64 `json:"base_lr"`
	Total      int     `json:"total_steps"`
	Warmup     int     `json:"warmup_steps"`
	MinLRRatio float64 `json:"min_lr_ratio"`
}

// NewSchedule resolves the schedule of c for a run of total optimizer steps.
func NewSchedule(c ScheduleConfig, total int) (Schedule, error) {
	switch c.Kind {
	case "cosine", "linear", "constant":
	default:
		return Schedule{}, fmt.Errorf("key \"optim.schedule\": %q is not one of cosine, linear, constant", c.Kind)
	}
	if total < 1 {
		return Schedule{}, fmt.Errorf("schedule: total steps must be ≥ 1, got %d", total)
	}
	if !(c.WarmupRatio >= 0 && c.WarmupRatio <= 1) {
		return Schedule{}, fmt.Errorf("key \"optim.warmup_ratio\": must be in [0,1], got %v", c.WarmupRatio)
	}
	if !(c.MinLRRatio >= 0 && c.MinLRRatio <= 1) {
		return Schedule{}, fmt.Errorf("key \"optim.min_lr_ratio\": must be in [0,1], got %v", c.MinLRRatio)
	}
	// The small epsilon keeps 0.05·100 = 5.000000000000001 from becoming 6.
	w := int(math.Ceil(c.WarmupRatio*float64(total) - 1e-9))
	return Schedule{Kind: c.Kind, BaseLR: c.LR, Total: total, Warmup: w, MinLRRatio: c.MinLRRatio}, nil
}

// LR is the learning rate of the update taken after done completed updates.
func (s Schedule) LR(done int) float64 {
	return s.BaseLR * s.Factor(done)
}

// Factor is LR(done)/BaseLR.
func (s Schedule) Factor(done int) float64 {
	if done < s.Warmup {
		return float64(done) / float64(s.Warmup)
	}
	if s.Kind == "constant" {
		return 1
	}
	p := float64(done-s.Warmup) / float64(max(1, s.Total-s.Warmup))
	p = math.Min(1, math.Max(0, p))
	m := s.MinLRRatio
	if s.Kind == "linear" {
		return m + (1-m)*(1-p)
	}
	return m + (1-m)*0.5*(1+math.Cos(math.Pi*p))
}

// ScheduleChange names the fields that differ from old to new, as
// "total_steps 3 → 6, warmup_steps 0 → 1" ("" when none does).
func ScheduleChange(old, new Schedule) string {
	var parts []string
	add := func(name string, a, b any) {
		if a != b {
			parts = append(parts, fmt.Sprintf("%s %v → %v", name, a, b))
		}
	}
	add("kind", old.Kind, new.Kind)
	add("base_lr", old.BaseLR, new.BaseLR)
	add("total_steps", old.Total, new.Total)
	add("warmup_steps", old.Warmup, new.Warmup)
	add("min_lr_ratio", old.MinLRRatio, new.MinLRRatio)
	return strings.Join(parts, ", ")
}
