package optim

import (
	"math"
	"testing"
)

// defaultSchedule is config.Default()'s schedule: cosine, lr 1e-4, 5% warm-up.
var defaultSchedule = ScheduleConfig{Kind: "cosine", LR: 1e-4, WarmupRatio: 0.05}

func TestScheduleHandNumbers(t *testing.T) {
	o := defaultSchedule
	o.LR, o.WarmupRatio, o.MinLRRatio = 1e-4, 0.1, 0
	cases := []struct {
		kind     string
		min      float64
		done     int
		wantFrac float64
	}{
		// total 20, W = ceil(0.1·20) = 2, decay over 18 steps.
		{"cosine", 0, 0, 0},   // first update: lr 0 (HF)
		{"cosine", 0, 1, 0.5}, // 1/2 through warm-up
		{"cosine", 0, 2, 1},   // peak
		{"cosine", 0, 11, 0.5},
		{"cosine", 0, 20, 0},
		{"cosine", 0, 25, 0},                                   // past the end: clamped
		{"cosine", 0, 5, 0.5 * (1 + math.Cos(math.Pi/6))},      // p = 3/18
		{"cosine", 0.1, 11, 0.1 + 0.9*0.5},                     // floor
		{"cosine", 0.1, 20, 0.1},                               // ends at the floor
		{"linear", 0, 11, 0.5},                                 // (20−11)/18
		{"linear", 0, 14, 1 - 12.0/18},                         // p = 12/18
		{"linear", 0.2, 20, 0.2},                               // floor
		{"constant", 0, 1, 0.5},                                // warm-up applies
		{"constant", 0, 19, 1},                                 //
		{"constant", 0.5, 19, 1},                               // no floor needed
		{"cosine", 0, 3, 0.5 * (1 + math.Cos(math.Pi/18))},     // p = 1/18
		{"linear", 0.5, 2, 1},                                  // peak
		{"linear", 0.5, 11, 0.5 + 0.5*0.5},                     //
		{"cosine", 0.5, 0, 0},                                  // warm-up starts at 0 regardless
		{"cosine", 0.5, 2, 1},                                  //
		{"linear", 0, 20, 0},                                   //
		{"constant", 0, 0, 0},                                  //
		{"constant", 0, 2, 1},                                  //
		{"cosine", 0, 19, 0.5 * (1 + math.Cos(math.Pi*17/18))}, //
	}
	for _, tc := range cases {
		o.Kind, o.MinLRRatio = tc.kind, tc.min
		s, err := NewSchedule(o, 20)
		if err != nil {
			t.Fatal(err)
		}
		if s.Warmup != 2 {
			t.Fatalf("warmup steps %d, want 2", s.Warmup)
		}
		if got := s.LR(tc.done); math.Abs(got-1e-4*tc.wantFrac) > 1e-15 {
			t.Errorf("%s min %v done %d: lr %v, want %v", tc.kind, tc.min, tc.done, got, 1e-4*tc.wantFrac)
		}
	}
}

func TestScheduleWarmupRounding(t *testing.T) {
	o := defaultSchedule
	for _, tc := range []struct {
		ratio float64
		total int
		want  int
	}{{0.05, 100, 5}, {0.07, 100, 7}, {0.05, 30, 2}, {0, 30, 0}, {0.05, 1, 1}, {1, 10, 10}} {
		o.WarmupRatio = tc.ratio
		s, err := NewSchedule(o, tc.total)
		if err != nil || s.Warmup != tc.want {
			t.Errorf("ratio %v of %d: warm-up %d (%v), want %d", tc.ratio, tc.total, s.Warmup, err, tc.want)
		}
	}
	// No warm-up: the first update runs at the full rate.
	o.WarmupRatio = 0
	s, _ := NewSchedule(o, 10)
	if s.Factor(0) != 1 {
		t.Errorf("factor(0) without warm-up = %v", s.Factor(0))
	}
	for _, bad := range []func(*ScheduleConfig){
		func(c *ScheduleConfig) { c.Kind = "step" },
		func(c *ScheduleConfig) { c.WarmupRatio = 1.5 },
		func(c *ScheduleConfig) { c.MinLRRatio = -0.1 },
	} {
		c := defaultSchedule
		bad(&c)
		if _, err := NewSchedule(c, 10); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	if _, err := NewSchedule(defaultSchedule, 0); err == nil {
		t.Error("accepted 0 total steps")
	}
}
